//! The table every listing and detail view starts from.

use comfy_table::Table;

/// An empty table with `header`.
pub(super) fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.set_header(header.to_vec());
    t
}
