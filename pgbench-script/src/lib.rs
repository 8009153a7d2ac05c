//! pgbench's script language, as PostgreSQL 15's pgbench reads and evaluates it: the
//! built-in scripts and query protocols ([`builtin`]), splitting script text into SQL and
//! meta-commands ([`sql`], [`parse`]), the expression language ([`expr`]), values and
//! variables ([`value`], [`vars`]) and pg_prng with pgbench's hash and permute functions
//! ([`prng`]). No I/O: the worker's engine runs what this crate parses.

pub mod builtin;
pub mod expr;
/// The script fuzz target's body (`fuzz/`), built only with the `fuzzing` feature (and for
/// this crate's unit tests).
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;
pub mod parse;
pub mod prng;
pub mod sql;
pub mod value;
pub mod vars;

pub use builtin::{Builtin, Protocol};
