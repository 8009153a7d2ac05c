//! The pgbench load engine: scripts planned from `blocklab_script`'s parse ([`plan`]),
//! sessions on the engine's own wire path ([`client`], [`pgwire`]), one transaction of a script
//! ([`exec`], [`shell`]), one client's loop (`txloop`), client threads ([`thread`],
//! [`shared`], each running its clients on its own executor, `executor`) and the run ([`options`], [`load`], [`control`]), measurements ([`stats`]), reports
//! ([`report`], [`summary`], [`progress`], [`live`]), transaction logs ([`txlog`]),
//! and the window and step terms of the other workload kinds ([`window`]).
//! The TPC-C-like and AS3AP-like workloads use its control, statistics and live reporter,
//! and run their sessions on load threads of their own (`spread`), each on its own
//! executor as the engine's clients are.

pub mod client;
pub mod control;
pub mod exec;
pub(crate) mod executor;
pub mod live;
pub mod load;
pub mod options;
pub mod pgwire;
pub mod plan;
pub mod progress;
pub mod report;
pub mod shared;
mod shell;
pub(crate) mod spread;
pub mod stats;
pub mod summary;
pub mod thread;
pub mod txlog;
mod txloop;
pub mod window;
