//! One benchmark client's connection on the engine's own wire path ([`crate::engine::pgwire`]):
//! prepared statements, and sending one SQL command of a script under the chosen protocol.
//! Parameters go as text with server-inferred types and results come back as text, as
//! pgbench's libpq sends and receives them.

use crate::engine::pgwire::request::{Template, read_reply, simple};
use crate::engine::pgwire::{Conn, SqlError, startup};
use crate::engine::plan::Plan;
use crate::error::WorkerError;
use blocklab_script::builtin::Protocol;
use blocklab_script::parse::Command;
use blocklab_script::sql::SqlCommand;
use blocklab_script::vars::Variables;
use postgres_protocol::message::backend::Message;
use postgres_protocol::message::frontend;

pub use crate::engine::pgwire::request::ResultRows;

/// How one SQL step of a script goes out (extended and prepared protocols).
struct StepFrames {
    template: Template,
    /// The prepared statement's columns (its description at prepare time).
    columns: Option<Vec<String>>,
}

/// A connected client.
pub struct Session {
    conn: Conn,
    /// Per script, per step: the frames of each SQL step (extended, prepared).
    frames: Vec<Vec<Option<StepFrames>>>,
    prepared: bool,
    scratch: String,
}

impl Session {
    /// Connects and, under the prepared protocol, prepares every script's statements. Both
    /// run on the load thread's executor ([`crate::engine::executor`]).
    pub async fn open(plan: &Plan) -> Result<Session, WorkerError> {
        let mut s = Session::connect(plan).await?;
        s.prepare(plan).await;
        Ok(s)
    }

    /// Connects only (the connection time `-C` counts apart from the latency).
    pub async fn connect(plan: &Plan) -> Result<Session, WorkerError> {
        let conn =
            startup::connect_polled(&plan.target)
                .await
                .map_err(|e| WorkerError::Connect {
                    target: plan.target.display.clone(),
                    reason: e.to_string(),
                })?;
        let mut frames = Vec::with_capacity(plan.scripts.scripts.len());
        if plan.protocol == Protocol::Extended {
            for s in &plan.scripts.scripts {
                let mut per = Vec::with_capacity(s.script.steps.len());
                for step in &s.script.steps {
                    per.push(match &step.command {
                        Command::Sql(cmd) => unnamed(cmd),
                        _ => None,
                    });
                }
                frames.push(per);
            }
        }
        Ok(Session {
            conn,
            frames,
            prepared: false,
            scratch: String::new(),
        })
    }

    /// Prepares the scripts' SQL commands (prepared protocol only). A statement that
    /// does not prepare is sent unprepared: running it parses it again and fails with the
    /// server's error, as pgbench's PQsendQueryPrepared does.
    pub async fn prepare(&mut self, plan: &Plan) {
        if plan.protocol != Protocol::Prepared || self.prepared {
            return;
        }
        self.prepared = true;
        for (si, s) in plan.scripts.scripts.iter().enumerate() {
            let mut per = Vec::with_capacity(s.script.steps.len());
            for (pc, step) in s.script.steps.iter().enumerate() {
                per.push(match &step.command {
                    Command::Sql(cmd) => match self.prepare_one(&format!("P{si}_{pc}"), cmd).await
                    {
                        Ok(f) => Some(f),
                        Err(e) => {
                            tracing::debug!(statement = %cmd.first_line, error = %e, "prepare failed");
                            unnamed(cmd)
                        }
                    },
                    _ => None,
                });
            }
            self.frames.push(per);
        }
    }

    async fn prepare_one(&mut self, name: &str, cmd: &SqlCommand) -> Result<StepFrames, SqlError> {
        let out = &mut self.conn.out;
        let bad = |e: std::io::Error| SqlError::Connection(format!("cannot encode a request: {e}"));
        frontend::parse(name, &cmd.param_sql, std::iter::empty(), out).map_err(bad)?;
        frontend::describe(b'S', name, out).map_err(bad)?;
        frontend::sync(out);
        self.conn.flush().await?;
        let mut columns = Vec::new();
        let mut first = None;
        loop {
            match self.conn.next().await? {
                Message::ReadyForQuery(_) => break,
                Message::ErrorResponse(b) => {
                    first.get_or_insert(SqlError::from_fields(b.fields()));
                }
                Message::RowDescription(b) => {
                    columns = crate::engine::pgwire::request::column_names(&b);
                }
                _ => {}
            }
        }
        if let Some(e) = first {
            return Err(e);
        }
        Ok(StepFrames {
            template: Template::prepared(name, cmd.params.len())?,
            columns: Some(columns),
        })
    }

    pub fn is_broken(&self) -> bool {
        self.conn.is_broken()
    }

    /// Closes the connection after sending Terminate.
    pub async fn close(self) {
        self.conn.close().await;
    }

    pub async fn rollback(&mut self) {
        if !self.conn.is_broken()
            && simple("ROLLBACK", &mut self.conn.out).is_ok()
            && self.conn.flush().await.is_ok()
        {
            let _ = read_reply(&mut self.conn, None, None).await;
        }
    }

    /// Queues SQL step `step` of script `script` with the current variable values; it goes
    /// out with the next [`Session::flush`].
    pub fn send(
        &mut self,
        protocol: Protocol,
        (script, step): (usize, usize),
        cmd: &SqlCommand,
        vars: &Variables,
    ) -> Result<(), SqlError> {
        if protocol == Protocol::Simple {
            self.scratch.clear();
            cmd.interpolate(vars, &mut self.scratch);
            return simple(&self.scratch, &mut self.conn.out);
        }
        let f = self
            .frames
            .get(script)
            .and_then(|p| p.get(step))
            .and_then(Option::as_ref)
            .ok_or_else(|| SqlError::Connection("the command has no frames".into()))?;
        f.template
            .encode(&cmd.params, vars, &mut self.scratch, &mut self.conn.out);
        Ok(())
    }

    /// Forgets commands queued and not sent (a transaction that ended inside a pipeline).
    pub fn discard_unsent(&mut self) {
        self.conn.out.clear();
    }

    /// Sends what was queued.
    pub async fn flush(&mut self) -> Result<(), SqlError> {
        self.conn.flush().await
    }

    /// Reads the reply of the oldest command sent; its rows if `want_rows`.
    pub async fn receive(
        &mut self,
        (script, step): (usize, usize),
        want_rows: bool,
    ) -> Result<Option<ResultRows>, SqlError> {
        if !want_rows {
            return read_reply(&mut self.conn, None, None).await.map(|()| None);
        }
        let columns = self
            .frames
            .get(script)
            .and_then(|p| p.get(step))
            .and_then(Option::as_ref)
            .and_then(|f| f.columns.as_deref());
        let mut rows = ResultRows::default();
        read_reply(&mut self.conn, Some(&mut rows), columns).await?;
        Ok(Some(rows))
    }

    /// Sends SQL step `step` of script `script` and reads its reply.
    pub async fn sql(
        &mut self,
        protocol: Protocol,
        at: (usize, usize),
        cmd: &SqlCommand,
        vars: &Variables,
    ) -> Result<Option<ResultRows>, SqlError> {
        self.send(protocol, at, cmd, vars)?;
        self.flush().await?;
        self.receive(at, cmd.result_set.is_some()).await
    }
}

fn unnamed(cmd: &SqlCommand) -> Option<StepFrames> {
    match Template::unnamed(&cmd.param_sql, cmd.params.len()) {
        Ok(template) => Some(StepFrames {
            template,
            columns: None,
        }),
        Err(e) => {
            tracing::debug!(statement = %cmd.first_line, error = %e, "cannot encode the command");
            None
        }
    }
}
