//! `blocklab-worker`: the load-generator daemon (`serve`) and a standalone
//! pgbench-compatible `init` / `bench`, and the TPC-C-like and AS3AP-like workloads by hand
//! (`tpcc`, `as3ap`). The commands are in `cli/`.

use std::process::ExitCode;

mod cli;

fn main() -> ExitCode {
    cli::main()
}
