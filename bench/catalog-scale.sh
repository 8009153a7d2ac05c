#!/usr/bin/env bash
# How the catalog answers at lab scale, on SQLite and on PostgreSQL (a throwaway server of
# Debian's postgresql-15, as the tests start; run as root it runs as BLOCKLAB_PG_USER): JOBS
# jobs of 1,000 runs each, every run with a result and SAMPLES per-second samples
# (10 x 1,000 runs x 100 = 1,000,000 samples by default), then the time of `results`,
# `compare`, `export` (with and without samples) and the dashboard's pages, each called
# through a coordinator started afresh: cold (the first call after the start) and warm (the
# median of the next 5); two columns per backend.
#
#   bench/catalog-scale.sh            # JOBS=10 SAMPLES=100
set -euo pipefail
JOBS=${JOBS:-10}
SAMPLES=${SAMPLES:-100}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cargo build --release -p blocklab-tests --example catalog_scale --manifest-path "$ROOT/Cargo.toml" >&2
"${CARGO_TARGET_DIR:-$ROOT/target}/release/examples/catalog_scale" "$JOBS" "$SAMPLES"
