//! The expression language of `\set`, `\if` and `\elif`: the tree ([`ast`]), its tokens
//! ([`lex`]), the parser ([`parse`]) and evaluation ([`eval`]).

pub mod ast;
pub mod error;
pub mod eval;
mod lex;
pub mod parse;
#[cfg(test)]
mod tests;

pub use crate::value::{EvalError, Value};
pub use ast::{Arity, Expr, FUNCTIONS, Func};
pub use error::ExprError;
pub use eval::EvalCtx;
pub use parse::parse_expr;
