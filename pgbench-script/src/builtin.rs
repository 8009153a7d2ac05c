//! pgbench's built-in scripts, kept as the exact text pgbench 15 runs (they go through the
//! same parser as script files), and the query protocols.

use std::str::FromStr;

/// Rows per scale unit, as in pgbench.
pub const NBRANCHES: i64 = 1;
pub const NTELLERS: i64 = 10;
pub const NACCOUNTS: i64 = 100_000;
/// From this scale on, pgbench declares account ids as bigint.
pub const SCALE_32BIT_THRESHOLD: u32 = 20_000;

/// One of pgbench's built-in scripts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Builtin {
    TpcbLike,
    SimpleUpdate,
    SelectOnly,
}

const TPCB_LIKE: &str = "\\set aid random(1, 100000 * :scale)\n\
\\set bid random(1, 1 * :scale)\n\
\\set tid random(1, 10 * :scale)\n\
\\set delta random(-5000, 5000)\n\
BEGIN;\n\
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;\n\
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n\
UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;\n\
UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;\n\
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);\n\
END;\n";

const SIMPLE_UPDATE: &str = "\\set aid random(1, 100000 * :scale)\n\
\\set bid random(1, 1 * :scale)\n\
\\set tid random(1, 10 * :scale)\n\
\\set delta random(-5000, 5000)\n\
BEGIN;\n\
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;\n\
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n\
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);\n\
END;\n";

const SELECT_ONLY: &str = "\\set aid random(1, 100000 * :scale)\n\
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n";

impl Builtin {
    pub const ALL: [Builtin; 3] = [
        Builtin::TpcbLike,
        Builtin::SimpleUpdate,
        Builtin::SelectOnly,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Builtin::TpcbLike => "tpcb-like",
            Builtin::SimpleUpdate => "simple-update",
            Builtin::SelectOnly => "select-only",
        }
    }

    /// What pgbench prints as "transaction type".
    pub fn description(self) -> &'static str {
        match self {
            Builtin::TpcbLike => "<builtin: TPC-B (sort of)>",
            Builtin::SimpleUpdate => "<builtin: simple update>",
            Builtin::SelectOnly => "<builtin: select only>",
        }
    }

    /// The script text exactly as pgbench 15 defines it.
    pub fn script_text(self) -> &'static str {
        match self {
            Builtin::TpcbLike => TPCB_LIKE,
            Builtin::SimpleUpdate => SIMPLE_UPDATE,
            Builtin::SelectOnly => SELECT_ONLY,
        }
    }
}

impl FromStr for Builtin {
    type Err = String;

    /// Like pgbench, an unambiguous prefix selects a script (`-b select`).
    fn from_str(s: &str) -> Result<Self, String> {
        if s.is_empty() {
            return Ok(Builtin::TpcbLike);
        }
        let found: Vec<Builtin> = Self::ALL
            .into_iter()
            .filter(|b| b.name().starts_with(s))
            .collect();
        match found.as_slice() {
            [one] => Ok(*one),
            [] => Err(format!(
                "no builtin script found for name \"{s}\" (tpcb-like, simple-update, select-only)"
            )),
            _ => Err(format!("ambiguous builtin name \"{s}\"")),
        }
    }
}

/// How statements are sent, as pgbench's `-M`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    Simple,
    Extended,
    Prepared,
}

impl Protocol {
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Simple => "simple",
            Protocol::Extended => "extended",
            Protocol::Prepared => "prepared",
        }
    }
}

impl FromStr for Protocol {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "" | "simple" => Ok(Protocol::Simple),
            "extended" => Ok(Protocol::Extended),
            "prepared" => Ok(Protocol::Prepared),
            other => Err(format!(
                "invalid query mode \"{other}\" (simple, extended, prepared)"
            )),
        }
    }
}

#[cfg(test)]
mod tests;
