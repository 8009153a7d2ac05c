//! blocklab client worker: pgbench-compatible load generation over TCP, as a fleet daemon
//! (`serve`) or directly (`init_data`, `run_load`). The script language is the
//! `blocklab_script` crate; the load engine is [`engine`]; the other workload kinds are
//! [`tpcc`] and [`as3ap`]; [`serve`] is the fleet task handler and the only place that
//! converts between the wire types and the worker's own.

pub mod as3ap;
pub mod conn;
pub mod cpu;
pub mod engine;
pub mod error;
pub mod facts;
pub mod init;
mod init_progress;
pub mod metrics;
pub mod serve;
pub mod tpcc;

pub use blocklab_script::{Builtin, Protocol};
pub use engine::control::LoadControl;
pub use engine::load::{run_load, run_load_controlled, run_load_observed};
pub use engine::options::LoadOptions;
pub use engine::plan::ScriptSpec;
pub use engine::report::LoadReport;
pub use error::WorkerError;
pub use init::init_data_conninfo;
pub use serve::{WorkerConfig, WorkerHandler, init_data, serve};
