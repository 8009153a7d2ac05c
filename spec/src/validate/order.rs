//! The run order: interleaved, sequential, or a seeded shuffle.

use crate::{RunOrder, SpecError};

/// `order` (and `seed`): a shuffle without a seed gets a fresh one.
pub(super) fn run_order(order: Option<&str>, seed: Option<u64>) -> Result<RunOrder, SpecError> {
    match (order.unwrap_or("interleaved"), seed) {
        ("interleaved", _) => Ok(RunOrder::Interleaved),
        ("sequential", _) => Ok(RunOrder::Sequential),
        ("shuffled", Some(seed)) => Ok(RunOrder::Shuffled { seed }),
        ("shuffled", None) => Ok(RunOrder::Shuffled { seed: fresh_seed() }),
        (other, _) => Err(SpecError::new(
            "order",
            format!("{other:?} is not allowed; use interleaved, shuffled or sequential"),
        )),
    }
}

fn fresh_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1)
        & 0x7fff_ffff_ffff_ffff
}

/// Fisher-Yates with splitmix64, so a recorded seed reproduces the order on any build.
pub(crate) fn shuffle<T>(items: &mut [T], seed: u64) {
    let mut state = seed;
    let mut next = || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    for i in (1..items.len()).rev() {
        let j = (next() % (i as u64 + 1)) as usize;
        items.swap(i, j);
    }
}
