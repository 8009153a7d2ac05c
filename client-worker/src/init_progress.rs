//! pgbench's progress lines while `init` generates `pgbench_accounts` on the client, on
//! stderr: `J of N tuples (P%) done (elapsed E s, remaining R s)` every 100000 rows, or
//! with `-q` at most one every 5 seconds (checked every 100 rows) and at the last row. On a
//! terminal each line overwrites the previous one, as pgbench's do.

use std::io::{IsTerminal, Write};
use std::time::Instant;

/// Which progress lines `init` prints.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum InitProgress {
    /// None (the fleet's data load).
    #[default]
    Silent,
    /// Every 100000 rows (pgbench without `-q`).
    Rows,
    /// Every 5 seconds (`-q`).
    Quiet,
}

/// Seconds between `-q` lines (pgbench's LOG_STEP_SECONDS).
const STEP_SECONDS: f64 = 5.0;

pub(crate) struct Progress {
    mode: InitProgress,
    total: i64,
    start: Instant,
    interval: f64,
    prev_chars: usize,
    eol: char,
}

impl Progress {
    pub fn new(mode: InitProgress, total: i64) -> Progress {
        Progress {
            mode,
            total,
            start: Instant::now(),
            interval: 1.0,
            prev_chars: 0,
            eol: if std::io::stderr().is_terminal() {
                '\r'
            } else {
                '\n'
            },
        }
    }

    /// After row `j` (1-based).
    pub fn row(&mut self, j: i64) {
        match self.mode {
            InitProgress::Silent => {}
            InitProgress::Rows if j % 100_000 == 0 => self.line(j),
            InitProgress::Quiet if j % 100 == 0 => {
                let elapsed = self.start.elapsed().as_secs_f64();
                if j == self.total || elapsed >= self.interval * STEP_SECONDS {
                    self.line(j);
                    self.interval = (elapsed / STEP_SECONDS).ceil();
                }
            }
            _ => {}
        }
    }

    fn line(&mut self, j: i64) {
        let elapsed = self.start.elapsed().as_secs_f64();
        let remaining = (self.total - j) as f64 * elapsed / j as f64;
        let text = format!(
            "{j} of {} tuples ({}%) done (elapsed {elapsed:.2} s, remaining {remaining:.2} s)",
            self.total,
            j * 100 / self.total
        );
        let pad = self.prev_chars.saturating_sub(text.len());
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "{text}{:pad$}{}", "", self.eol);
        self.prev_chars = text.len();
    }

    /// After the last row: a terminal's cursor goes to the next line.
    pub fn finish(&self) {
        if self.mode != InitProgress::Silent && self.eol != '\n' && self.prev_chars > 0 {
            eprintln!();
        }
    }
}
