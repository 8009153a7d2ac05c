//! SplitMix64 (Steele, Lea, Flood): the one seeding step pg_prng, xoshiro256** and the run
//! order share.

/// One step of SplitMix64 (Steele, Lea, Flood): advances `state` and returns the next value.
/// pg_prng and [`super::Xoshiro256`] seed with it; the run order and the AS3AP-like
/// generator are built on it.
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    splitmix64_mix(*state)
}

/// SplitMix64's finalizer: a cheap, well-mixing 64-bit hash.
pub fn splitmix64_mix(mut v: u64) -> u64 {
    v = (v ^ (v >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    v = (v ^ (v >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    v ^ (v >> 31)
}
