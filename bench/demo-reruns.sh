#!/usr/bin/env bash
# The demo's stability: runs deploy/specs/demo.toml (8K vs 16K) and deploy/specs/demo-aa.toml
# (8K against a replicate of itself) alternately, ROUNDS times each (default 5), in one local
# lab with the cached PostgreSQL builds, and prints one line per job: the change with its 95%
# interval and half-width, the verdict, the smallest detectable change, the rounds run and
# the seconds of runs. The demo's verdicts should agree from one job to the next, and the
# A/A job should never say faster or slower.
#
#   bash bench/demo-reruns.sh                     # 5 of each (about 30 minutes on 2 cores)
#   ROUNDS=2 BLOCKLAB_BIN_DIR=target/release bash bench/demo-reruns.sh
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-5}
. deploy/setup.sh
export BLOCKLAB_DEMO_DIR=${BLOCKLAB_DEMO_DIR:-/var/lib/blocklab/bench-demo-reruns}
export BLOCKLAB_DEMO_PORT=${BLOCKLAB_DEMO_PORT:-7430}
. deploy/local-lab.sh
work=$(mktemp -d)

# One line of a job's headline comparison, from `results --format json`.
line() {
  local label=$1 job=$2 wall=$3
  "$bin/blocklab" results "$job" --format json >"$work/r.json"
  local rounds_run
  rounds_run=$(jq '[.cells[] | .n] | max' "$work/r.json")
  jq -r --arg name "$label" --arg wall "$wall" --arg rounds "$rounds_run" '
    def pct: if . == null then "-" else (. * 100 | round / 100 | tostring) end;
    .cells[] | select(.is_baseline | not) |
    [$name, .cell, .model, $rounds,
     "\(.pct_change | pct)% [\(.pct_change_ci95_low | pct)%, \(.pct_change_ci95_high | pct)%]",
     (if .pct_change_ci95_low == null then "-"
      else ((.pct_change_ci95_high - .pct_change_ci95_low) / 2 | pct) end),
     .verdict, (.mde_pct | pct), $wall] | @tsv' "$work/r.json"
}

printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' job cell model rounds "change [95% CI]" \
  half-width verdict MDE "job s" >"$work/table.tsv"
for i in $(seq 1 "$rounds"); do
  for spec in deploy/specs/demo.toml deploy/specs/demo-aa.toml; do
    label="$(basename "$spec" .toml) #$i"
    echo "=== $label"
    t0=$(date +%s)
    "$bin/blocklab" submit --watch "$spec" >"$work/submit.out"
    job=$(head -n 1 "$work/submit.out")
    wall=$(($(date +%s) - t0))
    line "$label" "$job" "$wall" | tee -a "$work/table.tsv"
  done
done

echo
echo "load average at the end: $(cut -d ' ' -f 1-3 /proc/loadavg)"
column -t -s $'\t' "$work/table.tsv"
rm -rf "$work"
