#!/usr/bin/env bash
# The whole test suite: installs what it needs (see deploy/setup.sh), checks formatting and
# lints, then runs every test, including end-to-end tests that build real PostgreSQL at two
# page sizes (cached under /var/cache/blocklab/builds, so only the first run builds).
set -euo pipefail
cd "$(dirname "$0")/.."
. deploy/setup.sh
# Incremental compilation only costs disk in a one-shot run.
export CARGO_INCREMENTAL=0

cargo fmt --all -- --check
cargo clippy --locked --workspace --all-targets -- -D warnings
cargo test --locked --workspace -- --test-threads=2
