//! pgbench's expression values and their evaluation: integers, doubles, booleans and NULL,
//! operators and functions with pgbench's coercions, NULL propagation, overflow checks
//! and error messages.

use crate::prng::{
    self, MAX_ZIPFIAN_PARAM, MIN_GAUSSIAN_PARAM, MIN_ZIPFIAN_PARAM, PgPrng, hash_fnv1a,
    hash_murmur2,
};
use crate::vars::{VarId, Variables, format_g15};

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Double(f64),
}

/// An evaluation error; it aborts the client, as in pgbench.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct EvalError(pub String);

fn err<T>(msg: impl Into<String>) -> Result<T, EvalError> {
    Err(EvalError(msg.into()))
}

impl Value {
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Int(_) => "int",
            Value::Double(_) => "double",
        }
    }

    pub fn to_bool(self) -> Result<bool, EvalError> {
        match self {
            Value::Bool(b) => Ok(b),
            v => err(format!("cannot coerce {} to boolean", v.type_name())),
        }
    }

    pub fn to_int(self) -> Result<i64, EvalError> {
        match self {
            Value::Int(i) => Ok(i),
            Value::Double(d) => {
                let r = d.round_ties_even();
                if r.is_nan() || !(-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&r)
                {
                    return err(format!("double to int overflow for {r:.6}"));
                }
                Ok(r as i64)
            }
            v => err(format!("cannot coerce {} to int", v.type_name())),
        }
    }

    pub fn to_double(self) -> Result<f64, EvalError> {
        match self {
            Value::Double(d) => Ok(d),
            Value::Int(i) => Ok(i as f64),
            v => err(format!("cannot coerce {} to double", v.type_name())),
        }
    }

    /// Truth for `\if` and CASE: non-zero numbers are true, NULL is false.
    pub fn truth(self) -> bool {
        match self {
            Value::Null => false,
            Value::Bool(b) => b,
            Value::Int(i) => i != 0,
            Value::Double(d) => d != 0.0,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Func {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Abs,
    Least,
    Greatest,
    Debug,
    Pi,
    Sqrt,
    Ln,
    Exp,
    Int,
    Double,
    Random,
    RandomGaussian,
    RandomExponential,
    RandomZipfian,
    Pow,
    And,
    Or,
    Not,
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    Shr,
    Eq,
    Ne,
    Le,
    Lt,
    Is,
    Case,
    HashMurmur2,
    HashFnv1a,
    Permute,
}

/// Arity of a function as pgbench checks it when parsing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arity {
    Exactly(usize),
    AtLeastOne,
    /// A value and an optional seed (default `:default_seed`).
    Hash,
    /// value, size and an optional seed.
    Permute,
}

/// Functions callable by name (case-insensitive), as in pgbench's table.
pub const FUNCTIONS: &[(&str, Func, Arity)] = &[
    ("mod", Func::Mod, Arity::Exactly(2)),
    ("abs", Func::Abs, Arity::Exactly(1)),
    ("least", Func::Least, Arity::AtLeastOne),
    ("greatest", Func::Greatest, Arity::AtLeastOne),
    ("debug", Func::Debug, Arity::Exactly(1)),
    ("pi", Func::Pi, Arity::Exactly(0)),
    ("sqrt", Func::Sqrt, Arity::Exactly(1)),
    ("ln", Func::Ln, Arity::Exactly(1)),
    ("exp", Func::Exp, Arity::Exactly(1)),
    ("int", Func::Int, Arity::Exactly(1)),
    ("double", Func::Double, Arity::Exactly(1)),
    ("random", Func::Random, Arity::Exactly(2)),
    ("random_gaussian", Func::RandomGaussian, Arity::Exactly(3)),
    (
        "random_exponential",
        Func::RandomExponential,
        Arity::Exactly(3),
    ),
    ("random_zipfian", Func::RandomZipfian, Arity::Exactly(3)),
    ("pow", Func::Pow, Arity::Exactly(2)),
    ("power", Func::Pow, Arity::Exactly(2)),
    ("hash", Func::HashMurmur2, Arity::Hash),
    ("hash_murmur2", Func::HashMurmur2, Arity::Hash),
    ("hash_fnv1a", Func::HashFnv1a, Arity::Hash),
    ("permute", Func::Permute, Arity::Permute),
];

#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Const(Value),
    Var(VarId),
    Call(Func, Vec<Expr>),
}

