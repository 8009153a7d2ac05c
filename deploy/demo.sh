#!/usr/bin/env bash
# The demo: on a fresh Debian machine, installs what is missing, builds blocklab, starts a
# coordinator, one agent and one worker on loopback, submits deploy/specs/demo.toml
# (8K vs 16K data pages, 2 repetitions), watches it, prints the results, stops the daemons.
# A second run reuses the cached PostgreSQL builds under /var/cache/blocklab/builds.
set -euo pipefail
cd "$(dirname "$0")/.."
. deploy/setup.sh

echo "demo: building blocklab (release)"
cargo build --release --locked --bins
bin=$PWD/target/release

demo_dir=${BLOCKLAB_DEMO_DIR:-/var/lib/blocklab/demo}
port=${BLOCKLAB_DEMO_PORT:-7400}
mkdir -p "$demo_dir"
chmod 755 "$demo_dir"
export BLOCKLAB_COORDINATOR="127.0.0.1:$port"
catalog="$demo_dir/catalog.db"

pids=()
stop_daemons() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap stop_daemons EXIT

"$bin/blocklab-coordinator" --listen "127.0.0.1:$port" --catalog "$catalog" >"$demo_dir/coordinator.log" 2>&1 &
pids+=($!)
"$bin/blocklab-agent" --host-id demo-db --advertise-addr 127.0.0.1 --work-dir "$demo_dir/agent" \
  --build-cache "$BLOCKLAB_BUILD_CACHE" --pg-user "$BLOCKLAB_PG_USER" >"$demo_dir/agent.log" 2>&1 &
pids+=($!)
"$bin/blocklab-worker" serve --host-id demo-client --advertise-addr 127.0.0.1 >"$demo_dir/worker.log" 2>&1 &
pids+=($!)

echo "demo: waiting for the agent and the worker to attach"
for _ in $(seq 1 60); do
  up=$("$bin/blocklab" hosts 2>/dev/null | grep -c ' up ' || true)
  [ "$up" -ge 2 ] && break
  sleep 0.5
done
"$bin/blocklab" hosts

echo "demo: submitting deploy/specs/demo.toml (PostgreSQL builds take a few minutes the first time)"
"$bin/blocklab" submit --dry-run deploy/specs/demo.toml
"$bin/blocklab" submit --watch deploy/specs/demo.toml | tee "$demo_dir/submit.out"
job=$(awk '/^submitted job/ {print $3}' "$demo_dir/submit.out")
"$bin/blocklab" job "$job"
echo
echo "catalog: $catalog   (try: sqlite3 $catalog 'SELECT * FROM cells_v')"
echo "logs:    $demo_dir/{coordinator,agent,worker}.log"
