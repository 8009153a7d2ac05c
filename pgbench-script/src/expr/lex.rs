//! The tokens of pgbench's expression language (as its flex scanner defines them):
//! operators, keywords (case-insensitive), `:variables`, function names, integers,
//! doubles and the special 9223372036854775808 that only a unary minus may precede.

use super::error::ExprError;

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Tok {
    Op(&'static str),
    And,
    Or,
    Not,
    Is,
    IsNull,
    NotNull,
    Case,
    When,
    Then,
    Else,
    End,
    Null,
    Bool(bool),
    Int(i64),
    MaxIntPlusOne,
    Double(f64),
    Var(String),
    Func(String),
    Eof,
}

const OPS: [&str; 21] = [
    "<>", "!=", "<=", ">=", "<<", ">>", "+", "-", "*", "/", "%", "=", "<", ">", "|", "&", "#", "~",
    "(", ")", ",",
];

fn is_alpha(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c >= 0x80
}

fn is_alnum(c: u8) -> bool {
    is_alpha(c) || c.is_ascii_digit()
}

pub(crate) struct Lexer<'a> {
    pub s: &'a [u8],
    pub pos: usize,
    /// Offset of the last byte of the last token returned.
    pub last: usize,
}

impl Lexer<'_> {
    fn error(&self, msg: &str, more: Option<String>, offset: usize) -> ExprError {
        ExprError {
            msg: msg.into(),
            more,
            offset,
        }
    }

    fn skip_space(&mut self) {
        while self.pos < self.s.len() {
            match self.s[self.pos] {
                b' ' | b'\t' | b'\r' | 0x0b | 0x0c => self.pos += 1,
                b'\\' if self.s[self.pos + 1..].starts_with(b"\n") => self.pos += 2,
                b'\\' if self.s[self.pos + 1..].starts_with(b"\r\n") => self.pos += 3,
                _ => break,
            }
        }
    }

    pub fn next(&mut self) -> Result<Tok, ExprError> {
        self.skip_space();
        let s = self.s;
        let start = self.pos;
        if start >= s.len() || s[start] == b'\n' {
            self.last = start;
            return Ok(Tok::Eof);
        }
        let c = s[start];
        let tok = if c.is_ascii_digit()
            || (c == b'.' && s.get(start + 1).is_some_and(u8::is_ascii_digit))
        {
            self.number()?
        } else if c == b':' && s.get(start + 1).is_some_and(|&n| is_alnum(n)) {
            let mut e = start + 1;
            while e < s.len() && is_alnum(s[e]) {
                e += 1;
            }
            self.pos = e;
            Tok::Var(String::from_utf8_lossy(&s[start + 1..e]).into_owned())
        } else if is_alpha(c) {
            let mut e = start;
            while e < s.len() && is_alnum(s[e]) {
                e += 1;
            }
            self.pos = e;
            let word = String::from_utf8_lossy(&s[start..e]).into_owned();
            keyword(&word).unwrap_or(Tok::Func(word))
        } else if let Some(op) = OPS.iter().find(|op| s[start..].starts_with(op.as_bytes())) {
            self.pos += op.len();
            Tok::Op(if *op == "!=" { "<>" } else { op })
        } else {
            let ch_len = std::str::from_utf8(&s[start..])
                .ok()
                .and_then(|t| t.chars().next())
                .map_or(1, char::len_utf8);
            let ch = String::from_utf8_lossy(&s[start..start + ch_len]).into_owned();
            return Err(self.error("unexpected character", Some(ch), start));
        };
        self.last = self.pos - 1;
        Ok(tok)
    }

    fn number(&mut self) -> Result<Tok, ExprError> {
        let s = self.s;
        let start = self.pos;
        let digits = |mut i: usize| {
            while i < s.len() && s[i].is_ascii_digit() {
                i += 1;
            }
            i
        };
        let mut e = digits(start);
        let int_end = e;
        let mut is_double = false;
        if e < s.len() && s[e] == b'.' {
            e = digits(e + 1);
            is_double = true;
        }
        if e < s.len() && (s[e] == b'e' || s[e] == b'E') {
            let mut x = e + 1;
            if x < s.len() && (s[x] == b'+' || s[x] == b'-') {
                x += 1;
            }
            let xe = digits(x);
            if xe > x {
                e = xe;
                is_double = true;
            }
        }
        // A number starting with '.' needs digits after it ("." alone is not a number).
        if start == int_end && e == start + 1 {
            return Err(self.error("unexpected character", Some(".".into()), start));
        }
        self.pos = e;
        let text = std::str::from_utf8(&s[start..e]).unwrap_or("0");
        if !is_double {
            if text == "9223372036854775808" {
                return Ok(Tok::MaxIntPlusOne);
            }
            return text
                .parse()
                .map(Tok::Int)
                .map_err(|_| self.error("bigint constant overflow", Some(text.into()), e - 1));
        }
        match text.parse::<f64>() {
            Ok(d) if d.is_finite() => Ok(Tok::Double(d)),
            _ => Err(self.error("double constant overflow", Some(text.into()), e - 1)),
        }
    }
}

fn keyword(w: &str) -> Option<Tok> {
    let lw = w.to_ascii_lowercase();
    Some(match lw.as_str() {
        "and" => Tok::And,
        "or" => Tok::Or,
        "not" => Tok::Not,
        "is" => Tok::Is,
        "isnull" => Tok::IsNull,
        "notnull" => Tok::NotNull,
        "case" => Tok::Case,
        "when" => Tok::When,
        "then" => Tok::Then,
        "else" => Tok::Else,
        "end" => Tok::End,
        "null" => Tok::Null,
        "true" => Tok::Bool(true),
        "false" => Tok::Bool(false),
        _ => return None,
    })
}
