//! One benchmark client: a connection, its prepared statements, and running one
//! transaction of the script under the chosen protocol.

use std::error::Error as StdError;
use std::sync::Arc;

use tokio::task::JoinHandle;
use tokio_postgres::types::{IsNull, ToSql, Type, to_sql_checked};
use tokio_postgres::{Client, Statement};

use crate::conn::Target;
use crate::error::WorkerError;
use crate::script::{MAX_PARAMS, Protocol, Script};

/// An integer variable, sent as whatever integer type the statement's parameter has.
#[derive(Clone, Copy, Debug, Default)]
struct IntParam(i64);

impl ToSql for IntParam {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut bytes_mut::BytesMut,
    ) -> Result<IsNull, Box<dyn StdError + Sync + Send>> {
        match *ty {
            Type::INT2 => i16::try_from(self.0)?.to_sql(ty, out),
            Type::INT4 => i32::try_from(self.0)?.to_sql(ty, out),
            _ => self.0.to_sql(ty, out),
        }
    }

    fn accepts(ty: &Type) -> bool {
        matches!(*ty, Type::INT2 | Type::INT4 | Type::INT8)
    }

    to_sql_checked!();
}

mod bytes_mut {
    pub use tokio_postgres::types::private::BytesMut;
}

/// What every client of a run shares.
pub struct Plan {
    pub target: Target,
    pub script: Script,
    pub protocol: Protocol,
    pub scale: i64,
    /// Per command, the declared type of each parameter (extended protocol).
    pub param_types: Vec<Vec<Type>>,
}

impl Plan {
    pub fn new(target: Target, script: Script, protocol: Protocol, scale: i64) -> Arc<Plan> {
        let param_types = script
            .commands
            .iter()
            .map(|c| {
                c.params
                    .iter()
                    .map(|&v| {
                        if script.var_is_bigint(v, scale) {
                            Type::INT8
                        } else {
                            Type::INT4
                        }
                    })
                    .collect()
            })
            .collect();
        Arc::new(Plan {
            target,
            script,
            protocol,
            scale,
            param_types,
        })
    }
}

/// A connected client.
pub struct Session {
    pub client: Client,
    conn_task: JoinHandle<()>,
    prepared: Vec<Statement>,
    sql: String,
}

impl Session {
    pub async fn open(plan: &Plan) -> Result<Session, WorkerError> {
        let (client, conn_task) = plan.target.connect().await?;
        let mut prepared = Vec::new();
        if plan.protocol == Protocol::Prepared {
            for cmd in &plan.script.commands {
                let stmt = client.prepare(&cmd.param_sql).await.map_err(|e| {
                    WorkerError::sql(format!("preparing \"{}\"", cmd.param_sql), &e)
                })?;
                prepared.push(stmt);
            }
        }
        Ok(Session {
            client,
            conn_task,
            prepared,
            sql: String::with_capacity(256),
        })
    }

    pub fn is_broken(&self) -> bool {
        self.client.is_closed()
    }

    /// Closes the connection and waits (briefly) until the terminate message went out.
    pub async fn close(self) {
        drop(self.client);
        let _ = tokio::time::timeout(std::time::Duration::from_secs(2), self.conn_task).await;
    }

    /// Runs one transaction of the script with the drawn `values`. On an error inside a
    /// transaction block it rolls back so the connection stays usable.
    pub async fn run_transaction(
        &mut self,
        plan: &Plan,
        values: &[i64],
    ) -> Result<(), tokio_postgres::Error> {
        for (i, cmd) in plan.script.commands.iter().enumerate() {
            let res = self.run_command(plan, i, values).await;
            if let Err(e) = res {
                if plan.script.transactional && i > 0 && !self.client.is_closed() {
                    let _ = self.client.batch_execute("ROLLBACK").await;
                }
                tracing::trace!(command = %cmd.text, error = %e, "command failed");
                return Err(e);
            }
        }
        Ok(())
    }

    async fn run_command(
        &mut self,
        plan: &Plan,
        i: usize,
        values: &[i64],
    ) -> Result<(), tokio_postgres::Error> {
        let cmd = &plan.script.commands[i];
        match plan.protocol {
            Protocol::Simple => {
                self.sql.clear();
                cmd.interpolate(values, &mut self.sql);
                self.client.batch_execute(&self.sql).await
            }
            Protocol::Extended => {
                let mut ints = [IntParam::default(); MAX_PARAMS];
                for (slot, &v) in ints.iter_mut().zip(&cmd.params) {
                    *slot = IntParam(values[v]);
                }
                let params: Vec<(&(dyn ToSql + Sync), Type)> = ints
                    .iter()
                    .zip(&plan.param_types[i])
                    .map(|(p, t)| (p as &(dyn ToSql + Sync), t.clone()))
                    .collect();
                self.client
                    .query_typed(&cmd.param_sql, &params)
                    .await
                    .map(drop)
            }
            Protocol::Prepared => {
                let mut ints = [IntParam::default(); MAX_PARAMS];
                for (slot, &v) in ints.iter_mut().zip(&cmd.params) {
                    *slot = IntParam(values[v]);
                }
                let refs: [&(dyn ToSql + Sync); MAX_PARAMS] =
                    std::array::from_fn(|j| &ints[j] as _);
                self.client
                    .execute(&self.prepared[i], &refs[..cmd.params.len()])
                    .await
                    .map(drop)
            }
        }
    }
}
