//! Maintenance timings on a run's server: bulk load (COPY), CREATE INDEX, VACUUM ANALYZE,
//! CHECKPOINT, `count(*)` with a warm and a cold cache, dump and restore with the build's
//! own pg_dump / pg_restore. Each step is timed and reported as `maint.<step>` seconds.
//!
//! The data is a table shaped like pgbench_accounts (`maint_accounts`: aid, bid, abalance,
//! filler char(84)) of scale x 100000 rows in the database `blocklab_maint`. What each
//! timing covers:
//! - `copy`: CREATE TABLE and the COPY FROM STDIN of generated rows (streamed in chunks);
//!   the database is (re)created just before, untimed.
//! - `create-index`: the primary key on aid and a btree index on bid.
//! - `vacuum-analyze`: VACUUM ANALYZE of the whole database.
//! - `checkpoint`: CHECKPOINT.
//! - `count-warm`: the second of two `count(*)` of the table.
//! - `count-cold`: clean (fast) stop, OS page cache drop (when permitted), start with the
//!   same data directory, port and settings, then the first `count(*)` after the start.
//! - `dump`: `pg_dump -Fc` of the database into the run directory.
//! - `restore`: `pg_restore -j 1` of that dump into a fresh `blocklab_restore` (created
//!   just before, untimed); the restored row count is checked, then the database and the
//!   dump are removed.
//!
//! A step that needs data or a dump an earlier step of the task did not make gets them
//! untimed (and says so in a note). Besides the step timings the result carries
//! `maint.table_bytes` (pg_total_relation_size after the load) and `maint.dump_bytes`;
//! the coordinator adds `maint.total_s` (the sum of the metrics in seconds), so the agent
//! must not report it.

mod plan;
mod runner;
mod sql;
mod tools;

pub use plan::{MAINT_DB, MAX_SCALE, MaintPlan, MaintReport, Metric, RESTORE_DB, Step, plan};
pub use runner::{OnRestart, run};
pub use tools::{DumpRoots, Restored, confine_dump, restore_dump};
