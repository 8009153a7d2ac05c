#!/usr/bin/env bash
# The coordinator at fleet scale: the release coordinator binary with simulated agents and
# workers attached (real gRPC streams, a heartbeat every second, fake results given at once),
# idle and then with JOBS small jobs in flight, at each host count of HOSTS. Prints the
# coordinator's CPU (% of one core) and RSS, heartbeat lag, and the dispatch latencies the
# hosts saw (see tests/examples/fleet_scale/sim.rs for their definitions).
#
#   bench/fleet-scale.sh                      # HOSTS="100 1000" JOBS=20 PHASE_SECONDS=30
#   FLEET_SCALE_PERF=/tmp/coord.perf bench/fleet-scale.sh   # also perf record the load phase
set -euo pipefail
HOSTS=${HOSTS:-"100 1000"}
JOBS=${JOBS:-20}
PHASE_SECONDS=${PHASE_SECONDS:-30}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cargo build --release --manifest-path "$ROOT/Cargo.toml" \
    -p blocklab-coordinator --bin blocklab-coordinator >&2
cargo build --release --manifest-path "$ROOT/Cargo.toml" \
    -p blocklab-tests --example fleet_scale >&2
ulimit -n "$(ulimit -Hn)"
for n in $HOSTS; do
    "${CARGO_TARGET_DIR:-$ROOT/target}/release/examples/fleet_scale" "$n" "$JOBS" "$PHASE_SECONDS"
done
