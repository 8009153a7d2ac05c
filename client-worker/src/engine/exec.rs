//! Running one transaction of a script for one client: meta-commands, conditionals,
//! variables, pipelines and SQL, with pgbench's errors.

use std::time::{Duration, Instant};

use crate::engine::client::{ResultRows, Session};
use crate::engine::executor::sleep_until;
use crate::engine::pgwire::{DEADLOCK_DETECTED, SERIALIZATION_FAILURE, SqlError};
use crate::engine::plan::Plan;
use blocklab_script::expr::{EvalCtx, EvalError, Expr, Value};
use blocklab_script::parse::{Command, ResultSet, SleepArg};
use blocklab_script::prng::PgPrng;
use blocklab_script::vars::Variables;

/// Latency and count of one script command (`-r`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepStat {
    pub sum_us: f64,
    pub count: u64,
    pub failures: u64,
    /// Retries that started after an error in this command.
    pub retries: u64,
}

/// Everything a client keeps between transactions.
pub struct ClientState {
    pub id: i64,
    pub vars: Variables,
    /// Random functions of the scripts.
    pub rng: PgPrng,
    /// Transactions so far, skipped and failed ones included (pgbench's `cnt`).
    pub cnt: u64,
    /// Per script, per step (only with `-r`).
    pub steps: Vec<Vec<StepStat>>,
    /// `debug()` output goes here instead of stderr when set (tests).
    pub debug_out: Option<Vec<String>>,
}

/// Why a transaction failed (after its last try).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailureKind {
    Serialization,
    Deadlock,
    /// Any other SQL error, counted only with `continue_on_error`.
    Other,
}

/// Why a transaction did not complete.
#[derive(Debug)]
pub enum TxnError {
    /// An SQL error; the client goes on (or retries it if `retryable`).
    Sql {
        error: SqlError,
        step: usize,
        retryable: bool,
    },
    /// A script error (evaluation, `\gset`, shell): pgbench aborts the client.
    Abort { step: usize, message: String },
}

impl TxnError {
    /// The kind of failure an SQL error is (None for a script error).
    pub fn failure_kind(&self) -> Option<FailureKind> {
        match self {
            TxnError::Sql { error, .. } => Some(match error.code() {
                Some(SERIALIZATION_FAILURE) => FailureKind::Serialization,
                Some(DEADLOCK_DETECTED) => FailureKind::Deadlock,
                _ => FailureKind::Other,
            }),
            TxnError::Abort { .. } => None,
        }
    }

    pub fn step(&self) -> usize {
        match self {
            TxnError::Sql { step, .. } | TxnError::Abort { step, .. } => *step,
        }
    }

    pub fn describe(&self) -> String {
        match self {
            TxnError::Sql { error, .. } => error.to_string(),
            TxnError::Abort { message, .. } => message.clone(),
        }
    }

    /// The error as pgbench's `--verbose-errors` lines show it (libpq's form).
    pub fn libpq_message(&self) -> String {
        match self {
            TxnError::Sql { error, .. } => error.libpq_message(),
            TxnError::Abort { message, .. } => message.clone(),
        }
    }
}

fn sql_error(error: SqlError, step: usize) -> TxnError {
    TxnError::Sql {
        retryable: error.is_retryable(),
        error,
        step,
    }
}

impl ClientState {
    fn eval(&mut self, e: &Expr, script: usize, step: usize) -> Result<Value, TxnError> {
        let mut cx = EvalCtx {
            vars: &mut self.vars,
            rng: &mut self.rng,
            position: (script, step + 1),
            debug_out: self.debug_out.as_mut(),
        };
        e.eval(&mut cx)
            .map_err(|EvalError(message)| TxnError::Abort { step, message })
    }

