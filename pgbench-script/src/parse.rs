//! Reading a pgbench script: SQL commands end at `;` (outside quotes, comments and
//! parentheses) and may span lines; backslash meta-commands run to the end of the line
//! (`\` + newline continues it). Errors read like pgbench's, naming file, line and column.

// A script error is built once, at parse time: its size does not matter.
#![allow(clippy::result_large_err)]

use std::fmt;

use crate::expr::{Expr, parse_expr};
pub use crate::sql::ResultSet;
use crate::sql::{Piece, SqlCommand, scan_sql};
use crate::vars::{Symbols, VarId};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SleepArg {
    Micros(i64),
    /// `:var` times the unit in microseconds.
    Var(VarId, i64),
}

#[derive(Clone, Debug)]
pub enum Command {
    Sql(SqlCommand),
    Set(VarId, Expr),
    Sleep(SleepArg),
    /// Jump to `next` (the following \elif, \else or \endif) when false.
    If(Expr, usize),
    /// Reached in sequence: jump to `end`; reached by a jump: test like \if.
    Elif(Expr, usize, usize),
    Else(usize),
    Endif,
    StartPipeline,
    /// `\syncpipeline`: inside a pipeline, send a Sync (the commands before it end there).
    SyncPipeline,
    EndPipeline,
    Shell(Vec<String>),
    SetShell(String, Vec<String>),
}

/// A parsed command and the text shown for it (`-r`, errors).
#[derive(Clone, Debug)]
pub struct Step {
    pub command: Command,
    pub line: usize,
    pub text: String,
}

#[derive(Clone, Debug)]
pub struct ParsedScript {
    pub name: String,
    pub steps: Vec<Step>,
}

impl ParsedScript {
    pub fn uses_shell(&self) -> Option<usize> {
        self.steps
            .iter()
            .find(|s| matches!(s.command, Command::Shell(_) | Command::SetShell(..)))
            .map(|s| s.line)
    }
}

/// A script error, displayed as pgbench displays it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct ScriptError {
    pub file: String,
    pub line: usize,
    pub msg: String,
    pub more: Option<String>,
    pub command: Option<String>,
    /// The command's line and the 0-based column of the error in it.
    pub context: Option<(String, Option<usize>)>,
    pub column: Option<usize>,
}

impl fmt::Display for ScriptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            return f.write_str(&self.msg);
        }
        write!(f, "{}:{}: {}", self.file, self.line, self.msg)?;
        if let Some(m) = &self.more {
            write!(f, " ({m})")?;
        }
        if let (Some(c), None) = (self.column, &self.context) {
            write!(f, " at column {}", c + 1)?;
        }
        if let Some(c) = &self.command {
            write!(f, " in command \"{c}\"")?;
        }
        if let Some((text, col)) = &self.context {
            write!(f, "\n{text}")?;
            if let Some(c) = col {
                write!(f, "\n{:>w$} error found here", '^', w = c + 1)?;
            }
        }
        Ok(())
    }
}

/// pgbench's MAX_ARGS: the words of a meta-command, its name included.
pub const MAX_SHELL_WORDS: usize = 256;

struct Meta<'a> {
    source: &'a str,
    line: usize,
    text: String,
    words: Vec<(String, usize)>,
}

impl Meta<'_> {
    fn error(
        &self,
        msg: &str,
        more: Option<String>,
        col: Option<usize>,
        with_line: bool,
    ) -> ScriptError {
        ScriptError {
            file: self.source.to_string(),
            line: self.line,
            msg: msg.into(),
            more,
            command: Some(self.words[0].0.clone()),
            context: with_line.then(|| (self.text.clone(), col)),
            column: col,
        }
    }
}

/// Splits a meta-command into words with their offsets; continuations are blanks.
fn words(text: &str) -> Vec<(String, usize)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 1; // after the backslash
    while i < b.len() {
        while i < b.len()
            && (b[i].is_ascii_whitespace() || (b[i] == b'\\' && b.get(i + 1) == Some(&b'\n')))
        {
            i += if b[i] == b'\\' { 2 } else { 1 };
        }
        let start = i;
        while i < b.len()
            && !b[i].is_ascii_whitespace()
            && !(b[i] == b'\\' && b.get(i + 1) == Some(&b'\n'))
        {
            i += 1;
        }
        if i > start {
            out.push((text[start..i].to_string(), start));
        }
    }
    out
}

