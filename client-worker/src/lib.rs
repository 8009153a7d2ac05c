//! blocklab client worker: pgbench-compatible load generation over TCP, as a fleet daemon
//! (`serve`) or directly (`init_data`, `run_load`).

pub mod as3ap;
mod client;
pub mod conn;
pub mod cpu;
mod decode;
pub mod error;
pub mod exec;
pub mod expr;
mod expr_lex;
pub mod expr_parse;
pub mod facts;
#[doc(hidden)]
pub mod fuzzing;
pub mod init;
pub mod load;
pub mod metrics;
pub mod parse;
pub mod plan;
pub mod prng;
mod progress;
pub mod report;
pub mod script;
pub mod serve;
mod shell;
pub mod sql;
pub mod stats;
mod summary;
pub mod tpcc;
pub mod vars;
mod worker_thread;

pub use error::WorkerError;
pub use init::{init_data, init_data_conninfo};
pub use load::{LoadControl, run_load, run_load_controlled, run_load_observed};
pub use plan::ScriptSpec;
pub use report::{LoadOptions, LoadReport};
pub use script::{Builtin, Protocol};
pub use serve::{WorkerConfig, WorkerHandler, serve};