/// What evaluation needs from the running client.
pub struct EvalCtx<'a> {
    pub vars: &'a mut Variables,
    pub rng: &'a mut PgPrng,
    /// (script index, 1-based command number) for `debug()`.
    pub position: (usize, usize),
    /// Where `debug()` writes; stderr when None.
    pub debug_out: Option<&'a mut Vec<String>>,
}

impl Expr {
    pub fn eval(&self, cx: &mut EvalCtx<'_>) -> Result<Value, EvalError> {
        match self {
            Expr::Const(v) => Ok(*v),
            Expr::Var(id) => cx.vars.value(*id),
            Expr::Call(f, args) => call(*f, args, cx),
        }
    }
}

fn call(f: Func, args: &[Expr], cx: &mut EvalCtx<'_>) -> Result<Value, EvalError> {
    match f {
        Func::And | Func::Or => {
            let a = args[0].eval(cx)?;
            if a == Value::Null {
                return Ok(Value::Null);
            }
            let a = a.to_bool()?;
            if a == (f == Func::Or) {
                return Ok(Value::Bool(a));
            }
            match args[1].eval(cx)? {
                Value::Null => Ok(Value::Null),
                b => Ok(Value::Bool(b.to_bool()?)),
            }
        }
        Func::Case => {
            // when1, then1, when2, then2, ..., else
            let mut i = 0;
            while i + 1 < args.len() {
                if args[i].eval(cx)?.truth() {
                    return args[i + 1].eval(cx);
                }
                i += 2;
            }
            args[args.len() - 1].eval(cx)
        }
        _ => {
            let mut vals = [Value::Null; 16];
            if args.len() > vals.len() {
                return err("too many function arguments, maximum is 16");
            }
            let mut has_null = false;
            for (slot, a) in vals.iter_mut().zip(args) {
                *slot = a.eval(cx)?;
                has_null |= *slot == Value::Null;
            }
            if has_null && f != Func::Is && f != Func::Debug {
                return Ok(Value::Null);
            }
            strict(f, &vals[..args.len()], cx)
        }
    }
}

fn arith(f: Func, l: Value, r: Value) -> Result<Value, EvalError> {
    if f != Func::Mod && (matches!(l, Value::Double(_)) || matches!(r, Value::Double(_))) {
        let (a, b) = (l.to_double()?, r.to_double()?);
        return Ok(match f {
            Func::Add => Value::Double(a + b),
            Func::Sub => Value::Double(a - b),
            Func::Mul => Value::Double(a * b),
            Func::Div => Value::Double(a / b),
            Func::Eq => Value::Bool(a == b),
            Func::Ne => Value::Bool(a != b),
            Func::Le => Value::Bool(a <= b),
            _ => Value::Bool(a < b),
        });
    }
    let (a, b) = (l.to_int()?, r.to_int()?);
    let over = |op: &str| EvalError(format!("bigint {op} out of range"));
    Ok(match f {
        Func::Add => Value::Int(a.checked_add(b).ok_or_else(|| over("add"))?),
        Func::Sub => Value::Int(a.checked_sub(b).ok_or_else(|| over("sub"))?),
        Func::Mul => Value::Int(a.checked_mul(b).ok_or_else(|| over("mul"))?),
        Func::Eq => Value::Bool(a == b),
        Func::Ne => Value::Bool(a != b),
        Func::Le => Value::Bool(a <= b),
        Func::Lt => Value::Bool(a < b),
        _ => {
            if b == 0 {
                return err("division by zero");
            }
            if b == -1 {
                if f == Func::Mod {
                    return Ok(Value::Int(0));
                }
                return a.checked_neg().map(Value::Int).ok_or_else(|| over("div"));
            }
            Value::Int(if f == Func::Div { a / b } else { a % b })
        }
    })
}

