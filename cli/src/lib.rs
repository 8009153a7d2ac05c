//! The `blocklab` command line over the Control API: [`commands`] (connect, submit, watch,
//! the detail renderings), [`listings`] (jobs, hosts, builds tables) and [`progress`] (the
//! terminal progress bar of `watch`). Statistics and renderings of results come from
//! `blocklab-report`; the CLI computes none itself.

pub mod commands;
pub mod listings;
pub mod progress;

pub use blocklab_report::render::{Format, render_compare, render_results};
pub use commands::*;
