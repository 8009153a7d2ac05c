#!/usr/bin/env bash
# Compares blocklab-worker's load generator with pgbench against one PostgreSQL server:
# identical settings, alternating runs, several rounds; prints tps and client CPU time
# (user+sys) per transaction of each, and the ratios ours/pgbench.
#
#   bench/loadgen-vs-pgbench.sh                  # start a throwaway server (as $PG_USER)
#   CONNINFO="host=... port=... user=... dbname=..." bench/loadgen-vs-pgbench.sh
#
# Environment: ROUNDS (3), DURATION (10 s), CLIENTS (8), THREADS (1), SCALE (10),
# PG_BINDIR (/usr/lib/postgresql/15/bin), PG_USER (blocklab), PGBENCH (/usr/bin/pgbench),
# WORKLOADS ("select-only:prepared tpcb-like:prepared").
set -euo pipefail

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10}
CLIENTS=${CLIENTS:-8}
THREADS=${THREADS:-1}
SCALE=${SCALE:-10}
PG_BINDIR=${PG_BINDIR:-/usr/lib/postgresql/15/bin}
PG_USER=${PG_USER:-blocklab}
PGBENCH=${PGBENCH:-/usr/bin/pgbench}
WORKLOADS=${WORKLOADS:-"select-only:prepared tpcb-like:prepared"}
ROOT=$(cd "$(dirname "$0")/.." && pwd)

cargo build --release -p blocklab-worker --manifest-path "$ROOT/Cargo.toml" >&2
OURS="${CARGO_TARGET_DIR:-$ROOT/target}/release/blocklab-worker"

WORK=$(mktemp -d /tmp/loadgen-vs-pgbench.XXXXXX)
STARTED=""
cleanup() {
    if [[ -n "$STARTED" ]]; then
        su "$PG_USER" -s /bin/sh -c "'$PG_BINDIR/pg_ctl' -D '$WORK/data' -m fast stop" >/dev/null 2>&1 || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

if [[ -z "${CONNINFO:-}" ]]; then
    PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    chown "$PG_USER" "$WORK"
    su "$PG_USER" -s /bin/sh -c "'$PG_BINDIR/initdb' -D '$WORK/data' -U bench --auth=trust --locale=C -E UTF8" >"$WORK/initdb.log"
    su "$PG_USER" -s /bin/sh -c "'$PG_BINDIR/pg_ctl' -D '$WORK/data' -l '$WORK/pg.log' -w start \
        -o '-p $PORT -c listen_addresses=127.0.0.1 -c unix_socket_directories=$WORK -c max_connections=100 -c shared_buffers=256MB'" >/dev/null
    STARTED=1
    CONNINFO="host=127.0.0.1 port=$PORT user=bench dbname=postgres"
fi

# pgbench takes the same conninfo as its dbname argument.
echo "initialising: pgbench -i -s $SCALE" >&2
"$PGBENCH" -i -q -s "$SCALE" "$CONNINFO" >&2 2>"$WORK/init.log" || { cat "$WORK/init.log" >&2; exit 1; }

# run LABEL CMD... -> prints "tps transactions cpu_seconds"
run() {
    local out="$WORK/out" t="$WORK/time"
    local TIMEFORMAT='%U %S'
    { time "$@" >"$out" 2>"$WORK/err"; } 2>"$t" || { cat "$WORK/err" >&2; exit 1; }
    local tps n cpu
    tps=$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)/\1/p' "$out")
    n=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$out")
    cpu=$(awk '{print $1 + $2}' "$t")
    echo "$tps $n $cpu"
}

printf '%-13s %-9s %5s %12s %12s %7s %14s %14s %7s\n' workload protocol round "pgbench tps" "ours tps" ratio "pgbench us/tx" "ours us/tx" ratio
for wl in $WORKLOADS; do
    name=${wl%%:*}
    proto=${wl##*:}
    sum_ratio=0; sum_cpu_ratio=0
    for r in $(seq 1 "$ROUNDS"); do
        common=(-n -c "$CLIENTS" -j "$THREADS" -T "$DURATION" -M "$proto" -b "$name")
        read -r ptps pn pcpu < <(run "$PGBENCH" "${common[@]}" "$CONNINFO")
        read -r otps on ocpu < <(run "$OURS" bench "${common[@]}" "$CONNINFO")
        read -r ratio pus ous cratio < <(awk -v a="$ptps" -v b="$otps" -v pc="$pcpu" -v pn="$pn" -v oc="$ocpu" -v on="$on" \
            'BEGIN { pu = 1e6*pc/pn; ou = 1e6*oc/on; printf "%.3f %.2f %.2f %.3f\n", b/a, pu, ou, ou/pu }')
        printf '%-13s %-9s %5d %12.1f %12.1f %7.3f %14.2f %14.2f %7.3f\n' "$name" "$proto" "$r" "$ptps" "$otps" "$ratio" "$pus" "$ous" "$cratio"
        sum_ratio=$(awk -v s="$sum_ratio" -v x="$ratio" 'BEGIN { print s + x }')
        sum_cpu_ratio=$(awk -v s="$sum_cpu_ratio" -v x="$cratio" 'BEGIN { print s + x }')
    done
    awk -v n="$ROUNDS" -v a="$sum_ratio" -v c="$sum_cpu_ratio" -v w="$name" -v p="$proto" \
        'BEGIN { printf "%-13s %-9s  mean  tps ratio (ours/pgbench) %.3f   cpu/txn ratio (ours/pgbench) %.3f\n", w, p, a/n, c/n }'
done
