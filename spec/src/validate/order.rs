//! The run order: interleaved, sequential, a seeded shuffle or seeded randomized blocks.

use crate::error::SpecError;
use crate::model::RunOrder;

/// `order` (and `seed`): a shuffle without a seed gets a fresh one.
pub(super) fn run_order(order: Option<&str>, seed: Option<u64>) -> Result<RunOrder, SpecError> {
    match (order.unwrap_or("interleaved"), seed) {
        ("interleaved", _) => Ok(RunOrder::Interleaved),
        ("sequential", _) => Ok(RunOrder::Sequential),
        ("shuffled", Some(seed)) => Ok(RunOrder::Shuffled { seed }),
        ("shuffled", None) => Ok(RunOrder::Shuffled { seed: fresh_seed() }),
        ("randomized-block", Some(seed)) => Ok(RunOrder::RandomizedBlock { seed }),
        ("randomized-block", None) => Ok(RunOrder::RandomizedBlock { seed: fresh_seed() }),
        (other, _) => Err(SpecError::new(
            "order",
            format!(
                "{other:?} is not allowed; use interleaved, shuffled, randomized-block or sequential"
            ),
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
