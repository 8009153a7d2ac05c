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

use std::collections::HashMap;

use crate::model::{Axis, Cell, Spec};

/// The cells of `spec`'s matrix, with their baselines.
pub(crate) fn cells(spec: &Spec) -> Vec<Cell> {
    let mut cells = matrix(spec);
    // Each cell by its dimensions (the first one, as a search in order would find it), so
    // that finding a cell's baseline is one lookup, not a scan.
    let mut by_dims: HashMap<Dims<'_>, u32> = HashMap::with_capacity(cells.len());
    for c in &cells {
        by_dims.entry(Dims::of(c)).or_insert(c.index);
    }
    let links: Vec<_> = cells.iter().map(|c| links(spec, &by_dims, c)).collect();
    drop(by_dims);
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

/// Every dimension of a cell.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct Dims<'a> {
    source: &'a str,
    pages: (u32, u32),
    segsize_gb: u32,
    wal_segsize_mb: u32,
    settings_variant: &'a str,
    workload_variant: &'a str,
    clients: u32,
    scale: u32,
}

impl<'a> Dims<'a> {
    fn of(c: &'a Cell) -> Self {
        Dims {
            source: &c.source,
            pages: (c.block_size_kb, c.wal_block_size_kb),
            segsize_gb: c.segsize_gb,
            wal_segsize_mb: c.wal_segsize_mb,
            settings_variant: &c.settings_variant,
            workload_variant: &c.workload_variant,
            clients: c.clients,
            scale: c.scale,
        }
    }
}

/// A cell's memory reference, and the cell it is compared with and on which axis: the cell
/// equal to it in every dimension but `axis`, which is at the baseline's value.
fn links(
    spec: &Spec,
    by_dims: &HashMap<Dims<'_>, u32>,
    c: &Cell,
) -> (Option<u32>, Option<(u32, Axis)>) {
    let dims = Dims::of(c);
    let find = |axis: Axis, other: Dims<'_>| {
        by_dims
            .get(&other)
            .filter(|&&i| i != c.index)
            .map(|&i| (i, axis))
    };
    if dims.pages != spec.baseline {
        let b = find(
            Axis::PageSize,
            Dims {
                pages: spec.baseline,
                ..dims
            },
        );
        return (b.map(|(i, _)| i), b);
    }
    let b = if c.segsize_gb != spec.segsizes_gb[0] {
        find(
            Axis::Segsize,
            Dims {
                segsize_gb: spec.segsizes_gb[0],
                ..dims
            },
        )
    } else if c.wal_segsize_mb != spec.wal_segsizes_mb[0] {
        find(
            Axis::WalSegsize,
            Dims {
                wal_segsize_mb: spec.wal_segsizes_mb[0],
                ..dims
            },
        )
    } else if c.settings_variant != spec.baseline_settings_variant {
        find(
            Axis::SettingsVariant,
            Dims {
                settings_variant: &spec.baseline_settings_variant,
                ..dims
            },
        )
    } else if c.workload_variant != spec.baseline_workload_variant {
        find(
            Axis::WorkloadVariant,
            Dims {
                workload_variant: &spec.baseline_workload_variant,
                ..dims
            },
        )
    } else if c.source != spec.baseline_source && spec.compare_sources {
        find(
            Axis::Source,
            Dims {
                source: &spec.baseline_source,
                ..dims
            },
        )
    } else {
        None
    };
    (Some(c.index), b)
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
