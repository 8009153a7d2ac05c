#!/usr/bin/env bash
# How well `search = "race"` is calibrated: 42-cell page-size grids (6 data x 7 WAL page sizes,
# the default 8K/8K) of known truth are raced under min 3 rounds, max 10 and 20, a band of 2% and
# 5%, with the verdict calibration's noise (per-run CV 1-5%, a per-round drift random walk that
# hits every cell of a round alike). The true effects are the gallery's measured tps changes
# (docs/results/README.md: WAL sizes from seed 001, data 4K from 006 and 16K from 004; data 1K,
# 2K and 32K assumed: -25%, -10%, -26%), combined multiplicatively; beside them an A/A grid
# (every cell equal) and the grid with the default the true best. Each race is replayed as the
# scheduler runs it (a look after every round from the minimum, the survivors run the next
# round). Prints, per row: how often the final racing set holds the true best (within the band,
# and strictly), the runs used against the full grid's at the same rounds and at the maximum,
# the rounds, how often the race is decided before the maximum, how often the default ends
# beaten and decided, how often any cell was dropped; each from a first look after 2 rounds
# (min 2) and after 3. A drift of 0.5% and of 1% give the same tables, race for race (the round
# term absorbs a drift that hits every cell of a round alike), so one is run (DRIFT_PCT).
# About 10 minutes at 1000 races per row.
# Deterministic (seeded); no database, no network.
#
#   bash bench/race-calibration.sh               # 1000 races per row, drift 0.5%
#   RACES=300 bash bench/race-calibration.sh
set -euo pipefail
cd "$(dirname "$0")/.."

races=${RACES:-1000}
cargo build --release -q -p blocklab-report --example calibration
bin=${CARGO_TARGET_DIR:-target}/release/examples/calibration

drift=${DRIFT_PCT:-0.5}
echo "== search = \"race\", drift step sd ${drift}% per round"
"$bin" "$races" "$drift" race
