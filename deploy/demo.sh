#!/usr/bin/env bash
# The demo: on a fresh Debian machine, installs what is missing, builds blocklab, starts a
# coordinator, one agent and one worker on loopback, submits deploy/specs/demo.toml
# (8K vs 16K data pages, 2 repetitions), watches it, prints the results, stops the daemons.
# A second run reuses the cached PostgreSQL builds under /var/cache/blocklab/builds.
set -euo pipefail
cd "$(dirname "$0")/.."
. deploy/setup.sh

. deploy/local-lab.sh

echo "demo: submitting deploy/specs/demo.toml (PostgreSQL builds take a few minutes the first time)"
"$bin/blocklab" submit --dry-run deploy/specs/demo.toml
"$bin/blocklab" submit --watch deploy/specs/demo.toml | tee "$demo_dir/submit.out"
job=$(awk '/^submitted job/ {print $3}' "$demo_dir/submit.out")
"$bin/blocklab" job "$job"
echo
echo "catalog: $catalog   (try: sqlite3 $catalog 'SELECT * FROM cells_v')"
echo "logs:    $demo_dir/{coordinator,agent,worker}.log"
