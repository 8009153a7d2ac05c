//! What the WAL of a measured window holds: the build's `pg_waldump --stats` over the LSN
//! range, run as the PostgreSQL user on the run's WAL directory, parsed for its `Total` line
//! (records, record bytes, full-page-image bytes).
//!
//! The range can only be read while its segments exist: a checkpoint inside the window may
//! recycle the segments before its redo point, and then the range is [`WalRange::Unreadable`]
//! with the tool's reason (the coordinator falls back to pg_stat_wal's FPI count).

use std::time::Duration;

use crate::cluster::Cluster;
use crate::error::AgentError;
use crate::process::Cmd;

const WALDUMP_TIMEOUT: Duration = Duration::from_secs(10 * 60);

/// The `Total` line of `pg_waldump --stats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WalTotals {
    pub records: u64,
    pub record_bytes: u64,
    pub fpi_bytes: u64,
}

/// The outcome of reading a range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WalRange {
    Read(WalTotals),
    /// pg_waldump could not read the whole range; why.
    Unreadable(String),
}

/// An LSN in PostgreSQL's text form (`16/B374D848`).
pub fn lsn_text(lsn: u64) -> String {
    format!("{:X}/{:X}", lsn >> 32, lsn & 0xffff_ffff)
}

/// Reads [start, end) of the run's WAL. A range the tool cannot read is `Unreadable`, not
/// an error; an empty or inverted range is refused.
pub async fn read_range(c: &Cluster, start: u64, end: u64) -> Result<WalRange, AgentError> {
    if start == 0 || end <= start {
        return Err(AgentError::invalid(
            "start_lsn_bytes",
            format!("the WAL range {start}..{end} is empty"),
        ));
    }
    let log = c.run_dir.join("waldump.log");
    let _ = std::fs::remove_file(&log);
    let res = Cmd::new(
        "pg_waldump",
        c.install.join("bin/pg_waldump"),
        WALDUMP_TIMEOUT,
    )
    .arg("--stats")
    .arg("-p")
    .arg(c.data_dir.join("pg_wal"))
    .args(["-s", &lsn_text(start), "-e", &lsn_text(end)])
    .cwd(&c.run_dir)
    .env("HOME", &c.run_dir.to_string_lossy())
    .run_as(Some(&c.run_as))
    .run_logged(&log)
    .await;
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);
    Ok(match (res, parse_totals(&text)) {
        (Ok(()), Some(t)) => WalRange::Read(t),
        (Ok(()), None) => WalRange::Unreadable("pg_waldump printed no Total line".into()),
        (Err(e), _) => {
            let why = text
                .lines()
                .find(|l| l.contains("error") || l.contains("could not"))
                .map(str::to_string)
                .unwrap_or_else(|| e.to_string());
            tracing::info!(run_id = %c.run_id, reason = %why, "the window's WAL is not readable");
            WalRange::Unreadable(why)
        }
    })
}

/// `Total  <n>  <record bytes> [..%]  <fpi bytes> [..%]  <combined> [100%]`.
pub fn parse_totals(text: &str) -> Option<WalTotals> {
    let line = text.lines().find(|l| l.trim_start().starts_with("Total"))?;
    let nums: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter(|t| !t.starts_with('['))
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    match nums[..] {
        [records, record_bytes, fpi_bytes, _combined] => Some(WalTotals {
            records,
            record_bytes,
            fpi_bytes,
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lsns_read_as_postgres_writes_them() {
        assert_eq!(lsn_text(0x16_B374_D848), "16/B374D848");
        assert_eq!(lsn_text(0x0100_0028), "0/1000028");
    }

    #[test]
    fn the_total_line_gives_records_and_fpi_bytes() {
        let out = "\
Type                                           N      (%)          Record size      (%)             FPI size      (%)        Combined size      (%)
----                                           -      ---          -----------      ---             --------      ---        -------------      ---
XLOG                                           2 (  0.01)                  228 (  0.01)                16384 (  1.20)                16612 (  0.50)
Heap                                       20000 ( 99.99)              1500000 ( 99.99)              1350000 ( 98.80)              2850000 ( 99.50)
                                        --------                      --------                      --------                      --------
Total                                      20002                       1500228 [52.63%]              1366384 [47.37%]              2866612 [100%]
";
        assert_eq!(
            parse_totals(out),
            Some(WalTotals {
                records: 20002,
                record_bytes: 1_500_228,
                fpi_bytes: 1_366_384,
            })
        );
        assert_eq!(parse_totals("pg_waldump: error: could not find file"), None);
    }
}
