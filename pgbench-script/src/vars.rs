//! Script variables as pgbench keeps them: a value is held either as a typed value
//! (from `\set`) or as a string (from `-D`, `\gset`, `\setshell`) converted on first use.
//! Names are interned into ids when scripts are parsed, so lookups during a run are
//! indexed; `\gset` may add names at run time.

use std::collections::HashMap;

use crate::value::{EvalError, Value};

pub type VarId = usize;

/// The names of all variables scripts mention, each with a stable id.
#[derive(Clone, Debug, Default)]
pub struct Symbols {
    names: Vec<String>,
    ids: HashMap<String, VarId>,
}

impl Symbols {
    pub fn intern(&mut self, name: &str) -> VarId {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let id = self.names.len();
        self.names.push(name.to_string());
        self.ids.insert(name.to_string(), id);
        id
    }

    pub fn get(&self, name: &str) -> Option<VarId> {
        self.ids.get(name).copied()
    }

    pub fn name(&self, id: VarId) -> &str {
        &self.names[id]
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

#[derive(Clone, Debug)]
enum Slot {
    Unset,
    Text(String, Option<Value>),
    Val(Value),
}

/// One client's variables.
#[derive(Clone, Debug)]
pub struct Variables {
    symbols: Symbols,
    slots: Vec<Slot>,
}

/// Whether `name` is a valid variable name: letters, digits, `_` and non-ASCII, not
/// starting with a digit.
pub fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' || !c.is_ascii() => {}
        _ => return false,
    }
    chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || !c.is_ascii())
}

impl Variables {
    pub fn new(symbols: Symbols) -> Variables {
        let slots = vec![Slot::Unset; symbols.len()];
        Variables { symbols, slots }
    }

    pub fn symbols(&self) -> &Symbols {
        &self.symbols
    }

    pub fn is_set(&self, id: VarId) -> bool {
        !matches!(self.slots.get(id), None | Some(Slot::Unset))
    }

    pub fn set_value(&mut self, id: VarId, v: Value) {
        self.slots[id] = Slot::Val(v);
    }

    pub fn set_text(&mut self, id: VarId, s: String) {
        self.slots[id] = Slot::Text(s, None);
    }

    /// Sets a variable by name (adding it if new), as `-D`, `\gset` and `\setshell` do.
    pub fn set_text_by_name(&mut self, name: &str, s: String) -> Result<(), String> {
        if !valid_name(name) {
            return Err(format!("invalid variable name: \"{name}\""));
        }
        let id = self.symbols.intern(name);
        if id >= self.slots.len() {
            self.slots.resize(id + 1, Slot::Unset);
        }
        self.set_text(id, s);
        Ok(())
    }

    /// The typed value of a variable, converting its string form on first use.
    pub fn value(&mut self, id: VarId) -> Result<Value, EvalError> {
        match &mut self.slots[id] {
            Slot::Unset => Err(EvalError(format!(
                "undefined variable \"{}\"",
                self.symbols.name(id)
            ))),
            Slot::Val(v) => Ok(*v),
            Slot::Text(_, Some(v)) => Ok(*v),
            Slot::Text(s, cached) => {
                let v = parse_value(self.symbols.name(id), s)?;
                *cached = Some(v);
                Ok(v)
            }
        }
    }

    /// Appends the string form of a variable; false if it is not set.
    pub fn write_text(&self, id: VarId, out: &mut String) -> bool {
        match self.slots.get(id) {
            None | Some(Slot::Unset) => false,
            Some(Slot::Text(s, _)) => {
                out.push_str(s);
                true
            }
            Some(Slot::Val(v)) => {
                write_value(v, out);
                true
            }
        }
    }

    pub fn text(&self, id: VarId) -> Option<String> {
        let mut s = String::new();
        self.write_text(id, &mut s).then_some(s)
    }
}

/// The string form pgbench gives a value (`NULL`, `true`, integers, doubles as `%.15g`).
pub fn write_value(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("NULL"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) => out.push_str(itoa::Buffer::new().format(*i)),
        Value::Double(d) => out.push_str(&format_g15(*d)),
    }
}

