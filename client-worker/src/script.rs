//! pgbench's built-in scripts, kept as the exact text pgbench 15 runs and parsed the way
//! pgbench reads a script: `\set` lines define random variables, every other line is one
//! SQL command whose `:name` references are interpolated (simple protocol) or become
//! `$n` parameters (extended and prepared protocols).

use std::fmt::Write as _;
use std::str::FromStr;

use rand::Rng;

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

    pub fn script(self) -> Script {
        Script::parse(self.script_text()).expect("built-in scripts parse")
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

/// A bound of `random(lo, hi)`: a constant, optionally multiplied by `:scale`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bound {
    pub constant: i64,
    pub times_scale: bool,
}

impl Bound {
    pub fn eval(self, scale: i64) -> i64 {
        if self.times_scale {
            self.constant * scale
        } else {
            self.constant
        }
    }
}

/// `\set name random(lo, hi)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VarDef {
    pub name: String,
    pub lo: Bound,
    pub hi: Bound,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Segment {
    Literal(String),
    Var(usize),
}

/// One SQL command of a script.
#[derive(Clone, Debug)]
pub struct SqlCommand {
    /// The line as written in the script, `:name` references included.
    pub text: String,
    pub segments: Vec<Segment>,
    /// The text with each reference replaced by `$1`, `$2`, ... in order of appearance.
    pub param_sql: String,
    /// For each `$n`, the index of the variable it takes.
    pub params: Vec<usize>,
}

impl SqlCommand {
    /// Appends the command with values substituted, as pgbench does for `-M simple`.
    pub fn interpolate(&self, values: &[i64], out: &mut String) {
        for seg in &self.segments {
            match seg {
                Segment::Literal(s) => out.push_str(s),
                Segment::Var(i) => {
                    let _ = write!(out, "{}", values[*i]);
                }
            }
        }
    }
}

#[derive(Clone, Debug)]
pub struct Script {
    pub vars: Vec<VarDef>,
    pub commands: Vec<SqlCommand>,
    /// The script wraps its commands in BEGIN ... END.
    pub transactional: bool,
}

/// Most parameters any command of a script may take.
pub const MAX_PARAMS: usize = 16;

impl Script {
    pub fn parse(text: &str) -> Result<Script, String> {
        let mut vars: Vec<VarDef> = Vec::new();
        let mut commands = Vec::new();
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
            if let Some(rest) = line.strip_prefix("\\set ") {
                vars.push(parse_set(rest)?);
            } else {
                commands.push(parse_sql(line, &vars)?);
            }
        }
        let transactional = commands
            .first()
            .is_some_and(|c| c.text.trim_end_matches(';').eq_ignore_ascii_case("begin"));
        Ok(Script {
            vars,
            commands,
            transactional,
        })
    }

    /// Draws every variable for one transaction into `out` (one slot per variable).
    pub fn draw(&self, rng: &mut impl Rng, scale: i64, out: &mut [i64]) {
        for (slot, var) in out.iter_mut().zip(&self.vars) {
            *slot = rng.random_range(var.lo.eval(scale)..=var.hi.eval(scale));
        }
    }

    /// Whether variable `i` can exceed a 32-bit integer at this scale (then bound as int8).
    pub fn var_is_bigint(&self, i: usize, scale: i64) -> bool {
        let v = &self.vars[i];
        v.hi.eval(scale) > i64::from(i32::MAX) || v.lo.eval(scale) < i64::from(i32::MIN)
    }
}

fn parse_set(rest: &str) -> Result<VarDef, String> {
    let (name, expr) = rest
        .trim()
        .split_once(char::is_whitespace)
        .ok_or_else(|| format!("\\set needs a name and an expression: {rest}"))?;
    let inner = expr
        .trim()
        .strip_prefix("random(")
        .and_then(|e| e.strip_suffix(')'))
        .ok_or_else(|| format!("only random(lo, hi) is supported in \\set: {expr}"))?;
    let (lo, hi) = inner
        .split_once(',')
        .ok_or_else(|| format!("random() needs two arguments: {expr}"))?;
    Ok(VarDef {
        name: name.to_string(),
        lo: parse_bound(lo)?,
        hi: parse_bound(hi)?,
    })
}

fn parse_bound(s: &str) -> Result<Bound, String> {
    let bad = || {
        format!(
            "unsupported bound \"{}\" (integer or integer * :scale)",
            s.trim()
        )
    };
    match s.split_once('*') {
        Some((c, v)) if v.trim() == ":scale" => Ok(Bound {
            constant: c.trim().parse().map_err(|_| bad())?,
            times_scale: true,
        }),
        Some(_) => Err(bad()),
        None => Ok(Bound {
            constant: s.trim().parse().map_err(|_| bad())?,
            times_scale: false,
        }),
    }
}

fn parse_sql(line: &str, vars: &[VarDef]) -> Result<SqlCommand, String> {
    let mut segments = Vec::new();
    let mut params = Vec::new();
    let mut param_sql = String::new();
    let mut literal = String::new();
    let mut in_quote = false;
    let mut chars = line.char_indices().peekable();
    while let Some((pos, c)) = chars.next() {
        if c == '\'' {
            in_quote = !in_quote;
        }
        if c != ':' || in_quote {
            literal.push(c);
            continue;
        }
        if chars.peek().is_some_and(|&(_, n)| n == ':') {
            // a type cast (`::`), not a variable
            chars.next();
            literal.push_str("::");
            continue;
        }
        let rest = &line[pos + 1..];
        let len = rest
            .find(|ch: char| !(ch.is_alphanumeric() || ch == '_'))
            .unwrap_or(rest.len());
        if len == 0 {
            literal.push(':');
            continue;
        }
        let name = &rest[..len];
        let idx = vars
            .iter()
            .position(|v| v.name == name)
            .ok_or_else(|| format!("undefined variable \"{name}\" in: {line}"))?;
        for _ in 0..name.chars().count() {
            chars.next();
        }
        param_sql.push_str(&literal);
        segments.push(Segment::Literal(std::mem::take(&mut literal)));
        segments.push(Segment::Var(idx));
        params.push(idx);
        let _ = write!(param_sql, "${}", params.len());
    }
    if params.len() > MAX_PARAMS {
        return Err(format!("too many variable references in: {line}"));
    }
    param_sql.push_str(&literal);
    segments.push(Segment::Literal(literal));
    segments.retain(|s| !matches!(s, Segment::Literal(l) if l.is_empty()));
    Ok(SqlCommand {
        text: line.to_string(),
        segments,
        param_sql,
        params,
    })
}

#[cfg(test)]
#[path = "script_tests.rs"]
mod tests;
