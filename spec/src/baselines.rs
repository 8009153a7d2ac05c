//! The cells of a job and what each is compared with.
//!
//! A cell is compared along one axis only, so a verdict is about one difference:
//! - a cell off the baseline page sizes is compared with the cell at the baseline page sizes
//!   that matches it in every other dimension ("page size");
//! - at the baseline page sizes, a cell off the first relation segment size, the first WAL
//!   segment size, the baseline settings variant or the baseline workload variant is
//!   compared with the cell that differs in that axis only (checked in that order);
//! - a cell of another source at the baseline page sizes is a baseline of its own (page
//!   sizes are compared within a version), unless `baseline.compare_sources = true`;
//! - clients and scale are never compared: each has its own baselines;
//! - with `matrix.replicate_baseline = true` every baseline cell gets an A/A twin
//!   ("replicate"): the same build and settings, measured again as its own cell.
//!
//! Memory is held at the bytes of the cell at the baseline page sizes with the same other
//! dimensions (its `memory_reference`).

use crate::model::{Axis, Cell, Spec};

/// The cells of `spec`'s matrix, with their baselines.
pub(crate) fn cells(spec: &Spec) -> Vec<Cell> {
    let mut cells = matrix(spec);
    let links: Vec<_> = cells.iter().map(|c| links(spec, &cells, c)).collect();
    for (c, (memory_reference, baseline)) in cells.iter_mut().zip(links) {
        c.memory_reference = memory_reference;
        c.baseline_cell = baseline.map(|(cell, _)| cell);
        c.compared_on = baseline.map(|(_, axis)| axis);
        c.is_baseline = baseline.is_none();
    }
    if spec.replicate_baseline {
        let roots: Vec<Cell> = cells.iter().filter(|c| c.is_baseline).cloned().collect();
        for root in roots {
            let index = u32::try_from(cells.len()).unwrap_or(u32::MAX);
            cells.push(Cell {
                index,
                is_baseline: false,
                baseline_cell: Some(root.index),
                compared_on: Some(Axis::Replicate),
                replicate: true,
                memory_reference: root.memory_reference,
                ..root
            });
        }
    }
    cells
}

/// A cell's memory reference, and the cell it is compared with and on which axis.
fn links(spec: &Spec, cells: &[Cell], c: &Cell) -> (Option<u32>, Option<(u32, Axis)>) {
    let find = |axis: Axis, want: &dyn Fn(&Cell) -> bool| {
        cells
            .iter()
            .find(|o| o.index != c.index && same_except(c, o, axis) && want(o))
            .map(|o| (o.index, axis))
    };
    let at_pages = |o: &Cell| (o.block_size_kb, o.wal_block_size_kb) == spec.baseline;
    if !at_pages(c) {
        let b = find(Axis::PageSize, &at_pages);
        return (b.map(|(i, _)| i), b);
    }
    let b = if c.segsize_gb != spec.segsizes_gb[0] {
        find(Axis::Segsize, &|o| o.segsize_gb == spec.segsizes_gb[0])
    } else if c.wal_segsize_mb != spec.wal_segsizes_mb[0] {
        find(Axis::WalSegsize, &|o| {
            o.wal_segsize_mb == spec.wal_segsizes_mb[0]
        })
    } else if c.settings_variant != spec.baseline_settings_variant {
        find(Axis::SettingsVariant, &|o| {
            o.settings_variant == spec.baseline_settings_variant
        })
    } else if c.workload_variant != spec.baseline_workload_variant {
        find(Axis::WorkloadVariant, &|o| {
            o.workload_variant == spec.baseline_workload_variant
        })
    } else if c.source != spec.baseline_source && spec.compare_sources {
        find(Axis::Source, &|o| o.source == spec.baseline_source)
    } else {
        None
    };
    (Some(c.index), b)
}

/// Whether `a` and `b` are equal in every dimension but `axis`.
fn same_except(a: &Cell, b: &Cell, axis: Axis) -> bool {
    let pages = |c: &Cell| (c.block_size_kb, c.wal_block_size_kb);
    (axis == Axis::PageSize || pages(a) == pages(b))
        && (axis == Axis::Segsize || a.segsize_gb == b.segsize_gb)
        && (axis == Axis::WalSegsize || a.wal_segsize_mb == b.wal_segsize_mb)
        && (axis == Axis::SettingsVariant || a.settings_variant == b.settings_variant)
        && (axis == Axis::WorkloadVariant || a.workload_variant == b.workload_variant)
        && (axis == Axis::Source || a.source == b.source)
        && a.clients == b.clients
        && a.scale == b.scale
        && !b.replicate
}

/// Every point of the matrix, in a fixed order.
fn matrix(spec: &Spec) -> Vec<Cell> {
    let mut cells = Vec::new();
    for (source, _) in &spec.sources {
        for (bs, wal) in spec.page_points() {
            for &seg in &spec.segsizes_gb {
                for &walseg in &spec.wal_segsizes_mb {
                    for &clients in &spec.clients {
                        for (wv, workload) in &spec.workload_variants {
                            let scales = if spec.scales.is_empty() {
                                vec![workload.scale]
                            } else {
                                spec.scales.clone()
                            };
                            for scale in scales {
                                for (sv, _) in &spec.settings_variants {
                                    let index = u32::try_from(cells.len()).unwrap_or(u32::MAX);
                                    cells.push(Cell {
                                        index,
                                        source: source.clone(),
                                        block_size_kb: bs,
                                        wal_block_size_kb: wal,
                                        segsize_gb: seg,
                                        wal_segsize_mb: walseg,
                                        clients,
                                        scale,
                                        settings_variant: sv.clone(),
                                        workload_variant: wv.clone(),
                                        is_baseline: false,
                                        baseline_cell: None,
                                        compared_on: None,
                                        replicate: false,
                                        memory_reference: None,
                                    });
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    cells
}
