//! What a spec may ask for: page and segment sizes, built-ins, protocols, size.

/// Data page sizes PostgreSQL's configure accepts (`--with-blocksize`, KB).
pub const DATA_BLOCK_SIZES_KB: [u32; 6] = [1, 2, 4, 8, 16, 32];
/// WAL page sizes PostgreSQL's configure accepts (`--with-wal-blocksize`, KB).
pub const WAL_BLOCK_SIZES_KB: [u32; 7] = [1, 2, 4, 8, 16, 32, 64];
/// Relation segment sizes (`--with-segsize`, GB) blocklab accepts.
pub const SEGSIZES_GB: [u32; 6] = [1, 2, 4, 8, 16, 32];
/// WAL segment sizes (MB): powers of two from 1 to 1024.
pub const WAL_SEGSIZES_MB: [u32; 11] = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024];
/// Built-in workloads the workers run.
pub const BUILTINS: [&str; 3] = ["tpcb-like", "simple-update", "select-only"];
/// Query protocols, as pgbench's `-M`.
pub const PROTOCOLS: [&str; 3] = ["simple", "extended", "prepared"];
/// Largest spec accepted, in bytes.
pub const MAX_SPEC_BYTES: usize = 256 * 1024;
/// The equivalence band of a comparison when the spec names none (percent of the baseline).
pub const DEFAULT_EQUIVALENCE_PCT: f64 = 2.0;
/// Most repetitions a job may ask for (fixed, or adaptive's maximum).
pub const MAX_REPETITIONS: u32 = 1000;
/// Largest script file a spec may name, in bytes.
pub const MAX_SCRIPT_BYTES: usize = 256 * 1024;
/// Largest `[workload.init] sql` file, in bytes (the whole submission stays under the
/// Control service's 4 MiB message limit).
pub const MAX_INIT_SQL_BYTES: usize = 2 * 1024 * 1024;
/// Most scripts in a mix.
pub const MAX_SCRIPTS: usize = 32;
