//! The error of parsing an expression.

/// A parse error at a byte offset of the command line (pgbench's column, 0-based).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExprError {
    pub msg: String,
    pub more: Option<String>,
    pub offset: usize,
}