/// C's `%.15g`.
pub fn format_g15(d: f64) -> String {
    const P: i32 = 15;
    // PostgreSQL's snprintf spells these out.
    if d.is_nan() {
        return "NaN".into();
    }
    if d.is_infinite() {
        return if d < 0.0 { "-Infinity" } else { "Infinity" }.into();
    }
    if d == 0.0 {
        return if d.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let e = format!("{:.*e}", (P - 1) as usize, d);
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let x: i32 = exp.parse().unwrap_or(0);
    if !(-4..P).contains(&x) {
        let mant = trim_zeros(mant);
        let sign = if x < 0 { '-' } else { '+' };
        format!("{mant}e{sign}{:02}", x.abs())
    } else {
        let f = format!("{:.*}", (P - 1 - x) as usize, d);
        trim_zeros(&f).to_string()
    }
}

fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

fn is_an_int(s: &str) -> bool {
    let t = s.trim_start();
    let t = t.strip_prefix(['+', '-']).unwrap_or(t);
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && t[digits..].trim_end().is_empty()
}

fn prefix_ci(s: &str, word: &str) -> bool {
    s.len() <= word.len() && word[..s.len()].eq_ignore_ascii_case(s)
}

/// pgbench's conversion of a variable's string form into a value.
pub fn parse_value(name: &str, s: &str) -> Result<Value, EvalError> {
    if s.is_empty() {
        return Err(EvalError(format!(
            "malformed variable \"{name}\" value: \"\""
        )));
    }
    if s.eq_ignore_ascii_case("null") {
        Ok(Value::Null)
    } else if prefix_ci(s, "true") || prefix_ci(s, "yes") || s.eq_ignore_ascii_case("on") {
        Ok(Value::Bool(true))
    } else if prefix_ci(s, "false")
        || prefix_ci(s, "no")
        || s.eq_ignore_ascii_case("off")
        || s.eq_ignore_ascii_case("of")
    {
        Ok(Value::Bool(false))
    } else if is_an_int(s) {
        s.trim()
            .trim_start_matches('+')
            .parse::<i64>()
            .map(Value::Int)
            .map_err(|_| EvalError(format!("value \"{s}\" is out of range for type bigint")))
    } else {
        s.trim_start()
            .parse::<f64>()
            .map(Value::Double)
            .map_err(|_| EvalError(format!("malformed variable \"{name}\" value: \"{s}\"")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g15_matches_c() {
        assert_eq!(format_g15(1.0), "1");
        assert_eq!(format_g15(0.1), "0.1");
        assert_eq!(format_g15(std::f64::consts::PI), "3.14159265358979");
        assert_eq!(format_g15(1e20), "1e+20");
        assert_eq!(format_g15(1.5e-5), "1.5e-05");
        assert_eq!(format_g15(123456789012345.0), "123456789012345");
        assert_eq!(format_g15(1234567890123456.0), "1.23456789012346e+15");
        assert_eq!(format_g15(-2.5), "-2.5");
        assert_eq!(format_g15(0.0001), "0.0001");
        assert_eq!(format_g15(f64::INFINITY), "Infinity");
        assert_eq!(format_g15(f64::NAN), "NaN");
    }

    #[test]
    fn integers_are_written_as_c_prints_them() {
        let text = |i| {
            let mut s = String::from("x=");
            write_value(&Value::Int(i), &mut s);
            s
        };
        assert_eq!(text(0), "x=0");
        assert_eq!(text(-42), "x=-42");
        assert_eq!(text(100_000), "x=100000");
        assert_eq!(text(i64::MAX), "x=9223372036854775807");
        assert_eq!(text(i64::MIN), "x=-9223372036854775808");
    }

    #[test]
    fn string_values_convert_like_pgbench() {
        let p = |s| parse_value("v", s);
        assert_eq!(p("NULL").unwrap(), Value::Null);
        assert_eq!(p("t").unwrap(), Value::Bool(true));
        assert_eq!(p("Ye").unwrap(), Value::Bool(true));
        assert_eq!(p("on").unwrap(), Value::Bool(true));
        assert_eq!(p("n").unwrap(), Value::Bool(false));
        assert_eq!(p("of").unwrap(), Value::Bool(false));
        assert_eq!(p(" -42 ").unwrap(), Value::Int(-42));
        assert_eq!(p("+7").unwrap(), Value::Int(7));
        assert_eq!(p("2.5").unwrap(), Value::Double(2.5));
        assert!(p("o").is_err());
        assert!(p("").is_err());
        let e = p("99999999999999999999").unwrap_err().0;
        assert!(e.contains("out of range for type bigint"), "{e}");
        let e = p("12abc").unwrap_err().0;
        assert_eq!(e, "malformed variable \"v\" value: \"12abc\"");
    }

    #[test]
    fn variables_by_id_and_name() {
        let mut sy = Symbols::default();
        let a = sy.intern("a");
        assert_eq!(sy.intern("a"), a);
        let mut v = Variables::new(sy);
        assert!(
            v.value(a)
                .unwrap_err()
                .0
                .contains("undefined variable \"a\"")
        );
        v.set_text(a, "5".into());
        assert_eq!(v.value(a).unwrap(), Value::Int(5));
        v.set_value(a, Value::Double(0.5));
        assert_eq!(v.text(a).as_deref(), Some("0.5"));
        v.set_text_by_name("new_one", "x".into()).unwrap();
        assert!(v.set_text_by_name("1bad", "x".into()).is_err());
        let id = v.symbols().get("new_one").unwrap();
        assert_eq!(v.text(id).as_deref(), Some("x"));
        assert!(valid_name("é_1") && !valid_name("") && !valid_name("a-b"));
    }
}
