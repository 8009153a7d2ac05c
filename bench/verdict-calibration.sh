#!/usr/bin/env bash
# How well the verdicts are calibrated: synthetic jobs with realistic noise (per-run CV 1-5%,
# 3 to 10 runs per cell, a per-round drift random walk that hits every cell of a round alike)
# go through the same analysis as real jobs. Prints, per n and CV, the false-positive rate of
# faster/slower on A/A comparisons and the power to detect a +3% and a +5% tps change; then the
# same without drift, with only tps varying (a family of 3 comparisons instead of 24), and with
# each round a block (the model of an interleaved job: ln y ~ cell + round); last, repetitions
# until = "decided" (a look after every round from 3 to a maximum of 5-20, the sequential
# boundary), with the naive rule (0.05 at every look) beside it; then with one run in ten
# disturbed (four times the CV: heavy tails), and the demo's own design (2 cells, A/A).
# The race over a page-size grid has its own bench: bench/race-calibration.sh.
# Each fixed-n table starts at n = 2 and shows the rates before the "too few runs" gate too.
# Deterministic (seeded); no database, no network.
#
#   bash bench/verdict-calibration.sh            # 2000 jobs per row
#   JOBS=500 DRIFT_PCT=1.0 bash bench/verdict-calibration.sh
set -euo pipefail
cd "$(dirname "$0")/.."

jobs=${JOBS:-2000}
drift=${DRIFT_PCT:-0.5}
cargo build --release -q -p blocklab-report --example calibration
bin=${CARGO_TARGET_DIR:-target}/release/examples/calibration

echo "== with drift (step sd ${drift}% per round), all 8 pgbench columns"
"$bin" "$jobs" "$drift"
echo
echo "== without drift"
"$bin" "$jobs" 0
echo
echo "== with drift, only tps varying"
"$bin" "$jobs" "$drift" tps-only
echo
echo "== with drift, all 8 pgbench columns, each round a block (an interleaved job's model)"
"$bin" "$jobs" "$drift" rounds
echo
echo "== until = \"decided\", with drift, each round a block (SEQ_JOBS jobs per row)"
"$bin" "${SEQ_JOBS:-1000}" "$drift" sequential
echo
echo "== with drift, each round a block, one run in ten disturbed (4x the CV)"
"$bin" "$jobs" "$drift" rounds disturbed
echo
echo "== the demo's design (2 cells, A/A, within rounds), one run in ten disturbed"
"$bin" "$jobs" "$drift" demo disturbed
