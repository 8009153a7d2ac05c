//! Memory held constant: each cell's memory settings, in bytes, against its baseline cell's.

use blocklab_proto::v1::JobExport;

/// The held-constant line of `cell` against `baseline` (empty when there is nothing to
/// compare).
pub fn line(_export: &JobExport, _cell: u32, _baseline: Option<u32>) -> String {
    String::new()
}
