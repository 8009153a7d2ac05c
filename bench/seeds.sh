#!/usr/bin/env bash
# The gallery: runs the seeds' experiments (deploy/specs/seeds/*.toml, or the ones named)
# one after another through a local lab (coordinator, agent and worker on loopback) and
# writes, per spec, docs/results/<name>.md (when and where it ran, the host facts, the
# results table with verdicts and the held-constant lines, as `blocklab results --format
# markdown` prints them) and docs/results/<name>.html (`blocklab report`).
#
#   bash bench/seeds.sh                                   # every seed spec
#   bash bench/seeds.sh deploy/specs/seeds/003-*.toml     # some of them
#   BLOCKLAB_BIN_DIR=target/debug bash bench/seeds.sh     # without a release build
#   SEED_001_WAL_KB="1, 4, 8" bash bench/seeds.sh ...     # seed 001 at fewer WAL sizes (each
#                                                         # new size is a PostgreSQL build)
#   RENDER_ONLY=1 bash bench/seeds.sh deploy/specs/seeds/007-*.toml
#       # the page's job again (from the same catalog), rendered by these binaries; runs nothing
set -euo pipefail
cd "$(dirname "$0")/.."
. deploy/setup.sh
export BLOCKLAB_DEMO_DIR=${BLOCKLAB_DEMO_DIR:-/var/lib/blocklab/bench-seeds}
export BLOCKLAB_DEMO_PORT=${BLOCKLAB_DEMO_PORT:-7420}
. deploy/local-lab.sh

out=docs/results
mkdir -p "$out"
work=$(mktemp -d)
if [ $# -gt 0 ]; then specs=("$@"); else specs=(deploy/specs/seeds/*.toml); fi

# Every spec is checked before the first one runs.
for spec in "${specs[@]}"; do
  "$bin/blocklab" submit --dry-run "$spec" >/dev/null
done

host_facts() {
  echo '```'
  "$bin/blocklab" hosts --facts
  echo
  echo "uname: $(uname -srvm)"
  echo "cpus: $(nproc); memory: $(free -h | awk '/^Mem:/ {print $2}'); load average at the start: $1"
  echo "data directory filesystem: $(df -h --output=source,fstype,size,avail "$BLOCKLAB_DEMO_DIR" | tail -n 1 | tr -s ' ')"
  echo "binaries: $bin"
  echo '```'
}

# What a seed's source reported beyond the job's headline, as a results table of its own.
extra_metrics() {
  case $1 in
    000-*) echo "mixed_oltp.tup_per_s as3ap.single_user_s mixed_ir.cross_section_s mixed_oltp.cross_section_s" ;;
    002-*) echo "maint.restore maint.vacuum_analyze maint.count_warm" ;;
    004-*) echo "tps_incl_conn" ;;
    001-*) echo "wal_bytes_per_txn disk_write_bytes_per_txn" ;;
    005-*) echo "wal_bytes_per_txn disk_write_bytes_per_txn" ;;
    007-* | 008-*) echo "latency_p99_ms" ;;
    009-*) echo "wal_bytes_per_txn disk_write_bytes_per_txn" ;;
  esac
}

# A page's results: the job's table (a probe's is one of its own), then the seed's extra
# metrics, each its own table and lines (the rest would repeat the first table's sections).
results_section() {
  local spec=$1 name=$2 job=$3 metric
  "$bin/blocklab" results "$job" --format markdown
  grep -q '^kind = "probe"' "$spec" && return 0
  for metric in $(extra_metrics "$name"); do
    echo
    echo "### $metric"
    echo
    "$bin/blocklab" results "$job" --metric "$metric" --format markdown |
      awk '/^warnings on|^\| metric \||^### / { exit } { print }'
  done
}
for spec in "${specs[@]}"; do
  name=$(basename "$spec" .toml)
  run_spec=$spec
  note=""
  if [[ $name == 001-* && -n ${SEED_001_WAL_KB:-} ]]; then
    run_spec="$work/$name.toml"
    sed "s/^wal_block_size_kb = .*/wal_block_size_kb = [$SEED_001_WAL_KB]/" "$spec" >"$run_spec"
    note="Run here at WAL block sizes $SEED_001_WAL_KB KB only (SEED_001_WAL_KB): each other size is one more PostgreSQL build."
  fi
  echo "=== $name"
  if [ -n "${RENDER_ONLY:-}" ]; then
    # The page's job again, its header kept: the results and report as this build renders them.
    job=$(grep -o -m1 'as job `[0-9a-f-]*`' "$out/$name.md" | tr -d '`' | awk '{print $3}')
    [ -n "$job" ] || { echo "seeds: $out/$name.md names no job" >&2; exit 1; }
    {
      sed '/^## Results$/q' "$out/$name.md"
      echo
      results_section "$spec" "$name" "$job"
    } >"$work/$name.md"
    mv "$work/$name.md" "$out/$name.md"
    "$bin/blocklab" report "$job" --out "$out/$name.html"
    echo "--- $name: rendered job $job again"
    continue
  fi
  load=$(cut -d ' ' -f 1-3 /proc/loadavg)
  started=$(date -u '+%Y-%m-%d %H:%M UTC')
  t0=$(date +%s)
  "$bin/blocklab" submit --watch "$run_spec" | tee "$work/$name.out"
  job=$(head -n 1 "$work/$name.out")   # submit prints the job id first, alone
  wall=$(($(date +%s) - t0))
  {
    echo "# $name"
    echo
    echo "Spec [\`deploy/specs/seeds/$name.toml\`](../../deploy/specs/seeds/$name.toml), run by"
    echo "\`bench/seeds.sh\` on $started as job \`$job\` ($wall s wall clock, builds included)."
    [ -n "$note" ] && { echo; echo "$note"; }
    echo
    echo "## Host"
    echo
    host_facts "$load"
    echo
    echo "## Results"
    echo
    results_section "$spec" "$name" "$job"
  } >"$out/$name.md"
  "$bin/blocklab" report "$job" --out "$out/$name.html"
  echo "--- $name: $wall s; wrote $out/$name.md and $out/$name.html"
done
