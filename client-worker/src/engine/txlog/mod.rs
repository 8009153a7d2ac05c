//! `-l`: pgbench's transaction logs, one file per thread (`PREFIX.PID` for thread 0,
//! `PREFIX.PID.N` for the others), in PostgreSQL 15's formats field for field: one line per
//! transaction, or with `--aggregate-interval` one line per interval.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use blocklab_script::prng::PgPrng;

/// What `-l` writes and where.
#[derive(Clone, Debug, PartialEq)]
pub struct TxLogOptions {
    /// `--log-prefix` (pgbench's default: `pgbench_log`).
    pub prefix: String,
    /// `--sampling-rate`: the fraction of transactions logged; 0 logs all.
    pub sampling_rate: f64,
    /// `--aggregate-interval` in seconds; 0 writes one line per transaction.
    pub aggregate_interval_s: u32,
    /// The process id in the file names.
    pub pid: u32,
}

impl TxLogOptions {
    pub fn new(prefix: Option<String>) -> TxLogOptions {
        TxLogOptions {
            prefix: prefix.unwrap_or_else(|| "pgbench_log".into()),
            sampling_rate: 0.0,
            aggregate_interval_s: 0,
            pid: std::process::id(),
        }
    }

    /// The file of thread `tid`, as pgbench names it.
    pub fn path(&self, tid: u32) -> PathBuf {
        if tid == 0 {
            format!("{}.{}", self.prefix, self.pid).into()
        } else {
            format!("{}.{}.{tid}", self.prefix, self.pid).into()
        }
    }
}

/// Which optional fields the lines carry (they follow the run's options, as in pgbench).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LogFields {
    pub throttled: bool,
    pub latency_limit: bool,
    /// `--max-tries` other than 1.
    pub retries: bool,
    pub failures_detailed: bool,
}

/// How a logged transaction ended.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TxOutcome {
    /// Committed, with its latency in microseconds.
    Done { latency_us: f64 },
    /// Too late under `-R` with `-L`: never sent.
    Skipped,
    /// A serialization failure after its last try.
    Serialization,
    /// A deadlock after its last try.
    Deadlock,
    /// Another SQL error, under `continue_on_error`.
    Other,
}

/// One transaction as the log sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TxRecord {
    pub client: i64,
    /// The client's transactions so far, this one and skipped and failed ones included.
    pub cnt: u64,
    pub outcome: TxOutcome,
    pub script: usize,
    /// Start minus scheduled start, microseconds (with `-R`).
    pub lag_us: f64,
    pub tries: u32,
}

/// min, max, sum and sum of squares, as pgbench's SimpleStats.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Simple {
    count: u64,
    min: f64,
    max: f64,
    sum: f64,
    sum2: f64,
}

impl Simple {
    fn add(&mut self, v: f64) {
        if self.count == 0 || v < self.min {
            self.min = v;
        }
        if self.count == 0 || v > self.max {
            self.max = v;
        }
        self.count += 1;
        self.sum += v;
        self.sum2 += v * v;
    }
}

/// One aggregation interval (pgbench's StatsData).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Interval {
    /// Unix epoch microseconds.
    start_us: i64,
    cnt: u64,
    latency: Simple,
    lag: Simple,
    skipped: u64,
    retried: u64,
    retries: u64,
    serialization: u64,
    deadlock: u64,
}

impl Interval {
    fn starting(start_us: i64) -> Interval {
        Interval {
            start_us,
            ..Interval::default()
        }
    }

    fn add(&mut self, r: &TxRecord, throttled: bool) {
        if r.outcome == TxOutcome::Skipped {
            self.skipped += 1;
            return;
        }
        if r.tries > 1 {
            self.retries += u64::from(r.tries - 1);
            self.retried += 1;
        }
        match r.outcome {
            TxOutcome::Done { latency_us } => {
                self.cnt += 1;
                self.latency.add(latency_us);
                if throttled {
                    self.lag.add(r.lag_us);
                }
            }
            TxOutcome::Serialization => self.serialization += 1,
            TxOutcome::Deadlock => self.deadlock += 1,
            TxOutcome::Skipped | TxOutcome::Other => {}
        }
    }

