//! pgbench's expression values: integers, doubles, booleans and NULL, their coercions, and
//! the evaluation error (shared by the expressions and the variables).

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

pub(crate) fn err<T>(msg: impl Into<String>) -> Result<T, EvalError> {
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
