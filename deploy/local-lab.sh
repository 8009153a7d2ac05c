# Sourced by deploy/demo.sh and bench/*.sh: starts a coordinator, one agent and one worker on
# loopback from the release binaries, stops them on exit, and waits until both hosts attach.
# Needs deploy/setup.sh sourced first. Sets: bin, demo_dir, catalog, BLOCKLAB_COORDINATOR.

# BLOCKLAB_BIN_DIR=DIR uses the binaries in DIR (e.g. target/debug) instead of building.
if [ -n "${BLOCKLAB_BIN_DIR:-}" ]; then
  bin=$(cd "$BLOCKLAB_BIN_DIR" && pwd)
  echo "using the blocklab binaries in $bin"
else
  echo "building blocklab (release)"
  cargo build --release --locked --bins
  bin=$PWD/target/release
fi

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
  --build-cache "$BLOCKLAB_BUILD_CACHE" --pg-user "$BLOCKLAB_PG_USER" --build-user "$BLOCKLAB_BUILD_USER" \
  >"$demo_dir/agent.log" 2>&1 &
pids+=($!)
"$bin/blocklab-worker" serve --host-id demo-client --advertise-addr 127.0.0.1 >"$demo_dir/worker.log" 2>&1 &
pids+=($!)

echo "waiting for the agent and the worker to attach"
for _ in $(seq 1 60); do
  up=$("$bin/blocklab" hosts 2>/dev/null | grep -c ' up ' || true)
  [ "$up" -ge 2 ] && break
  sleep 0.5
done
"$bin/blocklab" hosts
