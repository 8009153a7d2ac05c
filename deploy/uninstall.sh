#!/usr/bin/env bash
# Reverses deploy/install.sh: stops and disables the services, removes the units and the
# binaries. Configuration (/etc/blocklab) and data (/var/lib/blocklab: the catalog, run
# directories) are kept unless --purge is given. The `blocklab` and `blocklab-build` users
# stay: deploy/setup.sh uses them too (PostgreSQL servers and builds).
set -euo pipefail

PREFIX=${PREFIX:-/usr/local}
CONF_DIR=${BLOCKLAB_CONF_DIR:-/etc/blocklab}
DATA_DIR=${BLOCKLAB_DATA_DIR:-/var/lib/blocklab}
UNIT_DIR=${BLOCKLAB_UNIT_DIR:-/etc/systemd/system}

purge=0
for a in "$@"; do
  case "$a" in
    --purge) purge=1 ;;
    *) echo "uninstall: unknown argument $a (expected --purge)" >&2; exit 2 ;;
  esac
done
if [ "$(id -u)" -ne 0 ]; then
  echo "uninstall: run as root" >&2
  exit 1
fi

systemd=0
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null; then systemd=1; fi
for s in coordinator agent worker; do
  unit="blocklab-$s.service"
  if [ "$systemd" = 1 ]; then
    systemctl disable --now "$unit" 2>/dev/null || true
  fi
  rm -f "$UNIT_DIR/$unit"
done
[ "$systemd" = 1 ] && systemctl daemon-reload
for b in blocklab blocklab-coordinator blocklab-agent blocklab-worker; do
  rm -f "$PREFIX/bin/$b"
done
rm -f /etc/sudoers.d/blocklab-agent /usr/local/libexec/blocklab/blocklab-drop-caches
rmdir /usr/local/libexec/blocklab 2>/dev/null || true
echo "uninstall: services, units, binaries and the page cache helper removed"
if [ "$purge" = 1 ]; then
  rm -rf "$CONF_DIR" "$DATA_DIR"
  echo "uninstall: removed $CONF_DIR and $DATA_DIR"
else
  echo "uninstall: kept $CONF_DIR and $DATA_DIR (--purge removes them)"
fi
