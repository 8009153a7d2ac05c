//! What a load run is asked to do, from flags or a RunLoad task through `serve`.

use std::time::Duration;

use crate::engine::plan::ScriptSpec;
use crate::engine::txlog::TxLogOptions;
use crate::error::WorkerError;
use blocklab_script::builtin::{Builtin, Protocol};

/// A load to run.
#[derive(Clone, Debug)]
pub struct LoadOptions {
    /// libpq-style `key=value` connection string.
    pub conninfo: String,
    /// Scripts with weights; empty means tpcb-like.
    pub script_specs: Vec<ScriptSpec>,
    pub clients: u32,
    pub threads: u32,
    /// The measured window (ignored when `transactions_per_client` is set).
    pub duration: Duration,
    /// Run before the measured window; its transactions are not counted.
    pub warmup: Duration,
    pub protocol: Protocol,
    /// 0: read it from pgbench_branches, as pgbench does.
    pub scale: u32,
    /// `-t`: transactions per client instead of a duration (0 = duration).
    pub transactions_per_client: u64,
    /// `-R`: transactions per second over all clients (0 = unthrottled).
    pub rate: f64,
    /// `-L`
    pub latency_limit: Option<Duration>,
    /// `--max-tries` (0 = unlimited within time and latency limits).
    pub max_tries: u32,
    /// With `transactions_per_client`: the run ends after this long (pgbench's `-T`), the
    /// bound of unlimited retries.
    pub retry_time_limit: Option<Duration>,
    /// `--random-seed` (None = from the clock).
    pub random_seed: Option<u64>,
    pub client_id_offset: u32,
    /// `-D name=value`
    pub variables: Vec<(String, String)>,
    /// `-C`
    pub reconnect: bool,
    /// `-r`
    pub per_statement: bool,
    /// `-P`: per-interval progress on stderr.
    pub progress_interval: Option<Duration>,
    /// `\shell`/`\setshell` are allowed (standalone only).
    pub allow_shell: bool,
    /// Report the live tps of the measured window to the coordinator every second.
    pub report_live: bool,
    /// Go on after SQL errors other than serialization failures and deadlocks, counting
    /// them as failed transactions (newer pgbench's `--continue-on-error`); otherwise the
    /// client aborts, as in PostgreSQL 15's pgbench.
    pub continue_on_error: bool,
    /// `--failures-detailed`: failures by kind in the summary and the logs.
    pub failures_detailed: bool,
    /// `--verbose-errors`: every failed or retried try on stderr.
    pub verbose_errors: bool,
    /// `--exit-on-abort`: the first aborted client stops every client.
    pub exit_on_abort: bool,
    /// `-l`: per-thread transaction logs (standalone).
    pub log: Option<TxLogOptions>,
    /// `--progress-timestamp`: progress lines carry the Unix time.
    pub progress_timestamp: bool,
    /// Clients of the whole run over all workers, for the seeds derived after the
    /// clients' ones (0: `client_id_offset + clients`).
    pub run_clients: u32,
    /// Global index of this worker's first thread (for the threads' seeds).
    pub thread_id_offset: u32,
}

impl LoadOptions {
    /// Defaults like pgbench's: tpcb-like, one client, one thread, simple protocol.
    pub fn new(conninfo: impl Into<String>, duration: Duration) -> Self {
        LoadOptions {
            conninfo: conninfo.into(),
            script_specs: Vec::new(),
            clients: 1,
            threads: 1,
            duration,
            warmup: Duration::ZERO,
            protocol: Protocol::Simple,
            scale: 0,
            transactions_per_client: 0,
            rate: 0.0,
            latency_limit: None,
            max_tries: 1,
            retry_time_limit: None,
            random_seed: None,
            client_id_offset: 0,
            variables: Vec::new(),
            reconnect: false,
            per_statement: false,
            progress_interval: None,
            allow_shell: false,
            report_live: false,
            continue_on_error: false,
            failures_detailed: false,
            verbose_errors: false,
            exit_on_abort: false,
            log: None,
            progress_timestamp: false,
            run_clients: 0,
            thread_id_offset: 0,
        }
    }

    /// Runs one built-in script only.
    pub fn with_builtin(mut self, b: Builtin) -> Self {
        self.script_specs = vec![ScriptSpec::builtin(b, 1)];
        self
    }

    /// The scripts to run (tpcb-like when none was given).
    pub fn scripts(&self) -> Vec<ScriptSpec> {
        if self.script_specs.is_empty() {
            vec![ScriptSpec::builtin(Builtin::TpcbLike, 1)]
        } else {
            self.script_specs.clone()
        }
    }

    pub fn validate(&self) -> Result<(), WorkerError> {
        let bad = |m: &str| Err(WorkerError::InvalidArgument(m.to_string()));
        if self.clients == 0 {
            return bad("clients must be at least 1");
        }
        if self.threads == 0 {
            return bad("threads must be at least 1");
        }
        if self.duration.is_zero() && self.transactions_per_client == 0 {
            return bad("duration must be positive");
        }
        if !self.rate.is_finite() || self.rate < 0.0 {
            return bad("rate must be a positive number");
        }
        for (name, _) in &self.variables {
            if !blocklab_script::vars::valid_name(name) {
                return bad(&format!("invalid variable name: \"{name}\""));
            }
        }
        Ok(())
    }
}
