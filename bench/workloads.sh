#!/usr/bin/env bash
# The three workload kinds beyond pgbench at a small size, 8K against 16K data pages, on this
# machine through the real coordinator, agent and worker (loopback): a TPC-C-like job (NOTPM),
# an AS3AP-like job (seconds per query, tup/s) and the maintenance timings. Prints each job's
# results (headline per cell, then every metric against the 8K baseline).
#
#   bash bench/workloads.sh                 # defaults below
#   WAREHOUSES=4 TERMINALS=16 SECONDS_PER_RUN=120 REPS=3 bash bench/workloads.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. deploy/setup.sh
export BLOCKLAB_DEMO_DIR=${BLOCKLAB_DEMO_DIR:-/var/lib/blocklab/bench-workloads}
export BLOCKLAB_DEMO_PORT=${BLOCKLAB_DEMO_PORT:-7410}
. deploy/local-lab.sh

warehouses=${WAREHOUSES:-2}
terminals=${TERMINALS:-8}
secs=${SECONDS_PER_RUN:-60}
reps=${REPS:-2}
as3ap_scale=${AS3AP_SCALE:-20}
maint_scale=${MAINT_SCALE:-10}
specs=$(mktemp -d)

spec_head() {
  cat <<SPEC
name = "$1"
repetitions = $reps
baseline = { block_size_kb = 8, wal_block_size_kb = 8 }
[source]
tarball = "$BLOCKLAB_PG_TARBALL"
configure = ["--without-icu"]
[matrix]
block_size_kb = [8, 16]
wal_block_size_kb = [8]
clients = [$2]
[settings]
shared_buffers = "128MB"
max_wal_size = "2GB"
checkpoint_timeout = "30min"
SPEC
}

{ spec_head bench-tpcc "$terminals"; printf '[workload]\nkind = "tpcc"\nscale = %s\nduration = "%ss"\nwarmup = "10s"\n' "$warehouses" "$secs"; } >"$specs/tpcc.toml"
{ spec_head bench-as3ap 4; printf '[workload]\nkind = "as3ap"\nscale = %s\nduration = "%ss"\nwarmup = "5s"\n' "$as3ap_scale" "$((secs / 2))"; } >"$specs/as3ap.toml"
{ spec_head bench-maintenance 1; printf '[workload]\nkind = "maintenance"\nscale = %s\n' "$maint_scale"; } >"$specs/maintenance.toml"

for kind in tpcc as3ap maintenance; do
  echo
  echo "=== $kind"
  start=$(date +%s)
  "$bin/blocklab" submit --watch "$specs/$kind.toml" | tee "$specs/$kind.out"
  job=$(head -n 1 "$specs/$kind.out")   # submit prints the job id first, alone
  echo "--- $kind: $(( $(date +%s) - start )) s wall clock"
  "$bin/blocklab" results "$job"
done
echo
echo "catalog: $catalog   (sqlite3 $catalog 'SELECT * FROM run_metrics_v')"