/// Parses `text` (named `source` in errors), interning variable names into `symbols`.
pub fn parse_script(
    source: &str,
    text: &str,
    symbols: &mut Symbols,
) -> Result<ParsedScript, ScriptError> {
    let mut steps: Vec<Step> = Vec::new();
    for piece in scan_sql(text) {
        match piece {
            Piece::Sql { text: sql, line } => {
                let cmd = SqlCommand::new(&sql, symbols).map_err(|msg| ScriptError {
                    file: source.into(),
                    line: 0,
                    msg,
                    more: None,
                    command: None,
                    context: None,
                    column: None,
                })?;
                let shown = cmd.first_line.clone();
                steps.push(Step {
                    command: Command::Sql(cmd),
                    line,
                    text: shown,
                });
            }
            Piece::Meta { text: mt, line } => {
                let meta = Meta {
                    source,
                    line,
                    words: words(&mt),
                    text: mt.trim_end_matches('\n').to_string(),
                };
                if meta.words.is_empty() {
                    continue;
                }
                let name = meta.words[0].0.to_ascii_lowercase();
                if name == "gset" || name == "aset" {
                    attach_gset(&meta, &name, &mut steps)?;
                    continue;
                }
                let command = meta_command(&meta, &name, symbols)?;
                steps.push(Step {
                    command,
                    line,
                    text: meta.text.clone(),
                });
            }
        }
    }
    link_conditionals(source, &mut steps)?;
    Ok(ParsedScript {
        name: source.to_string(),
        steps,
    })
}

fn attach_gset(meta: &Meta<'_>, name: &str, steps: &mut [Step]) -> Result<(), ScriptError> {
    if meta.words.len() > 2 {
        return Err(meta.error("too many arguments", None, None, true));
    }
    let plain = |more| ScriptError {
        file: meta.source.into(),
        line: meta.line,
        msg: "\\gset must follow an SQL command".into(),
        more,
        command: None,
        context: None,
        column: None,
    };
    let Some(last) = steps.last_mut() else {
        return Err(plain(None));
    };
    let first_line = last.text.clone();
    let Command::Sql(cmd) = &mut last.command else {
        return Err(plain(Some(first_line)));
    };
    if cmd.result_set.is_some() {
        return Err(plain(Some(first_line)));
    }
    let prefix = meta.words.get(1).map(|w| w.0.clone()).unwrap_or_default();
    cmd.result_set = Some(if name == "gset" {
        ResultSet::Gset(prefix)
    } else {
        ResultSet::Aset(prefix)
    });
    Ok(())
}

fn meta_command(m: &Meta<'_>, name: &str, symbols: &mut Symbols) -> Result<Command, ScriptError> {
    let w = &m.words;
    let expr_at = |start: usize, symbols: &mut Symbols| -> Result<Expr, ScriptError> {
        parse_expr(&m.text, start, symbols)
            .map_err(|e| m.error(&e.msg, e.more, Some(e.offset), true))
    };
    Ok(match name {
        "set" => {
            let Some((var, off)) = w.get(1) else {
                return Err(m.error("missing argument", None, None, false));
            };
            let id = symbols.intern(var);
            Command::Set(id, expr_at(off + var.len(), symbols)?)
        }
        "if" | "elif" => {
            let start = w[0].1 + w[0].0.len();
            let e = expr_at(start, symbols)?;
            if name == "if" {
                Command::If(e, 0)
            } else {
                Command::Elif(e, 0, 0)
            }
        }
        "sleep" => sleep(m, symbols)?,
        // The command word plus at most MAX_ARGS - 1 = 255 arguments, as pgbench.
        "setshell" | "shell" if w.len() > MAX_SHELL_WORDS => {
            return Err(m.error("too many arguments", None, None, true));
        }
        "setshell" if w.len() < 3 => return Err(m.error("missing argument", None, None, true)),
        "setshell" => {
            Command::SetShell(w[1].0.clone(), w[2..].iter().map(|x| x.0.clone()).collect())
        }
        "shell" if w.len() < 2 => return Err(m.error("missing command", None, None, true)),
        "shell" => Command::Shell(w[1..].iter().map(|x| x.0.clone()).collect()),
        "else" | "endif" | "startpipeline" | "syncpipeline" | "endpipeline" => {
            if w.len() != 1 {
                return Err(m.error("unexpected argument", None, None, true));
            }
            match name {
                "else" => Command::Else(0),
                "endif" => Command::Endif,
                "startpipeline" => Command::StartPipeline,
                "syncpipeline" => Command::SyncPipeline,
                _ => Command::EndPipeline,
            }
        }
        _ => return Err(m.error("invalid command", None, None, true)),
    })
}

