//! A job's results in domain terms: its export (the job, its cells, runs, builds and hosts, as
//! the coordinator reads them out of its catalog) and the per-cell statistics the report
//! computes from it. The coordinator builds them, the report reads them, the wire contract
//! (blocklab-proto) converts them; field names follow the wire's.

mod export;
mod results;
mod summary;

pub use export::*;
pub use results::*;
pub use summary::*;
