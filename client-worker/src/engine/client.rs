//! One benchmark client's connection: prepared statements and sending one SQL command of
//! a script under the chosen protocol. Parameters go as text with server-inferred types,
//! as pgbench sends them; `\gset` results come back as text.

use std::error::Error as StdError;
use std::future::Future;

use futures::TryStreamExt;
use tokio::task::JoinHandle;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::{Format, FromSql, IsNull, ToSql, Type, to_sql_checked};
use tokio_postgres::{Client, SimpleQueryMessage, Statement};

use crate::engine::plan::Plan;
use crate::error::WorkerError;
use blocklab_script::builtin::Protocol;
use blocklab_script::parse::Command;
use blocklab_script::sql::SqlCommand;
use blocklab_script::vars::Variables;

/// A parameter sent in text format, whatever type the server inferred.
#[derive(Debug)]
struct TextParam<'a>(Option<&'a str>);

impl ToSql for TextParam<'_> {
    fn to_sql(
        &self,
        _ty: &Type,
        out: &mut tokio_postgres::types::private::BytesMut,
    ) -> Result<IsNull, Box<dyn StdError + Sync + Send>> {
        match self.0 {
            None => Ok(IsNull::Yes),
            Some(s) => {
                out.extend_from_slice(s.as_bytes());
                Ok(IsNull::No)
            }
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    fn encode_format(&self, _ty: &Type) -> Format {
        Format::Text
    }

    to_sql_checked!();
}

/// A column value in binary form, turned into text for `\gset`.
struct Raw(Option<String>);

impl<'a> FromSql<'a> for Raw {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn StdError + Sync + Send>> {
        crate::engine::decode::binary_to_text(ty, raw).map(|s| Raw(Some(s)))
    }

    fn from_sql_null(_: &Type) -> Result<Self, Box<dyn StdError + Sync + Send>> {
        Ok(Raw(None))
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

/// The rows of a command with `\gset`/`\aset`: column names and text values.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ResultRows {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Option<String>>>,
}

/// Whether a failed command may be retried (serialization failure or deadlock).
pub fn is_retryable(e: &tokio_postgres::Error) -> bool {
    e.code().is_some_and(|c| {
        *c == SqlState::T_R_SERIALIZATION_FAILURE || *c == SqlState::T_R_DEADLOCK_DETECTED
    })
}

/// A connected client.
pub struct Session {
    pub client: Client,
    conn_task: JoinHandle<()>,
    /// Per script, per step: the prepared statement of each SQL step (prepared protocol).
    prepared: Vec<Vec<Option<Statement>>>,
}

impl Session {
    /// Connects and, under the prepared protocol, prepares every script's statements.
    pub async fn open(plan: &Plan) -> Result<Session, WorkerError> {
        let mut s = Session::connect(plan).await?;
        s.prepare(plan).await;
        Ok(s)
    }

    /// Connects only (the connection time `-C` counts apart from the latency).
    pub async fn connect(plan: &Plan) -> Result<Session, WorkerError> {
        let (client, conn_task) = plan.target.connect().await?;
        Ok(Session {
            client,
            conn_task,
            prepared: Vec::new(),
        })
    }

    /// Prepares the scripts' SQL commands (prepared protocol only). A statement that
    /// does not prepare is left out: running it prepares it again and fails with the
    /// server's error, as pgbench's PQsendQueryPrepared does.
    pub async fn prepare(&mut self, plan: &Plan) {
        if plan.protocol != Protocol::Prepared || !self.prepared.is_empty() {
            return;
        }
        for s in &plan.scripts.scripts {
            let mut per = Vec::with_capacity(s.script.steps.len());
            for step in &s.script.steps {
                per.push(match &step.command {
                    Command::Sql(cmd) => match self.client.prepare(&cmd.param_sql).await {
                        Ok(st) => Some(st),
                        Err(e) => {
                            tracing::debug!(statement = %cmd.first_line, error = %crate::error::describe(&e), "prepare failed");
                            None
                        }
                    },
                    _ => None,
                });
            }
            self.prepared.push(per);
        }
    }

    pub fn is_broken(&self) -> bool {
        self.client.is_closed()
    }

    /// Closes the connection and waits (briefly) until the terminate message went out.
    pub async fn close(self) {
        drop(self.client);
        let _ = tokio::time::timeout(std::time::Duration::from_secs(2), self.conn_task).await;
    }

    pub async fn rollback(&self) {
        if !self.client.is_closed() {
            let _ = self.client.batch_execute("ROLLBACK").await;
        }
    }

    /// Sends SQL step `step` of script `script` with the current variable values. The
    /// values are taken now; the returned future only borrows the session.
    pub fn sql<'a>(
        &'a self,
        protocol: Protocol,
        (script, step): (usize, usize),
        cmd: &'a SqlCommand,
        vars: &Variables,
    ) -> impl Future<Output = Result<Option<ResultRows>, tokio_postgres::Error>> + 'a {
        let want = cmd.result_set.is_some();
        let mut text = String::new();
        let mut ranges: Vec<Option<(usize, usize)>> = Vec::new();
        if protocol == Protocol::Simple {
            cmd.interpolate(vars, &mut text);
        } else {
            ranges.reserve(cmd.params.len());
            for &id in &cmd.params {
                let start = text.len();
                ranges.push(
                    vars.write_text(id, &mut text)
                        .then_some((start, text.len())),
                );
            }
        }
        let stmt = self
            .prepared
            .get(script)
            .and_then(|p| p.get(step))
            .and_then(Option::as_ref);
        async move {
            let params = || {
                ranges
                    .iter()
                    .map(|r| TextParam(r.map(|(a, b)| &text[a..b])))
            };
            match protocol {
                Protocol::Simple if !want => self.client.batch_execute(&text).await.map(|()| None),
                Protocol::Simple => {
                    let msgs = self.client.simple_query(&text).await?;
                    Ok(Some(simple_rows(&msgs)))
                }
                Protocol::Prepared => {
                    let unprepared;
                    let stmt = match stmt {
                        Some(s) => s,
                        None => {
                            unprepared = self.client.prepare(&cmd.param_sql).await?;
                            &unprepared
                        }
                    };
                    if !want {
                        return self.client.execute_raw(stmt, params()).await.map(|_| None);
                    }
                    let rows: Vec<_> = self
                        .client
                        .query_raw(stmt, params())
                        .await?
                        .try_collect()
                        .await?;
                    Ok(Some(typed_rows(&rows)?))
                }
                Protocol::Extended => {
                    let typed = params().map(|p| (p, Type::UNKNOWN));
                    let stream = self.client.query_typed_raw(&cmd.param_sql, typed).await?;
                    let rows: Vec<_> = stream.try_collect().await?;
                    if want {
                        Ok(Some(typed_rows(&rows)?))
                    } else {
                        Ok(None)
                    }
                }
            }
        }
    }
}

fn simple_rows(msgs: &[SimpleQueryMessage]) -> ResultRows {
    let mut out = ResultRows::default();
    for m in msgs {
        match m {
            SimpleQueryMessage::RowDescription(cols) => {
                // A new result set: only the last one counts.
                out.columns = cols.iter().map(|c| c.name().to_string()).collect();
                out.rows.clear();
            }
            SimpleQueryMessage::Row(r) => {
                if out.columns.is_empty() {
                    out.columns = r.columns().iter().map(|c| c.name().to_string()).collect();
                }
                out.rows
                    .push((0..r.len()).map(|i| r.get(i).map(str::to_string)).collect());
            }
            _ => {}
        }
    }
    out
}

fn typed_rows(rows: &[tokio_postgres::Row]) -> Result<ResultRows, tokio_postgres::Error> {
    let mut out = ResultRows::default();
    if let Some(first) = rows.first() {
        out.columns = first
            .columns()
            .iter()
            .map(|c| c.name().to_string())
            .collect();
    }
    for r in rows {
        let mut vals = Vec::with_capacity(r.len());
        for i in 0..r.len() {
            vals.push(r.try_get::<_, Raw>(i)?.0);
        }
        out.rows.push(vals);
    }
    Ok(out)
}
