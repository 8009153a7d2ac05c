//! The TPC-C-like and AS3AP-like workloads by hand (`tpcc`, `as3ap`).

mod as3ap_cmd;
mod common;
mod tpcc_cmd;

pub use as3ap_cmd::{As3apCommand, as3ap_main};
pub use tpcc_cmd::{TpccCommand, tpcc_main};
