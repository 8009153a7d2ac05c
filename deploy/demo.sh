#!/usr/bin/env bash
# The demo: on a fresh Debian machine, installs what is missing for it (not the test-only
# packages: deploy/test.sh installs those), builds blocklab, starts a coordinator, one agent and
# one worker on loopback, submits deploy/specs/demo.toml (8K vs 16K data pages, rounds from 3
# until the change is decided, at most 6 rounds or 3 minutes of runs), watches it, prints the
# results, stops the daemons. Each step says what it does and how long it took, and the total
# comes last. A second run reuses the cached PostgreSQL builds under /var/cache/blocklab/builds.
set -euo pipefail
cd "$(dirname "$0")/.."

demo_started=$(date +%s.%N)
step_started=$demo_started
step_name=""
step() {
  step_done
  step_name=$1
  step_started=$(date +%s.%N)
  echo "demo: step $step_name"
}
step_done() {
  if [ -n "$step_name" ]; then
    awk -v name="$step_name" -v from="$step_started" -v to="$(date +%s.%N)" \
      'BEGIN { printf "demo: step %s took %.1fs\n", name, to - from }' 
  fi
  step_name=""
}

step "install what the demo needs (deploy/setup.sh)"
export BLOCKLAB_SETUP_FOR=demo
. deploy/setup.sh

step "build blocklab (about 7 minutes the first time on 2 cores) and start a coordinator, an agent and a worker"
. deploy/local-lab.sh

step "validate the spec (dry run)"
"$bin/blocklab" submit --dry-run deploy/specs/demo.toml

step "run the job: two PostgreSQL builds (about 3 minutes each the first time on 2 cores), then the runs"
"$bin/blocklab" submit --watch deploy/specs/demo.toml | tee "$demo_dir/submit.out"
job=$(head -n 1 "$demo_dir/submit.out")   # submit prints the job id first, alone

step "show the job and its results"
"$bin/blocklab" job "$job"
step_done

echo
echo "catalog: $catalog   (try: sqlite3 $catalog 'SELECT * FROM cells_v')"
echo "logs:    $demo_dir/{coordinator,agent,worker}.log"
awk -v from="$demo_started" -v to="$(date +%s.%N)" 'BEGIN { printf "demo: total %.1fs\n", to - from }'
