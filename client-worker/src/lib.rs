//! blocklab client worker: pgbench-compatible load generation over TCP, as a fleet daemon
//! (`serve`) or directly (`init_data`, `run_load`).

mod client;
pub mod conn;
pub mod cpu;
pub mod error;
pub mod facts;
pub mod init;
pub mod load;
pub mod report;
pub mod script;
pub mod serve;
pub mod stats;
mod worker_thread;

pub use error::WorkerError;
pub use init::{init_data, init_data_conninfo};
pub use load::{run_load, run_load_observed};
pub use report::{LoadOptions, LoadReport};
pub use script::{Builtin, Protocol};
pub use serve::{WorkerConfig, WorkerHandler, serve};
