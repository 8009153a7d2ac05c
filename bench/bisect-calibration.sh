#!/usr/bin/env bash
# How well `blocklab bisect` is calibrated: a line of 15 candidate commits whose compared cell's
# change is 0% up to one commit (drawn uniformly) and -3% to -65% from it on, measured with the
# verdict calibration's noise (per-run CV 1-5%, a per-round drift random walk). Each step is a
# synthetic two-cell job through the same analysis as a real job, searched by the CLI's own
# search and side rule (`blocklab_report::bisect`): the ends measured at the series' 3 rounds,
# a step at 3 rounds, measured again at 6 and 12 when undecided. Prints, per row: how often the
# ends do not differ (bisect refuses), the right commit, a wrong one, none (undecided), the mean
# jobs, builds and rounds, the most builds, and how often the builds pass ceil(log2 N) + 2.
# Deterministic (seeded); no database, no network. About a minute at 1000 per row.
#
#   bash bench/bisect-calibration.sh             # 1000 bisections per row, drift 0.5%
#   BISECTIONS=300 bash bench/bisect-calibration.sh
set -euo pipefail
cd "$(dirname "$0")/.."

bisections=${BISECTIONS:-1000}
cargo build --release -q -p blocklab-report --example calibration
bin=${CARGO_TARGET_DIR:-target}/release/examples/calibration
"$bin" "$bisections" "${DRIFT_PCT:-0.5}" bisect
