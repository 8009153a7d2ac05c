//! What can go wrong reading security material or reaching the coordinator.

use std::path::PathBuf;

pub(crate) const MIN_TOKEN_LEN: usize = 16;
pub(crate) const MAX_TOKEN_LEN: usize = 4096;

#[derive(Debug, thiserror::Error)]
pub enum SecurityError {
    #[error("{flag} {path}: {error}")]
    Read {
        flag: &'static str,
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{flag} {path}: {reason}")]
    Invalid {
        flag: &'static str,
        path: PathBuf,
        reason: String,
    },
    #[error("{flag} {} line {line}: {reason}", path.display())]
    Line {
        flag: &'static str,
        path: PathBuf,
        line: usize,
        reason: String,
    },
    #[error("{source_name}: {reason}")]
    Token {
        source_name: String,
        reason: &'static str,
    },
    #[error("coordinator address {addr:?}: {reason}")]
    Address { addr: String, reason: String },
    #[error("cannot connect to the coordinator at {addr}: {detail}")]
    Connect { addr: String, detail: String },
}