    /// Counts the latency of a step from `started` (with `-r`); returns the clock reading
    /// it ended at, which is when the next step starts.
    fn record(&mut self, script: usize, step: usize, started: Option<Instant>) -> Option<Instant> {
        let started = started?;
        let now = Instant::now();
        if let Some(s) = self.steps.get_mut(script).and_then(|v| v.get_mut(step)) {
            s.sum_us += (now - started).as_secs_f64() * 1e6;
            s.count += 1;
        }
        Some(now)
    }

    /// Counts a failed (`retry` false) or retried transaction on the command it failed in.
    pub fn count_error(&mut self, script: usize, step: usize, retry: bool) {
        if let Some(s) = self.steps.get_mut(script).and_then(|v| v.get_mut(step)) {
            if retry {
                s.retries += 1;
            } else {
                s.failures += 1;
            }
        }
    }

    /// Runs script `si` once on `session`.
    pub async fn run_script(
        &mut self,
        plan: &Plan,
        session: &mut Session,
        si: usize,
    ) -> Result<(), TxnError> {
        let steps = &plan.scripts.scripts[si].script.steps;
        session.discard_unsent();
        // The steps of the commands queued in the open pipeline.
        let mut pipeline: Option<Vec<usize>> = None;
        let mut pc = 0;
        let mut ended: Option<Instant> = None;
        while pc < steps.len() {
            // Clock reads only when per-statement latencies are wanted (-r); a step starts
            // when the one before it was counted as ended.
            let started = if plan.per_statement {
                Some(ended.take().unwrap_or_else(Instant::now))
            } else {
                None
            };
            let abort = |message: String| TxnError::Abort { step: pc, message };
            match &steps[pc].command {
                Command::Sql(cmd) => {
                    if pipeline.is_some() {
                        match &cmd.result_set {
                            Some(ResultSet::Gset(_)) => {
                                return Err(abort("\\gset is not allowed in pipeline mode".into()));
                            }
                            Some(ResultSet::Aset(_)) => {
                                return Err(abort("\\aset is not allowed in pipeline mode".into()));
                            }
                            None => {}
                        }
                    }
                    if let Some(p) = pipeline.as_mut() {
                        // Queued now, sent at the sync.
                        if let Err(error) = session.send(plan.protocol, (si, pc), cmd, &self.vars) {
                            return Err(sql_error(error, pc));
                        }
                        p.push(pc);
                    } else {
                        let res = session.sql(plan.protocol, (si, pc), cmd, &self.vars).await;
                        if res.is_ok() {
                            ended = self.record(si, pc, started);
                        }
                        self.finish_sql(cmd.result_set.as_ref(), pc, res)?;
                    }
                    pc += 1;
                    continue;
                }
                Command::Set(id, e) => {
                    let v = self.eval(e, si, pc)?;
                    // pgbench checks a name when it first creates the variable.
                    if !self.vars.is_set(*id) {
                        let name = self.vars.symbols().name(*id);
                        if !blocklab_script::vars::valid_name(name) {
                            return Err(abort(format!("set: invalid variable name: \"{name}\"")));
                        }
                    }
                    self.vars.set_value(*id, v);
                }
                Command::Sleep(arg) => {
                    let us = match arg {
                        SleepArg::Micros(us) => *us,
                        SleepArg::Var(id, unit) => {
                            let text = self.vars.text(*id).ok_or_else(|| {
                                abort(format!(
                                    "\\sleep: undefined variable \"{}\"",
                                    self.vars.symbols().name(*id)
                                ))
                            })?;
                            let n: i64 = text.trim().parse().map_err(|_| {
                                abort(format!("\\sleep: invalid sleep time \"{text}\""))
                            })?;
                            n.saturating_mul(*unit)
                        }
                    };
                    if us > 0 {
                        sleep_until(Instant::now() + Duration::from_micros(us as u64)).await;
                    }
                }
                Command::If(e, next) => {
                    if !self.eval(e, si, pc)?.truth() {
                        ended = self.record(si, pc, started);
                        pc = self.branch(steps, *next, si)?;
                        continue;
                    }
                }
                Command::Elif(_, _, end) | Command::Else(end) => {
                    pc = end + 1;
                    continue;
                }
                Command::Endif => {}
                Command::StartPipeline => {
                    if pipeline.is_some() {
                        return Err(abort("already in pipeline mode".into()));
                    }
                    pipeline = Some(Vec::new());
                }
                Command::SyncPipeline | Command::EndPipeline => {
                    let end = matches!(steps[pc].command, Command::EndPipeline);
                    let Some(p) = (if end {
                        pipeline.take()
                    } else {
                        pipeline.as_mut().map(std::mem::take)
                    }) else {
                        return Err(abort("not in pipeline mode".into()));
                    };
                    // The commands queued so far go out together and end at this sync; each
                    // reply is read, the first error is the transaction's.
                    let mut first = session.flush().await.err().map(|e| sql_error(e, pc));
                    for step in p {
                        if first.is_some() && session.is_broken() {
                            break;
                        }
                        let res = session.receive((si, step), false).await;
                        if let Err(e) = self.finish_sql(None, step, res) {
                            first.get_or_insert(e);
                        }
                    }
                    if let Some(e) = first {
                        return Err(e);
                    }
                }
                Command::Shell(argv) | Command::SetShell(_, argv) => {
                    if !plan.allow_shell {
                        return Err(abort(
                            "\\shell and \\setshell are not allowed in daemon mode".into(),
                        ));
                    }
                    let var = match &steps[pc].command {
                        Command::SetShell(v, _) => Some(v.as_str()),
                        _ => None,
                    };
                    crate::engine::shell::run(&mut self.vars, var, argv).map_err(abort)?;
                }
            }
            ended = self.record(si, pc, started);
            pc += 1;
        }
        if pipeline.is_some() {
            return Err(TxnError::Abort {
                step: steps.len(),
                message: "end of script reached with pipeline open".into(),
            });
        }
        Ok(())
    }

