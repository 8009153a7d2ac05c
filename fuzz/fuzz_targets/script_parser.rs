//! Any bytes as a pgbench script: parsing and evaluating its expressions must not panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    blocklab_script::fuzzing::fuzz_script(data);
});
