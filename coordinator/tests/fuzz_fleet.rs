//! The Fleet fuzz target's body (`blocklab_coordinator::fuzzing`) on stable Rust: a few
//! thousand seeded random inputs, each a HostMessage sequence on one stream to an in-process
//! coordinator; no panic, and no catalog change a valid sequence would not make.

use blocklab_coordinator::fuzzing::{FleetFuzz, messages, valid_hello};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_host_message_sequences_change_nothing_they_should_not() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fuzz = FleetFuzz::start(&dir.path().join("catalog.db")).await;
    let iterations: usize = std::env::var("BLOCKLAB_FUZZ_ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000);
    let mut rng = StdRng::seed_from_u64(23);
    let (mut valid, mut refused) = (0, 0);
    for _ in 0..iterations {
        let len = rng.random_range(0..160);
        let data: Vec<u8> = (0..len).map(|_| rng.random()).collect();
        if valid_hello(messages(&data).first()).is_some() {
            valid += 1;
        } else {
            refused += 1;
        }
        fuzz.run(&data).await;
    }
    // Both paths are exercised often.
    assert!(valid > iterations / 40, "{valid} valid sequences");
    assert!(refused > iterations / 5, "{refused} refused sequences");
    fuzz.run(&[]).await;
}