fn sleep(m: &Meta<'_>, symbols: &mut Symbols) -> Result<Command, ScriptError> {
    let w = &m.words;
    if w.len() < 2 {
        return Err(m.error("missing argument", None, None, true));
    }
    if w.len() > 3 {
        return Err(m.error("too many arguments", None, Some(w[3].1), true));
    }
    let (arg, arg_off) = (&w[1].0, w[1].1);
    let mut unit = w.get(2).map(|u| (u.0.clone(), u.1));
    let mut number = arg.clone();
    if !arg.starts_with(':') {
        let body = arg.strip_prefix(['+', '-']).unwrap_or(arg);
        let digits = body.bytes().take_while(u8::is_ascii_digit).count();
        let split = arg.len() - body.len() + digits;
        if split < arg.len() {
            if w.len() == 2 && digits > 0 {
                unit = Some((arg[split..].to_string(), arg_off + split));
                number = arg[..split].to_string();
            } else {
                return Err(m.error(
                    "invalid sleep time, must be an integer",
                    Some(arg.clone()),
                    Some(arg_off),
                    true,
                ));
            }
        }
    }
    let scale = match unit {
        None => 1_000_000,
        Some((u, off)) => match u.to_ascii_lowercase().as_str() {
            "us" => 1,
            "ms" => 1_000,
            "s" => 1_000_000,
            _ => {
                return Err(m.error(
                    "unrecognized time unit, must be us, ms or s",
                    Some(u),
                    Some(off),
                    true,
                ));
            }
        },
    };
    Ok(Command::Sleep(match number.strip_prefix(':') {
        Some(var) => SleepArg::Var(symbols.intern(var), scale),
        // atoi semantics: a bare sign is 0
        None => SleepArg::Micros(number.parse::<i64>().unwrap_or(0).saturating_mul(scale)),
    }))
}

/// Checks \if structure like pgbench and records each branch's jump targets.
fn link_conditionals(source: &str, steps: &mut [Step]) -> Result<(), ScriptError> {
    let fail = |n: usize, msg: &str| ScriptError {
        file: source.into(),
        line: 0,
        msg: format!("condition error in script \"{source}\" command {n}: {msg}"),
        more: None,
        command: None,
        context: None,
        column: None,
    };
    // For each open \if: indexes of its \if/\elif/\else commands, and whether \else was seen.
    let mut stack: Vec<(Vec<usize>, bool)> = Vec::new();
    for i in 0..steps.len() {
        match steps[i].command {
            Command::If(..) => stack.push((vec![i], false)),
            Command::Elif(..) | Command::Else(_) => {
                let is_else = matches!(steps[i].command, Command::Else(_));
                let word = if is_else { "\\else" } else { "\\elif" };
                let Some(top) = stack.last_mut() else {
                    return Err(fail(i + 1, &format!("{word} without matching \\if")));
                };
                if top.1 {
                    return Err(fail(i + 1, &format!("{word} after \\else")));
                }
                top.0.push(i);
                top.1 = is_else;
            }
            Command::Endif => {
                let Some((branches, _)) = stack.pop() else {
                    return Err(fail(i + 1, "\\endif without matching \\if"));
                };
                for (k, &b) in branches.iter().enumerate() {
                    let next = branches.get(k + 1).copied().unwrap_or(i);
                    match &mut steps[b].command {
                        Command::If(_, n) => *n = next,
                        Command::Elif(_, n, end) => (*n, *end) = (next, i),
                        Command::Else(end) => *end = i,
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    if !stack.is_empty() {
        return Err(fail(steps.len() + 1, "\\if without matching \\endif"));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
