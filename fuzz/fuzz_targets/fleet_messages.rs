//! Any bytes as a sequence of HostMessages on one Fleet stream to an in-process coordinator:
//! nothing may panic, and the catalog may change only as a valid sequence changes it.
#![no_main]

use std::sync::LazyLock;

use blocklab_coordinator::fuzzing::FleetFuzz;
use libfuzzer_sys::fuzz_target;

static RUNTIME: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
});

static LAB: LazyLock<FleetFuzz> = LazyLock::new(|| {
    let dir = std::env::temp_dir().join(format!("blocklab-fuzz-fleet-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("fuzz directory");
    RUNTIME.block_on(FleetFuzz::start(&dir.join("catalog.db")))
});

fuzz_target!(|data: &[u8]| {
    RUNTIME.block_on(LAB.run(data));
});
