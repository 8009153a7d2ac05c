//! Any bytes as an experiment spec: parsing must not panic, and a spec that parses must parse
//! again to the same plan and read back equal from its stored form.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    blocklab_spec::fuzzing::fuzz_spec(data);
});
