//! Evaluating expressions: operators and functions with pgbench's coercions, NULL
//! propagation, overflow checks and error messages.

use super::ast::{Expr, Func};
use crate::prng::{
    self, MAX_ZIPFIAN_PARAM, MIN_GAUSSIAN_PARAM, MIN_ZIPFIAN_PARAM, PgPrng, hash_fnv1a,
    hash_murmur2,
};
use crate::value::{EvalError, Value, err};
use crate::vars::{Variables, format_g15};

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
