#!/usr/bin/env bash
# Installs blocklab on this machine: release binaries in $PREFIX/bin (blocklab,
# blocklab-coordinator, blocklab-agent, blocklab-worker), systemd units for the three daemons
# (Restart=on-failure), the system users the agent keeps apart (shared with deploy/setup.sh):
# `blocklab` runs PostgreSQL (the coordinator and worker units run as it too),
# `blocklab-build` configures and makes sources; the agent itself runs as root, holds the
# host's credential
# (/etc/blocklab/agent.token, 0600 root, if present) and the build cache
# (/var/cache/blocklab/builds, root's). Config files under /etc/blocklab (from each daemon's
# --print-default-config; existing files are kept), data under /var/lib/blocklab, and
# /usr/local/libexec/blocklab/blocklab-drop-caches (drops the OS page cache, no arguments; the
# agent, as root, drops the cache itself).
#
#   sudo deploy/install.sh                    # all three services on this host
#   sudo deploy/install.sh agent worker       # only these services (e.g. a lab machine)
#   sudo deploy/install.sh --no-build ...     # install target/release as is
#
# Environment: PREFIX (/usr/local), BLOCKLAB_CONF_DIR (/etc/blocklab), BLOCKLAB_DATA_DIR
# (/var/lib/blocklab), BLOCKLAB_UNIT_DIR (/etc/systemd/system), BLOCKLAB_BIN_SOURCE (the
# directory holding the built binaries, default target/release). Without systemd running as
# PID 1 the units are installed but not started; deploy/check-restart.sh runs the installed
# binaries under a restart loop instead.
set -euo pipefail
cd "$(dirname "$0")/.."

PREFIX=${PREFIX:-/usr/local}
CONF_DIR=${BLOCKLAB_CONF_DIR:-/etc/blocklab}
DATA_DIR=${BLOCKLAB_DATA_DIR:-/var/lib/blocklab}
CACHE_DIR=${BLOCKLAB_CACHE_DIR:-/var/cache/blocklab}
UNIT_DIR=${BLOCKLAB_UNIT_DIR:-/etc/systemd/system}
BIN_SOURCE=${BLOCKLAB_BIN_SOURCE:-target/release}
USER_NAME=blocklab
BUILD_USER_NAME=blocklab-build
BINARIES=(blocklab blocklab-coordinator blocklab-agent blocklab-worker)

build=1
services=()
for a in "$@"; do
  case "$a" in
    --no-build) build=0 ;;
    coordinator|agent|worker) services+=("$a") ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "install: unknown argument $a (expected --no-build, coordinator, agent, worker)" >&2; exit 2 ;;
  esac
done
[ ${#services[@]} -gt 0 ] || services=(coordinator agent worker)

if [ "$(id -u)" -ne 0 ]; then
  echo "install: run as root (sudo deploy/install.sh)" >&2
  exit 1
fi

if [ "$build" = 1 ]; then
  echo "install: building release binaries"
  # Build as the owner of the checkout, so target/ does not end up owned by root.
  owner=$(stat -c %U .)
  if [ "$owner" != root ] && command -v sudo >/dev/null; then
    sudo -u "$owner" -H cargo build --release --locked --bins
  else
    cargo build --release --locked --bins
  fi
fi
for b in "${BINARIES[@]}"; do
  [ -x "$BIN_SOURCE/$b" ] || { echo "install: $BIN_SOURCE/$b is missing (build first)" >&2; exit 1; }
done

install -d -m 755 "$PREFIX/bin"
for b in "${BINARIES[@]}"; do
  install -m 755 "$BIN_SOURCE/$b" "$PREFIX/bin/$b"
done
echo "install: binaries in $PREFIX/bin"

if ! id "$USER_NAME" >/dev/null 2>&1; then
  echo "install: creating system user $USER_NAME"
  useradd --system --home-dir "$DATA_DIR" --shell /usr/sbin/nologin "$USER_NAME"
fi
if ! id "$BUILD_USER_NAME" >/dev/null 2>&1; then
  echo "install: creating system user $BUILD_USER_NAME (configures and makes PostgreSQL sources)"
  useradd --system --home-dir /nonexistent --no-create-home --shell /usr/sbin/nologin "$BUILD_USER_NAME"
fi

# The agent runs as root and drops the OS page cache itself. The fixed helper stays for an
# agent run as an unprivileged user (developer mode), which calls it through
# `sudo -n` if an administrator adds the sudoers line for that user (see README.md). The
# sudoers line older installs gave $USER_NAME is removed: $USER_NAME now runs only the servers.
HELPER=/usr/local/libexec/blocklab/blocklab-drop-caches
install -d -m 755 "$(dirname "$HELPER")"
install -m 755 -o root -g root deploy/libexec/blocklab-drop-caches "$HELPER"
if [ -e /etc/sudoers.d/blocklab-agent ]; then
  rm -f /etc/sudoers.d/blocklab-agent
  echo "install: removed /etc/sudoers.d/blocklab-agent (the agent runs as root)"
fi

install -d -m 755 "$CONF_DIR"
install -d -m 750 -o "$USER_NAME" -g "$USER_NAME" "$DATA_DIR"
# The agent (root) owns its work directory and the build cache; each run's directory in it
# is the servers' user's (0700), each build's the builds user's (0700). The agent takes over
# a cache of an older layout at its start (entries it did not make are rebuilt).
install -d -m 755 -o root -g root "$DATA_DIR/agent"
install -d -m 755 "$CACHE_DIR"
install -d -m 755 -o root -g root "$CACHE_DIR/builds"
# The agent's credential is its alone: it refuses one that group or others can read.
if [ -e "$CONF_DIR/agent.token" ]; then
  chown root:root "$CONF_DIR/agent.token"
  chmod 600 "$CONF_DIR/agent.token"
  echo "install: $CONF_DIR/agent.token is root's, mode 600"
fi

write_config() { # name, command...
  local file="$CONF_DIR/$1.toml"
  shift
  if [ -e "$file" ]; then
    echo "install: keeping $file"
    "$@" --print-default-config > "$file.default"
  else
    "$@" --print-default-config > "$file"
    echo "install: wrote $file"
  fi
  chmod 644 "$file"
}
write_config coordinator "$PREFIX/bin/blocklab-coordinator"
write_config agent "$PREFIX/bin/blocklab-agent"
write_config worker "$PREFIX/bin/blocklab-worker" serve

install -d -m 755 "$UNIT_DIR"
for s in coordinator agent worker; do
  sed "s#/usr/local/bin/#$PREFIX/bin/#; s#/etc/blocklab/#$CONF_DIR/#" \
    "deploy/systemd/blocklab-$s.service" > "$UNIT_DIR/blocklab-$s.service"
  chmod 644 "$UNIT_DIR/blocklab-$s.service"
done
echo "install: units in $UNIT_DIR"

if [ -d /run/systemd/system ] && command -v systemctl >/dev/null; then
  systemctl daemon-reload
  for s in "${services[@]}"; do
    systemctl enable --now "blocklab-$s.service"
    echo "install: blocklab-$s enabled and started"
  done
else
  echo "install: systemd is not running here; units installed but not started."
  echo "install: start the daemons by hand, or try deploy/check-restart.sh"
fi
