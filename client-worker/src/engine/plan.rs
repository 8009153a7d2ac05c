//! What every client of a run shares: the parsed scripts with their weights, the
//! protocol and the run options that shape each client's loop.

use crate::conn::Target;
use blocklab_script::builtin::Protocol;
use blocklab_script::parse::{Command, ParsedScript, ScriptError, parse_script};
use blocklab_script::prng::PgPrng;
use blocklab_script::vars::Symbols;
use std::sync::atomic::{AtomicU64, Ordering};

/// A script to run, as given: a built-in or a file, with its weight.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScriptSpec {
    /// Name used in errors (file name or `builtin`).
    pub name: String,
    /// What the summary calls it (`<builtin: TPC-B (sort of)>` or the file name).
    pub description: String,
    pub text: String,
    pub weight: u32,
    /// One of pgbench's built-in scripts (their use makes the scale come from
    /// pgbench_branches).
    pub builtin: bool,
}

impl ScriptSpec {
    pub fn builtin(b: blocklab_script::builtin::Builtin, weight: u32) -> ScriptSpec {
        ScriptSpec {
            name: b.name().into(),
            description: b.description().into(),
            text: b.script_text().into(),
            weight,
            builtin: true,
        }
    }

    pub fn file(name: &str, text: String, weight: u32) -> ScriptSpec {
        ScriptSpec {
            name: name.into(),
            description: name.into(),
            text,
            weight,
            builtin: false,
        }
    }
}

/// Splits `name@weight` (weight defaults to 1), as pgbench's `-b` and `-f` do.
pub fn split_weight(arg: &str) -> Result<(&str, u32), String> {
    match arg.rsplit_once('@') {
        None => Ok((arg, 1)),
        Some((name, w)) => w
            .parse::<u32>()
            .map(|w| (name, w))
            .map_err(|_| format!("invalid weight specification: {arg}")),
    }
}

#[derive(Debug)]
pub struct WeightedScript {
    pub description: String,
    pub weight: u32,
    pub script: ParsedScript,
}

#[derive(Debug)]
pub struct ScriptSet {
    pub scripts: Vec<WeightedScript>,
    pub symbols: Symbols,
    total_weight: u64,
}

impl ScriptSet {
    #[allow(clippy::result_large_err)] // built once, before the run
    pub fn parse(specs: &[ScriptSpec], protocol: Protocol) -> Result<ScriptSet, ScriptError> {
        let mut symbols = Symbols::default();
        for auto in ["client_id", "scale", "random_seed", "default_seed"] {
            symbols.intern(auto);
        }
        let mut scripts = Vec::with_capacity(specs.len());
        for s in specs {
            let script = parse_script(&s.name, &s.text, &mut symbols)?;
            if script.steps.is_empty() {
                return Err(plain(&format!(
                    "empty command list for script \"{}\"",
                    s.description
                )));
            }
            if protocol == Protocol::Simple
                && script
                    .steps
                    .iter()
                    .any(|st| matches!(st.command, Command::StartPipeline))
            {
                return Err(plain(
                    "cannot use pipeline mode with the simple query protocol",
                ));
            }
            scripts.push(WeightedScript {
                description: s.description.clone(),
                weight: s.weight,
                script,
            });
        }
        let total_weight = scripts.iter().map(|s| u64::from(s.weight)).sum();
        if scripts.is_empty() {
            return Err(plain("no script to run"));
        }
        if total_weight == 0 {
            return Err(plain("total script weight must not be zero"));
        }
        Ok(ScriptSet {
            scripts,
            symbols,
            total_weight,
        })
    }

    /// Picks a script by weight, as pgbench's chooseScript.
    pub fn choose(&self, rng: &mut PgPrng) -> usize {
        if self.scripts.len() == 1 {
            return 0;
        }
        let mut w = rng.u64_range(0, self.total_weight - 1);
        for (i, s) in self.scripts.iter().enumerate() {
            if w < u64::from(s.weight) {
                return i;
            }
            w -= u64::from(s.weight);
        }
        self.scripts.len() - 1
    }

    pub fn total_weight(&self) -> u64 {
        self.total_weight
    }
}

pub(crate) fn plain(msg: &str) -> ScriptError {
    ScriptError {
        file: String::new(),
        line: 0,
        msg: msg.into(),
        more: None,
        command: None,
        context: None,
        column: None,
    }
}

/// Counters all clients add to while running, read by the progress reporter.
#[derive(Debug, Default)]
pub struct Live {
    pub transactions: AtomicU64,
    pub latency_sum_us: AtomicU64,
    pub latency_sumsq_us: AtomicU64,
    pub failures: AtomicU64,
    pub lag_sum_us: AtomicU64,
    pub skipped: AtomicU64,
}

impl Live {
    pub fn add(&self, latency_us: u64) {
        self.transactions.fetch_add(1, Ordering::Relaxed);
        self.latency_sum_us.fetch_add(latency_us, Ordering::Relaxed);
        self.latency_sumsq_us
            .fetch_add(latency_us.saturating_mul(latency_us), Ordering::Relaxed);
    }
}

/// The run, as every client sees it.
pub struct Plan {
    pub target: Target,
    pub scripts: ScriptSet,
    pub protocol: Protocol,
    pub scale: i64,
    /// `-D` variables, set on every client before its first transaction.
    pub variables: Vec<(String, String)>,
    pub allow_shell: bool,
    pub max_tries: u32,
    /// Mean delay between a thread's scheduled transaction starts (the rate limit split
    /// evenly over threads, as pgbench), µs.
    pub throttle_delay_us: Option<f64>,
    pub latency_limit_us: Option<u64>,
    pub reconnect: bool,
    pub continue_on_error: bool,
    pub verbose_errors: bool,
    pub exit_on_abort: bool,
    /// Set when a client aborted under `exit_on_abort`: every client stops.
    pub abort_all: std::sync::atomic::AtomicBool,
    pub log: Option<crate::engine::txlog::TxLogOptions>,
    pub log_fields: crate::engine::txlog::LogFields,
    /// `--progress-timestamp`
    pub progress_timestamp: bool,
    pub transactions_per_client: u64,
    pub per_statement: bool,
    /// Whether clients update `live` (progress reports).
    pub track_live: bool,
    pub live: Live,
    pub random_seed: u64,
    /// Clients of this worker and the global id of its first.
    pub clients: u32,
    pub client_id_offset: u32,
}
