#!/usr/bin/env bash
# Compares blocklab-worker's load engine with pgbench against one PostgreSQL server, as a
# grid: clients x threads (threads <= clients) x workloads. In each cell the two tools run
# with identical settings, alternating, ROUNDS times; the table shows the medians: tps of
# each and the ratio ours/pgbench, client CPU per transaction (user, system) of each and
# the ratios, and the peak RSS of each. Then system calls per transaction (strace -c -f
# over a fixed -t) for a few cells, and instructions per transaction (callgrind, the
# difference of two transaction counts, so setup cancels out) for select-only prepared.
#
#   bench/loadgen-vs-pgbench.sh                        # throwaway server (as $PG_USER)
#   ROUNDS=3 SECONDS_PER_RUN=5 bench/loadgen-vs-pgbench.sh      # the short mode
#   CONNINFO="host=... port=... user=... dbname=..." bench/loadgen-vs-pgbench.sh
#   MODE=perf bench/loadgen-vs-pgbench.sh     # perf stat and the top of perf report of each
#       # tool, select-only under PERF_PROTOCOL (prepared), in each of PERF_CELLS ("8:1 1:1",
#       # clients:threads)
#   MODE=rss RSS_CLIENTS=1000 RSS_SECONDS=600 bench/loadgen-vs-pgbench.sh
#       # the worker's RSS at 1 minute and at the end of a long run (rate-limited by
#       # RSS_RATE, 2000 tps, so the server keeps up with 1000 connections)
#
# Environment: ROUNDS (3), SECONDS_PER_RUN (5), CLIENTS ("1 8 32 64"), THREADS ("1 2 4"),
# WORKLOADS ("select-only:prepared tpcb-like:prepared select-only:simple"), SCALE (10),
# STRACE_CELLS ("select-only:prepared:8:1 select-only:prepared:8:2 select-only:simple:8:1
# tpcb-like:prepared:8:1"), STRACE_TX (2000 per client), CALLGRIND_CELL ("8:1"),
# CALLGRIND_TX ("500 2500" per client), SKIP ("" or words of grid, strace, callgrind),
# PG_BINDIR (/usr/lib/postgresql/15/bin), PG_USER (blocklab), PGBENCH ($PG_BINDIR/pgbench).
# Installs GNU time, strace and valgrind with apt when missing.
set -euo pipefail

MODE=${MODE:-grid}
ROUNDS=${ROUNDS:-3}
SECS=${SECONDS_PER_RUN:-5}
CLIENTS=${CLIENTS:-"1 8 32 64"}
THREADS=${THREADS:-"1 2 4"}
WORKLOADS=${WORKLOADS:-"select-only:prepared tpcb-like:prepared select-only:simple"}
SCALE=${SCALE:-10}
STRACE_CELLS=${STRACE_CELLS:-"select-only:prepared:8:1 select-only:prepared:8:2 select-only:simple:8:1 tpcb-like:prepared:8:1"}
STRACE_TX=${STRACE_TX:-2000}
CALLGRIND_CELL=${CALLGRIND_CELL:-"8:1"}
CALLGRIND_TX=${CALLGRIND_TX:-"500 2500"}
SKIP=${SKIP:-}
RSS_CLIENTS=${RSS_CLIENTS:-1000}
RSS_SECONDS=${RSS_SECONDS:-600}
RSS_RATE=${RSS_RATE:-2000}
PG_BINDIR=${PG_BINDIR:-/usr/lib/postgresql/15/bin}
PG_USER=${PG_USER:-blocklab}
PGBENCH=${PGBENCH:-$PG_BINDIR/pgbench}
ROOT=$(cd "$(dirname "$0")/.." && pwd)

need() {
    local bin=$1 pkg=$2
    command -v "$bin" >/dev/null 2>&1 || apt-get install -y -q "$pkg" >&2
}
need /usr/bin/time time
need strace strace
need valgrind valgrind

cargo build --release -p blocklab-worker --manifest-path "$ROOT/Cargo.toml" >&2
OURS=${OURS:-"${CARGO_TARGET_DIR:-$ROOT/target}/release/blocklab-worker"}

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
    MAXCONN=$((RSS_CLIENTS + 20))
    [[ "$MODE" == rss ]] || MAXCONN=100
    su "$PG_USER" -s /bin/sh -c "'$PG_BINDIR/pg_ctl' -D '$WORK/data' -l '$WORK/pg.log' -w start \
        -o '-p $PORT -c listen_addresses=127.0.0.1 -c unix_socket_directories=$WORK -c max_connections=$MAXCONN -c shared_buffers=256MB'" >/dev/null
    STARTED=1
    CONNINFO="host=127.0.0.1 port=$PORT user=bench dbname=postgres"
