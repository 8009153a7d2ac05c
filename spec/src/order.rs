//! Run orders: which cell each run measures, in what sequence. Seeded orders use one
//! splitmix64 shuffle, so a recorded seed reproduces the order on any build.

use std::ops::Range;

use crate::model::{PlannedRun, RunOrder};

/// Fisher-Yates with splitmix64 (the script language's): the same seed, the same order.
pub fn shuffle<T>(items: &mut [T], seed: u64) {
    let mut state = seed;
    for i in (1..items.len()).rev() {
        let j = (blocklab_script::prng::splitmix64(&mut state) % (i as u64 + 1)) as usize;
        items.swap(i, j);
    }
}

/// A seed of its own for the rounds starting at `round` (round 0 keeps the job's seed, so
/// plans made before rounds could be added keep their order).
fn round_seed(seed: u64, round: u32) -> u64 {
    if round == 0 {
        seed
    } else {
        seed ^ u64::from(round).wrapping_mul(0xD6E8_FEB8_6659_FD93)
    }
}

/// The runs of `rounds` over `cells` cells in `order`, numbered from `first_sequence`.
pub fn runs(
    order: RunOrder,
    cells: usize,
    rounds: Range<u32>,
    first_sequence: u32,
) -> Vec<PlannedRun> {
    let n = u32::try_from(cells).unwrap_or(u32::MAX);
    let pairs: Vec<(u32, u32)> = match order {
        RunOrder::Sequential => (0..n)
            .flat_map(|c| rounds.clone().map(move |r| (c, r)))
            .collect(),
        RunOrder::Interleaved => rounds.flat_map(|r| (0..n).map(move |c| (c, r))).collect(),
        RunOrder::Shuffled { seed } => {
            let mut p: Vec<(u32, u32)> = rounds
                .clone()
                .flat_map(|r| (0..n).map(move |c| (c, r)))
                .collect();
            shuffle(&mut p, round_seed(seed, rounds.start));
            p
        }
        RunOrder::RandomizedBlock { seed } => rounds
            .flat_map(|r| {
                let mut block: Vec<(u32, u32)> = (0..n).map(|c| (c, r)).collect();
                // Round 0 too gets a seed of its own, unlike a whole-job shuffle.
                shuffle(&mut block, round_seed(seed, r + 1));
                block
            })
            .collect(),
    };
    pairs
        .into_iter()
        .enumerate()
        .map(|(i, (cell_index, repetition))| PlannedRun {
            sequence: first_sequence.saturating_add(u32::try_from(i).unwrap_or(u32::MAX)),
            cell_index,
            repetition,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cells_of(runs: &[PlannedRun]) -> Vec<u32> {
        runs.iter().map(|r| r.cell_index).collect()
    }

    #[test]
    fn randomized_blocks_hold_every_cell_once_per_round_in_a_fresh_order() {
        let order = RunOrder::RandomizedBlock { seed: 42 };
        let runs = runs(order, 6, 0..8, 0);
        assert_eq!(runs.len(), 48);
        let mut orders = Vec::new();
        for (r, block) in runs.chunks(6).enumerate() {
            let mut c = cells_of(block);
            orders.push(c.clone());
            assert!(block.iter().all(|x| x.repetition == r as u32));
            c.sort();
            assert_eq!(c, vec![0, 1, 2, 3, 4, 5]);
        }
        orders.sort();
        orders.dedup();
        assert!(orders.len() > 4, "rounds repeat one order: {orders:?}");
        assert_eq!(runs, super::runs(order, 6, 0..8, 0), "seeded");
    }

    #[test]
    fn added_rounds_continue_the_sequence() {
        for order in [
            RunOrder::Interleaved,
            RunOrder::Sequential,
            RunOrder::Shuffled { seed: 7 },
            RunOrder::RandomizedBlock { seed: 7 },
        ] {
            let more = runs(order, 3, 2..4, 6);
            assert_eq!(
                more.iter().map(|r| r.sequence).collect::<Vec<_>>(),
                (6..12).collect::<Vec<_>>()
            );
            assert!(more.iter().all(|r| (2..4).contains(&r.repetition)));
        }
    }
}
