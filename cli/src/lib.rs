//! The `blocklab` command line over the Control API: [`commands`] (connect, submit, watch,
//! the detail renderings), [`listings`] (jobs, hosts, builds tables), [`progress`] (the
//! terminal progress bar of `watch`) and [`terminal`] (the width results fit). Both
//! renderings of `watch` read the job's stream through [`follow`]; [`client`] (the connection, the error type) and [`runs`] (a run's
//! state and result) are shared by them. Statistics and renderings of results come from
//! `blocklab-report`; the CLI computes none itself.

pub mod client;
pub mod commands;
pub mod follow;
pub mod git;
pub mod help;
pub mod listings;
pub mod progress;
pub mod runs;
pub mod terminal;

pub use blocklab_report::render::{
    Format, View, render_compare, render_compare_view, render_results, render_results_view,
};
pub use commands::*;