fi

echo "initialising: pgbench -i -s $SCALE" >&2
"$PGBENCH" -i -q -s "$SCALE" "$CONNINFO" >"$WORK/init.log" 2>&1 || { cat "$WORK/init.log" >&2; exit 1; }

if [[ "$MODE" == perf ]]; then
    need perf linux-perf
    for cell in ${PERF_CELLS:-8:1 1:1}; do
        c=${cell%%:*}
        j=${cell##*:}
        for tool in pgbench ours; do
            if [[ $tool == pgbench ]]; then cmd=("$PGBENCH"); else cmd=("$OURS" bench); fi
            args=(-n -S -M "${PERF_PROTOCOL:-prepared}" -c "$c" -j "$j" -T 8 "$CONNINFO")
            echo "== $tool -c $c -j $j, select-only ${PERF_PROTOCOL:-prepared}, 8 s"
            perf stat -x, -e task-clock,user_time,system_time,context-switches -o "$WORK/stat" \
                "${cmd[@]}" "${args[@]}" 2>&1 | grep -E '^(tps|number of transactions actually)'
            grep -v '^#' "$WORK/stat" | grep -v '^$'
            perf record -q -F 2000 -o "$WORK/perf.data" "${cmd[@]}" "${args[@]}" >/dev/null 2>&1
            perf report -i "$WORK/perf.data" --no-children --sort dso --stdio 2>/dev/null \
                | grep -v '^#' | grep -v '^$' | head -6 || true
            perf report -i "$WORK/perf.data" --no-children --sort sym --stdio 2>/dev/null \
                | grep -v '^#' | grep -v '^$' | head -15 || true
        done
    done
    exit 0
fi

if [[ "$MODE" == rss ]]; then
    echo "load: $(uptime | sed 's/.*load average: //')"
    "$OURS" bench -n -S -M prepared -c "$RSS_CLIENTS" -j 4 -R "$RSS_RATE" -T "$RSS_SECONDS" \
        "$CONNINFO" >"$WORK/out" 2>"$WORK/err" &
    pid=$!
    start=$SECONDS
    rss() { awk '/^VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo -; }
    for at in 10 60 $((RSS_SECONDS / 2)) $((RSS_SECONDS - 5)); do
        while (( SECONDS - start < at )) && kill -0 "$pid" 2>/dev/null; do sleep 1; done
        echo "worker RSS at ${at}s of -c $RSS_CLIENTS -T $RSS_SECONDS: $(rss) kB"
    done
    wait "$pid" || { cat "$WORK/err" >&2; exit 1; }
    grep -E '^(tps|number of transactions actually)' "$WORK/out"
    exit 0
fi

# rusage.py FILE CMD... runs CMD under GNU time and writes "user_s system_s peak_rss_kB" to
# FILE: the CPU times with microseconds from wait4 (GNU time prints hundredths, too coarse
# for a few seconds' run), the peak RSS from GNU time (a child forked from Python would
# report Python's own RSS).
cat >"$WORK/rusage.py" <<'EOF'
import os, sys
out = sys.argv[1]
pid = os.fork()
if pid == 0:
    os.execvp("/usr/bin/time", ["/usr/bin/time", "-q", "-f", "%M", "-o", out + ".rss"] + sys.argv[2:])
_, status, ru = os.wait4(pid, 0)
with open(out + ".rss") as f:
    rss = f.read().split()[-1]
with open(out, "w") as f:
    print(f"{ru.ru_utime:.6f} {ru.ru_stime:.6f} {rss}", file=f)
sys.exit(os.waitstatus_to_exitcode(status))
EOF

# run CMD... -> "tps transactions user_s system_s maxrss_kb"
run() {
    python3 "$WORK/rusage.py" "$WORK/time" "$@" >"$WORK/out" 2>"$WORK/err" || { cat "$WORK/err" >&2; exit 1; }
    local tps n
    tps=$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)/\1/p' "$WORK/out")
    n=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$WORK/out")
    echo "$tps $n $(cat "$WORK/time")"
}

median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

skipped() { [[ " $SKIP " == *" $1 "* ]]; }

if ! skipped grid; then
    echo "grid: $ROUNDS rounds of $SECS s per tool and cell, alternating; medians; load at start: $(uptime | sed 's/.*load average: //')"
    echo
    echo "| workload | -c | -j | pgbench tps | ours tps | tps ratio | pgbench user/sys µs/tx | ours user/sys µs/tx | user ratio | sys ratio | cpu ratio | RSS pgbench/ours MB |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    for wl in $WORKLOADS; do
        name=${wl%%:*}
        proto=${wl##*:}
        for c in $CLIENTS; do
            for j in $THREADS; do
                (( j <= c )) || continue
                : >"$WORK/p"; : >"$WORK/o"
                for _ in $(seq 1 "$ROUNDS"); do
                    common=(-n -c "$c" -j "$j" -T "$SECS" -M "$proto" -b "$name")
                    run "$PGBENCH" "${common[@]}" "$CONNINFO" >>"$WORK/p"
                    run "$OURS" bench "${common[@]}" "$CONNINFO" >>"$WORK/o"
                done
                # per round: tps, user and system µs per transaction, RSS
                col() { awk -v k="$2" '{ if (k == 1) print $1; else if (k == 2) print 1e6 * $3 / $2; else if (k == 3) print 1e6 * $4 / $2; else print $5 }' "$1" | median; }
                pt=$(col "$WORK/p" 1); ot=$(col "$WORK/o" 1)
                pu=$(col "$WORK/p" 2); ou=$(col "$WORK/o" 2)
                ps=$(col "$WORK/p" 3); os=$(col "$WORK/o" 3)
                pm=$(awk '{ if ($5 > m) m = $5 } END { print m }' "$WORK/p")
                om=$(awk '{ if ($5 > m) m = $5 } END { print m }' "$WORK/o")
                awk -v w="$name" -v p="$proto" -v c="$c" -v j="$j" -v pt="$pt" -v ot="$ot" -v pu="$pu" -v ou="$ou" \
                    -v ps="$ps" -v os="$os" -v pm="$pm" -v om="$om" 'BEGIN {
                    printf "| %s %s | %d | %d | %.0f | %.0f | %.2f | %.2f / %.2f | %.2f / %.2f | %.2f | %.2f | %.2f | %.1f / %.1f |\n",
                        w, p, c, j, pt, ot, ot / pt, pu, ps, ou, os, (pu > 0 ? ou / pu : 0), (ps > 0 ? os / ps : 0),
                        (pu + ps > 0 ? (ou + os) / (pu + ps) : 0), pm / 1024, om / 1024 }'
            done
        done
    done
    echo
fi

if ! skipped strace; then
    echo "system calls per transaction (strace -c -f, -t $STRACE_TX per client); load: $(uptime | sed 's/.*load average: //')"
    echo
    echo "| workload | -c | -j | pgbench | ours | ratio |"
    echo "|---|---:|---:|---:|---:|---:|"
    for cell in $STRACE_CELLS; do
        IFS=: read -r name proto c j <<<"$cell"
        common=(-n -c "$c" -j "$j" -t "$STRACE_TX" -M "$proto" -b "$name")
        calls() {
            strace -c -f -o "$WORK/strace" "$@" >/dev/null 2>"$WORK/err" || { cat "$WORK/err" >&2; exit 1; }
            awk '$NF == "total" { print $4 }' "$WORK/strace"
        }
        pc=$(calls "$PGBENCH" "${common[@]}" "$CONNINFO")
        oc=$(calls "$OURS" bench "${common[@]}" "$CONNINFO")
        awk -v w="$name $proto" -v c="$c" -v j="$j" -v pc="$pc" -v oc="$oc" -v n=$((c * STRACE_TX)) \
            'BEGIN { printf "| %s | %d | %d | %.2f | %.2f | %.2f |\n", w, c, j, pc / n, oc / n, oc / pc }'
    done
    echo
fi

if ! skipped callgrind; then
    IFS=: read -r c j <<<"$CALLGRIND_CELL"
    read -r t1 t2 <<<"$CALLGRIND_TX"
    instr() {
        valgrind --tool=callgrind --callgrind-out-file="$WORK/cg.%p" "$@" >/dev/null 2>"$WORK/cg.err" || { tail "$WORK/cg.err" >&2; exit 1; }
        rm -f "$WORK"/cg.[0-9]*
        sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$WORK/cg.err" | tail -1
    }
    per_tx() {
        local a b
        a=$(instr "$@" -t "$t1" "$CONNINFO")
        b=$(instr "$@" -t "$t2" "$CONNINFO")
        awk -v a="$a" -v b="$b" -v n=$((c * (t2 - t1))) 'BEGIN { printf "%.0f", (b - a) / n }'
    }
    pi=$(per_tx "$PGBENCH" -n -c "$c" -j "$j" -M prepared -S)
    oi=$(per_tx "$OURS" bench -n -c "$c" -j "$j" -M prepared -S)
    echo "instructions per transaction (callgrind, select-only prepared -c $c -j $j, -t $t2 minus -t $t1):"
    awk -v p="$pi" -v o="$oi" 'BEGIN { printf "pgbench %d, ours %d, ratio %.2f\n", p, o, o / p }'
fi
