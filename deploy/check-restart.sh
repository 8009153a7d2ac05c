#!/usr/bin/env bash
# Shows the restart path without systemd (which is not PID 1 in containers and sandboxes):
# runs the installed coordinator, agent and worker, each under a bash loop that restarts it
# when it dies (what Restart=on-failure does), SIGKILLs each daemon in turn and checks with
# the CLI that the daemon came back and that both hosts are up again.
#
#   deploy/check-restart.sh                          # binaries from /usr/local/bin
#   BLOCKLAB_BIN_DIR=target/debug deploy/check-restart.sh
#
# Everything (catalog, agent work dir, build cache, logs) lives in a temporary directory;
# ports: BLOCKLAB_CHECK_PORT (17400) for gRPC and the next one for the dashboard.
set -euo pipefail

BIN=${BLOCKLAB_BIN_DIR:-/usr/local/bin}
PORT=${BLOCKLAB_CHECK_PORT:-17400}
DASH=$((PORT + 1))
ADDR=127.0.0.1:$PORT
TIMEOUT=${BLOCKLAB_CHECK_TIMEOUT:-60}
for b in blocklab blocklab-coordinator blocklab-agent blocklab-worker; do
  [ -x "$BIN/$b" ] || { echo "check-restart: $BIN/$b missing (run deploy/install.sh)" >&2; exit 1; }
done

WORK=$(mktemp -d /tmp/blocklab-restart.XXXXXX)
loops=()
cleanup() {
  touch "$WORK/stop"
  for p in "${loops[@]}"; do kill "$p" 2>/dev/null || true; done
  for f in "$WORK"/*.pid; do
    [ -e "$f" ] && kill "$(cat "$f")" 2>/dev/null || true
  done
  wait 2>/dev/null || true
  if [ "${KEEP:-0}" = 1 ]; then echo "check-restart: logs kept in $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

# supervise NAME CMD...: restart CMD whenever it exits, until $WORK/stop exists.
supervise() {
  local name=$1
  shift
  (
    while [ ! -e "$WORK/stop" ]; do
      "$@" >>"$WORK/$name.log" 2>&1 &
      echo $! >"$WORK/$name.pid"
      wait $! || true
      echo "--- $name exited; restarting" >>"$WORK/$name.log"
      sleep 1
    done
  ) 2>/dev/null &
  loops+=($!)
}

cat >"$WORK/coordinator.toml" <<TOML
listen = "$ADDR"
catalog = "$WORK/catalog.db"
heartbeat_interval = "1s"
heartbeat_timeout = "4s"
dashboard_listen = "127.0.0.1:$DASH"
TOML
supervise coordinator "$BIN/blocklab-coordinator" --config "$WORK/coordinator.toml"
supervise agent "$BIN/blocklab-agent" --coordinator "$ADDR" --host-id restart-db \
  --work-dir "$WORK/agent" --build-cache "$WORK/builds"
supervise worker "$BIN/blocklab-worker" serve --coordinator "$ADDR" --host-id restart-w

hosts_up() {
  local out
  out=$("$BIN/blocklab" --coordinator "$ADDR" hosts --format csv 2>/dev/null) || return 1
  grep -q '^restart-db,agent,up' <<<"$out" && grep -q '^restart-w,worker,up' <<<"$out"
}

wait_up() { # what
  local i
  for ((i = 0; i < TIMEOUT * 2; i++)); do
    if hosts_up; then echo "check-restart: $1: both hosts up"; return 0; fi
    sleep 0.5
  done
  echo "check-restart: $1: hosts not up after ${TIMEOUT}s" >&2
  "$BIN/blocklab" --coordinator "$ADDR" hosts >&2 || true
  for f in "$WORK"/*.log; do echo "== $f" >&2; tail -n 20 "$f" >&2; done
  return 1
}

wait_up "start"
for d in coordinator agent worker; do
  old=$(cat "$WORK/$d.pid")
  kill -KILL "$old"
  echo "check-restart: SIGKILLed $d (pid $old)"
  for ((i = 0; i < TIMEOUT * 2; i++)); do
    new=$(cat "$WORK/$d.pid")
    [ "$new" != "$old" ] && kill -0 "$new" 2>/dev/null && break
    sleep 0.5
  done
  [ "$new" != "$old" ] || { echo "check-restart: $d was not restarted" >&2; exit 1; }
  # The killed host must be seen down, or re-attached under its new process, before "up"
  # counts: a fresh attach replaces the session, so waiting for "up" after the restart is
  # enough for agent and worker; the coordinator restart drops every session.
  sleep 1
  wait_up "after restarting $d (pid $new)"
done
if command -v curl >/dev/null; then
  curl -fsS "http://127.0.0.1:$DASH/metrics" | grep -E '^blocklab_hosts_up 2$' >/dev/null \
    && echo "check-restart: /metrics reports 2 hosts up"
fi
echo "check-restart: ok: every daemon came back after SIGKILL"
