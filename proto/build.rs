//! Generates the gRPC code from `proto/blocklab.proto` with a pure-Rust protobuf compiler,
//! so a plain `cargo build` needs no `protoc` on the machine.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/blocklab.proto");
    let fds = protox::compile(["blocklab.proto"], ["proto"])?;
    tonic_prost_build::configure().compile_fds(fds)?;
    Ok(())
}
