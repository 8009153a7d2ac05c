//! Builds (or reuses) one PostgreSQL build through the agent's build cache and prints how long
//! it took and how many objects came from the source's earlier builds. Used by
//! `bench/pg-build.sh`.
//!
//! `cargo run --release -p blocklab-agent --example build -- CACHE TARBALL BLOCK_KB WAL_KB`

use blocklab_agent::options::{BuildRequest, BuildSpec, SourceRequest};
use blocklab_agent::{AgentConfig, AgentHandler};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "blocklab_agent::build=info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [cache, tarball, block, wal] = args.as_slice() else {
        anyhow::bail!("usage: build CACHE TARBALL BLOCK_KB WAL_KB");
    };
    let work = tempfile::tempdir()?;
    let mut c = AgentConfig::default_for("http://127.0.0.1:1");
    c.work_dir = work.path().join("agent");
    c.build_cache = cache.into();
    c.pg_user = std::env::var("BLOCKLAB_PG_USER")
        .ok()
        .or_else(blocklab_agent::default_pg_user);
    c.build_user = std::env::var("BLOCKLAB_BUILD_USER")
        .ok()
        .or_else(blocklab_agent::default_build_user);
    let handler = AgentHandler::new(c)?;
    let request = BuildRequest {
        source: Some(SourceRequest {
            tarball: tarball.clone(),
            ..Default::default()
        }),
        block_size_kb: block.parse()?,
        wal_block_size_kb: wal.parse()?,
        configure_flags: vec!["--without-icu".into()],
        ..Default::default()
    };
    let started = std::time::Instant::now();
    let spec = BuildSpec::from_request(&request)?;
    let b = handler
        .build_cache()
        .ensure(&spec, None)
        .await
        .map_err(|e| anyhow::anyhow!("{e}\n{}", e.log_tail()))?;
    println!(
        "build {} reused={} seconds={:.1}",
        b.result.build_key,
        b.result.reused,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