fn strict(f: Func, v: &[Value], cx: &mut EvalCtx<'_>) -> Result<Value, EvalError> {
    use Func::*;
    Ok(match f {
        Add | Sub | Mul | Div | Mod | Eq | Ne | Le | Lt => arith(f, v[0], v[1])?,
        BitAnd | BitOr | BitXor | Shl | Shr => {
            let (a, b) = (v[0].to_int()?, v[1].to_int()?);
            Value::Int(match f {
                BitAnd => a & b,
                BitOr => a | b,
                BitXor => a ^ b,
                Shl => a.wrapping_shl(b as u32),
                _ => a.wrapping_shr(b as u32),
            })
        }
        Not => Value::Bool(!v[0].to_bool()?),
        Pi => Value::Double(std::f64::consts::PI),
        Abs => match v[0] {
            Value::Int(i) => Value::Int(i.wrapping_abs()),
            other => Value::Double(other.to_double()?.abs()),
        },
        Debug => {
            let (script, command) = cx.position;
            let shown = match v[0] {
                Value::Null => "null".to_string(),
                Value::Bool(b) => format!("boolean {b}"),
                Value::Int(i) => format!("int {i}"),
                Value::Double(d) => format!("double {}", format_g15(d)),
            };
            let line = format!("debug(script={script},command={command}): {shown}");
            match cx.debug_out.as_deref_mut() {
                Some(out) => out.push(line),
                None => eprintln!("{line}"),
            }
            v[0]
        }
        Double | Sqrt | Ln | Exp => {
            let d = v[0].to_double()?;
            Value::Double(match f {
                Sqrt => d.sqrt(),
                Ln => d.ln(),
                Exp => d.exp(),
                _ => d,
            })
        }
        Int => Value::Int(v[0].to_int()?),
        Least | Greatest => extremum(f == Least, v)?,
        Random | RandomGaussian | RandomExponential | RandomZipfian => random(f, v, cx.rng)?,
        Pow => Value::Double(v[0].to_double()?.powf(v[1].to_double()?)),
        Is => Value::Bool(match (v[0], v[1]) {
            (Value::Null, Value::Null) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            _ => false,
        }),
        HashMurmur2 => Value::Int(hash_murmur2(v[0].to_int()?, v[1].to_int()?)),
        HashFnv1a => Value::Int(hash_fnv1a(v[0].to_int()?, v[1].to_int()?)),
        Permute => {
            let (val, size, seed) = (v[0].to_int()?, v[1].to_int()?, v[2].to_int()?);
            if size <= 0 {
                return err("permute size parameter must be greater than zero");
            }
            Value::Int(prng::permute(val, size, seed))
        }
        And | Or | Case => unreachable!("lazy functions are evaluated in call()"),
    })
}

fn extremum(least: bool, v: &[Value]) -> Result<Value, EvalError> {
    if v.iter().any(|x| matches!(x, Value::Double(_))) {
        let mut m = v[0].to_double()?;
        for x in &v[1..] {
            let d = x.to_double()?;
            m = if least == (d < m) { d } else { m };
        }
        Ok(Value::Double(m))
    } else {
        let mut m = v[0].to_int()?;
        for x in &v[1..] {
            let i = x.to_int()?;
            m = if least { m.min(i) } else { m.max(i) };
        }
        Ok(Value::Int(m))
    }
}

fn random(f: Func, v: &[Value], rng: &mut PgPrng) -> Result<Value, EvalError> {
    let (min, max) = (v[0].to_int()?, v[1].to_int()?);
    if min > max {
        return err("empty range given to random");
    }
    if max
        .checked_sub(min)
        .and_then(|d| d.checked_add(1))
        .is_none()
    {
        return err("random range is too large");
    }
    Ok(Value::Int(match f {
        Func::Random => rng.uniform(min, max),
        Func::RandomGaussian => {
            let p = v[2].to_double()?;
            if p.is_nan() || p < MIN_GAUSSIAN_PARAM {
                return err(format!(
                    "gaussian parameter must be at least {MIN_GAUSSIAN_PARAM:.6} (not {p:.6})"
                ));
            }
            rng.gaussian(min, max, p)
        }
        Func::RandomZipfian => {
            let p = v[2].to_double()?;
            if !(MIN_ZIPFIAN_PARAM..=MAX_ZIPFIAN_PARAM).contains(&p) {
                return err(format!(
                    "zipfian parameter must be in range [{MIN_ZIPFIAN_PARAM:.3}, {MAX_ZIPFIAN_PARAM:.0}] (not {p:.6})"
                ));
            }
            rng.zipfian(min, max, p)
        }
        _ => {
            let p = v[2].to_double()?;
            if p.is_nan() || p <= 0.0 {
                return err(format!(
                    "exponential parameter must be greater than zero (not {p:.6})"
                ));
            }
            rng.exponential(min, max, p)
        }
    }))
}
