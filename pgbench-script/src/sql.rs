//! Splitting script text into SQL commands and meta-commands (a small version of psql's
//! lexer: quotes, dollar quotes, comments and parentheses hide `;` and `\`), and the
//! `:name` variable references of an SQL command, found as pgbench finds them.

use crate::vars::{Symbols, VarId, Variables};

/// `\gset` or `\aset` attached to the SQL command before it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ResultSet {
    Gset(String),
    Aset(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Piece {
    Sql { text: String, line: usize },
    Meta { text: String, line: usize },
}

/// Most parameters one statement may take, as in pgbench (MAX_ARGS - 1).
pub const MAX_PARAMS: usize = 255;

fn skip_leading(sql: &str) -> &str {
    let mut s = sql;
    loop {
        let t = s.trim_start();
        if let Some(rest) = t.strip_prefix("--") {
            s = rest.split_once('\n').map_or("", |(_, r)| r);
        } else {
            return t;
        }
    }
}

/// Splits a script into its SQL and backslash pieces, with 1-based line numbers.
pub fn scan_sql(text: &str) -> Vec<Piece> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut buf = String::new();
    let mut buf_line = 1;
    let mut line = 1;
    let mut depth = 0i32;
    let mut i = 0;
    let flush = |buf: &mut String, out: &mut Vec<Piece>, l: usize| {
        let body = skip_leading(buf).trim_end();
        if !body.is_empty() {
            out.push(Piece::Sql {
                text: body.to_string(),
                line: l,
            });
        }
        buf.clear();
    };
    while i < b.len() {
        if skip_leading(&buf).is_empty() {
            buf_line = line;
        }
        let c = b[i];
        let take_until = |from: usize, end: &[u8]| -> usize {
            let mut j = from;
            while j < b.len() && !b[j..].starts_with(end) {
                j += 1;
            }
            (j + end.len()).min(b.len())
        };
        let next = match c {
            b'\'' | b'"' => take_until(i + 1, &[c]),
            b'-' if b.get(i + 1) == Some(&b'-') => b[i..]
                .iter()
                .position(|&x| x == b'\n')
                .map_or(b.len(), |p| i + p),
            b'/' if b.get(i + 1) == Some(&b'*') => take_until(i + 2, b"*/"),
            b'$' if i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_') => {
                let tag_end = b[i + 1..]
                    .iter()
                    .position(|&x| !(x.is_ascii_alphanumeric() || x == b'_' || x >= 0x80))
                    .map(|p| i + 1 + p);
                match tag_end {
                    Some(e) if b[e] == b'$' && !b.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                        let tag = &b[i..=e];
                        take_until(e + 1, tag)
                    }
                    _ => i + 1,
                }
            }
            b'(' => {
                depth += 1;
                i + 1
            }
            b')' => {
                depth -= 1;
                i + 1
            }
            b';' if depth <= 0 => {
                buf.push(';');
                flush(&mut buf, &mut out, buf_line);
                i += 1;
                continue;
            }
            b'\\' if b.get(i + 1) == Some(&b';') => {
                buf.push(';');
                i += 2;
                continue;
            }
            b'\\' => {
                flush(&mut buf, &mut out, buf_line);
                let start = i;
                let meta_line = line;
                let mut j = i + 1;
                while j < b.len() && b[j] != b'\n' {
                    if b[j] == b'\\' && b.get(j + 1) == Some(&b'\n') {
                        j += 1;
                        line += 1;
                    } else if b[j] == b'\\' && b[j + 1..].starts_with(b"\r\n") {
                        j += 2;
                        line += 1;
                    }
                    j += 1;
                }
                out.push(Piece::Meta {
                    text: text[start..j].to_string(),
                    line: meta_line,
                });
                depth = 0;
                i = j;
                continue;
            }
            // Whole characters, so slicing stays on UTF-8 boundaries.
            _ => i + text[i..].chars().next().map_or(1, char::len_utf8),
        };
        let next = next.max(i + 1).min(b.len());
        let chunk = &text[i..next];
        line += chunk.bytes().filter(|&x| x == b'\n').count();
        buf.push_str(chunk);
        i = next;
    }
    flush(&mut buf, &mut out, buf_line);
    out
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Segment {
    Literal(String),
    /// A variable and the `:name` text kept when it is undefined.
    Var(VarId, String),
}

/// One SQL command of a script.
#[derive(Clone, Debug)]
pub struct SqlCommand {
    pub text: String,
    /// Its first line (at most 127 bytes), as pgbench shows it.
    pub first_line: String,
    pub segments: Vec<Segment>,
    /// The text with each reference replaced by `$1`, `$2`, ... (extended, prepared).
    pub param_sql: String,
    pub params: Vec<VarId>,
    pub result_set: Option<ResultSet>,
}

fn var_len(s: &[u8]) -> usize {
    let ok_first = |c: u8| c.is_ascii_alphabetic() || c == b'_' || c >= 0x80;
    if !s.first().is_some_and(|&c| ok_first(c)) {
        return 0;
    }
    s.iter()
        .position(|&c| !(ok_first(c) || c.is_ascii_digit()))
        .unwrap_or(s.len())
}

impl SqlCommand {
    pub fn new(text: &str, symbols: &mut Symbols) -> Result<SqlCommand, String> {
        let b = text.as_bytes();
        let (mut segments, mut params) = (Vec::new(), Vec::new());
        let mut param_sql = String::with_capacity(text.len());
        let (mut lit_start, mut i) = (0, 0);
        while let Some(p) = b[i..].iter().position(|&c| c == b':').map(|p| p + i) {
            let n = var_len(&b[p + 1..]);
            if n == 0 {
                i = p + b[p..].iter().take_while(|&&c| c == b':').count();
                continue;
            }
            if params.len() >= MAX_PARAMS {
                return Err(format!(
                    "statement has too many arguments (maximum is {MAX_PARAMS}): {text}"
                ));
            }
            let name = &text[p + 1..p + 1 + n];
            let id = symbols.intern(name);
            if p > lit_start {
                segments.push(Segment::Literal(text[lit_start..p].to_string()));
            }
            param_sql.push_str(&text[lit_start..p]);
            segments.push(Segment::Var(id, text[p..p + 1 + n].to_string()));
            params.push(id);
            param_sql.push_str(&format!("${}", params.len()));
            i = p + 1 + n;
            lit_start = i;
        }
        if lit_start < text.len() {
            segments.push(Segment::Literal(text[lit_start..].to_string()));
        }
        param_sql.push_str(&text[lit_start..]);
        let mut end = text.find(['\n', '\r']).unwrap_or(text.len()).min(127);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        Ok(SqlCommand {
            text: text.to_string(),
            first_line: text[..end].to_string(),
            segments,
            param_sql,
            params,
            result_set: None,
        })
    }

    /// The command with variable values substituted (simple protocol).
    pub fn interpolate(&self, vars: &Variables, out: &mut String) {
        for seg in &self.segments {
            match seg {
                Segment::Literal(s) => out.push_str(s),
                Segment::Var(id, raw) => {
                    if !vars.write_text(*id, out) {
                        out.push_str(raw);
                    }
                }
            }
        }
    }
}