    /// Evaluates the \elif chain from `next`; returns where execution continues.
    fn branch(
        &mut self,
        steps: &[blocklab_script::parse::Step],
        mut next: usize,
        si: usize,
    ) -> Result<usize, TxnError> {
        loop {
            match &steps[next].command {
                Command::Elif(e, n, _) => {
                    if self.eval(e, si, next)?.truth() {
                        return Ok(next + 1);
                    }
                    next = *n;
                }
                _ => return Ok(next + 1),
            }
        }
    }

    fn finish_sql(
        &mut self,
        rs: Option<&ResultSet>,
        step: usize,
        res: Result<Option<ResultRows>, SqlError>,
    ) -> Result<(), TxnError> {
        match res {
            Err(error) => Err(sql_error(error, step)),
            Ok(None) => Ok(()),
            Ok(Some(rows)) => self.store(step, rows, rs),
        }
    }

    fn store(
        &mut self,
        step: usize,
        rows: ResultRows,
        rs: Option<&ResultSet>,
    ) -> Result<(), TxnError> {
        let abort = |message: String| TxnError::Abort { step, message };
        let (prefix, take) = match rs {
            Some(ResultSet::Gset(p)) => {
                if rows.rows.len() != 1 {
                    return Err(abort(format!("expected one row, got {}", rows.rows.len())));
                }
                (p, 1)
            }
            Some(ResultSet::Aset(p)) => (p, rows.rows.len()),
            None => return Ok(()),
        };
        let prefix = prefix.as_str();
        for row in rows.rows.iter().take(take) {
            for (col, val) in rows.columns.iter().zip(row) {
                let name = format!("{prefix}{col}");
                let text = val.clone().unwrap_or_else(|| "NULL".into());
                self.vars
                    .set_text_by_name(&name, text)
                    .map_err(|e| abort(format!("error storing into variable {name}: {e}")))?;
            }
        }
        Ok(())
    }
}
