#!/usr/bin/env bash
# What a PostgreSQL build costs through the agent's build cache, in a build cache of its own
# (so the object store starts empty): a first build (8K/8K), a second page size of the same
# source (16K/8K: configure from the store's cache, every object compiled again, since c.h
# sizes a page buffer with BLCKSZ), and the same source and page sizes again after the install
# is removed (what a commit that touches no C file costs: every object from the store). Each
# line is the agent's own account: the seconds of the whole build, make's, configure's, and
# the objects reused and compiled.
#
#   bash bench/pg-build.sh                       # PostgreSQL 15 (BLOCKLAB_PG_TARBALL)
#   TARBALL=/var/cache/blocklab/src/postgresql-18.tar.bz2 bash bench/pg-build.sh
set -euo pipefail
cd "$(dirname "$0")/.."

export BLOCKLAB_SETUP_FOR=demo
. deploy/setup.sh
tarball=${TARBALL:-$BLOCKLAB_PG_TARBALL}
cargo build --release -q -p blocklab-agent --example build
bin=${CARGO_TARGET_DIR:-target}/release/examples/build
cache=$(mktemp -d /var/cache/blocklab/bench-builds.XXXXXX)
chmod 755 "$cache"
trap 'rm -rf "$cache"' EXIT

build() {
  local what=$1 block=$2 wal=$3 out
  out=$(RUST_LOG=blocklab_agent::build=info "$bin" "$cache" "$tarball" "$block" "$wal" 2>"$cache/log")
  local clean
  clean=$(sed 's/\x1b\[[0-9;]*m//g' "$cache/log")
  local make reused compiled configure complete
  complete=$(grep 'build complete' <<<"$clean" | tail -n1)
  make=$(grep -o 'make finished objects=[0-9]* seconds=[0-9.]*' <<<"$clean" | tail -n1 | sed 's/.*seconds=//')
  reused=$(grep -o 'objects_reused=[0-9]*' <<<"$complete" | cut -d= -f2)
  compiled=$(grep -o 'objects_compiled=[0-9]*' <<<"$complete" | cut -d= -f2)
  configure=$(grep -o 'configure finished seconds=[0-9.]*' <<<"$clean" | tail -n1 | sed 's/.*seconds=//')
  printf '%-34s %8s %10.1f %8.1f %8s %9s\n' "$what" \
    "$(grep -o 'seconds=[0-9.]*' <<<"$out" | cut -d= -f2)" "${configure:-0}" \
    "${make:-0}" "${reused:--}" "${compiled:--}"
  last_key=$(grep -o 'pg[^ ]*-b[0-9]*-w[0-9]*-[0-9a-f]*' <<<"$out" | head -n1)
}

printf '%-34s %8s %10s %8s %8s %9s\n' build seconds configure make reused compiled
last_key=""
build "first (8K/8K, empty store)" 8 8
build "second page size (16K/8K)" 16 8
rm -rf "${cache:?}/$last_key"
build "16K/8K again (all objects stored)" 16 8
