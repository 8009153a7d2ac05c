//! The pgbench load engine: scripts planned from `blocklab_script`'s parse ([`plan`]),
//! sessions on tokio-postgres ([`client`], [`decode`]), one client's transactions
//! ([`exec`], [`shell`]), client threads ([`thread`]) and the run ([`load`], [`control`]),
//! measurements ([`stats`]), reports ([`report`], [`summary`], [`progress`], [`live`]),
//! and the window and step terms of the other workload kinds ([`window`]).
//! The TPC-C-like and AS3AP-like workloads use its control, statistics and live reporter.

pub mod client;
pub mod control;
pub mod decode;
pub mod exec;
pub mod live;
pub mod load;
pub mod plan;
pub mod progress;
pub mod report;
mod shell;
pub mod stats;
pub mod summary;
pub mod thread;
pub mod window;