    /// `interval_start num_transactions sum_latency sum_latency_2 min_latency max_latency
    /// sum_lag sum_lag_2 min_lag max_lag skipped retried retries serialization_failures
    /// deadlock_failures`
    fn line(&self, f: LogFields) -> String {
        let l = &self.latency;
        let lag = if f.throttled {
            self.lag
        } else {
            Simple::default()
        };
        let (retried, retries) = if f.retries {
            (self.retried, self.retries)
        } else {
            (0, 0)
        };
        let (ser, dead) = if f.failures_detailed {
            (self.serialization, self.deadlock)
        } else {
            (0, 0)
        };
        format!(
            "{} {} {:.0} {:.0} {:.0} {:.0} {:.0} {:.0} {:.0} {:.0} {} {retried} {retries} {ser} {dead}",
            self.start_us.div_euclid(1_000_000),
            self.cnt,
            l.sum,
            l.sum2,
            l.min,
            l.max,
            lag.sum,
            lag.sum2,
            lag.min,
            lag.max,
            if f.latency_limit { self.skipped } else { 0 },
        )
    }
}

/// The per-transaction line: `client_id transaction_no time script_no time_epoch time_us
/// [schedule_lag] [retries]`.
pub fn transaction_line(r: &TxRecord, now_us: i64, f: LogFields) -> String {
    let time = match r.outcome {
        TxOutcome::Done { latency_us } => format!("{latency_us:.0}"),
        TxOutcome::Skipped => "skipped".into(),
        TxOutcome::Serialization if f.failures_detailed => "serialization".into(),
        TxOutcome::Deadlock if f.failures_detailed => "deadlock".into(),
        TxOutcome::Other if f.failures_detailed => "other".into(),
        TxOutcome::Serialization | TxOutcome::Deadlock | TxOutcome::Other => "failed".into(),
    };
    let mut s = format!(
        "{} {} {time} {} {} {}",
        r.client,
        r.cnt,
        r.script,
        now_us.div_euclid(1_000_000),
        now_us.rem_euclid(1_000_000)
    );
    if f.throttled {
        s.push_str(&format!(" {:.0}", r.lag_us));
    }
    if f.retries {
        s.push_str(&format!(" {}", r.tries.saturating_sub(1)));
    }
    s
}

/// The log of one thread: its lines, or the interval being aggregated.
pub struct ThreadLog {
    out: Box<dyn Write + Send>,
    fields: LogFields,
    sampling_rate: f64,
    interval_us: i64,
    agg: Interval,
}

impl ThreadLog {
    /// Creates thread `tid`'s file.
    pub fn create(
        o: &TxLogOptions,
        tid: u32,
        fields: LogFields,
        start_us: i64,
    ) -> std::io::Result<ThreadLog> {
        let path = o.path(tid);
        let file = File::create(&path).map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!("could not open logfile \"{}\": {e}", path.display()),
            )
        })?;
        Ok(ThreadLog::to_writer(
            Box::new(BufWriter::new(file)),
            o,
            fields,
            start_us,
        ))
    }

    /// A log written to `out`; the first interval starts at `start_us` rounded down to the
    /// second (Unix epoch microseconds).
    pub fn to_writer(
        out: Box<dyn Write + Send>,
        o: &TxLogOptions,
        fields: LogFields,
        start_us: i64,
    ) -> ThreadLog {
        ThreadLog {
            out,
            fields,
            sampling_rate: o.sampling_rate,
            interval_us: i64::from(o.aggregate_interval_s) * 1_000_000,
            agg: Interval::starting(start_us.div_euclid(1_000_000) * 1_000_000),
        }
    }

    /// Logs `r` at `now_us`; `sample` is the thread's sampling stream (drawn only with a
    /// sampling rate, as pgbench does).
    pub fn log(&mut self, r: &TxRecord, now_us: i64, sample: &mut PgPrng) {
        if self.sampling_rate != 0.0 && sample.double() > self.sampling_rate {
            return;
        }
        if self.interval_us > 0 {
            self.flush_until(now_us);
            self.agg.add(r, self.fields.throttled);
        } else {
            let line = transaction_line(r, now_us, self.fields);
            let _ = writeln!(self.out, "{line}");
        }
    }

    /// Writes every interval that ended by `now_us` (empty ones included).
    fn flush_until(&mut self, now_us: i64) {
        while self.agg.start_us + self.interval_us <= now_us {
            let line = self.agg.line(self.fields);
            let _ = writeln!(self.out, "{line}");
            self.agg = Interval::starting(self.agg.start_us + self.interval_us);
        }
    }

    /// At the thread's end: the intervals complete by `now_us` (the one in progress is not
    /// written, as in pgbench), then the file is flushed.
    pub fn finish(mut self, now_us: i64, sample: &mut PgPrng) -> std::io::Result<()> {
        let sampled_out = self.sampling_rate != 0.0 && sample.double() > self.sampling_rate;
        if self.interval_us > 0 && !sampled_out {
            self.flush_until(now_us);
        }
        self.out.flush()
    }
}

/// Unix epoch microseconds now.
pub fn epoch_us() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

#[cfg(test)]
mod tests;
