//! Generates the gRPC code from `proto/blocklab/v1/*.proto` with a pure-Rust protobuf
//! compiler, so a plain `cargo build` needs no `protoc` on the machine.

const FILES: [&str; 3] = [
    "blocklab/v1/common.proto",
    "blocklab/v1/control.proto",
    "blocklab/v1/fleet.proto",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto");
    let fds = protox::compile(FILES, ["proto"])?;
    tonic_prost_build::configure().compile_fds(fds)?;
    Ok(())
}
