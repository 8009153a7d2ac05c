#!/usr/bin/env bash
# Installs what blocklab's demo and tests need on Debian, idempotently:
#   - apt packages: what the demo needs (the compiler toolchain for PostgreSQL, bzip2,
#     sqlite3, dpkg-dev for the source download) and, unless BLOCKLAB_SETUP_FOR=demo (set by
#     deploy/demo.sh), what only the tests need (iproute2 for network namespaces, Debian's
#     PostgreSQL 15 binaries, chromium for the dashboard test in headless mode, curl, time)
#   - the unprivileged OS users the agent keeps apart: "blocklab" runs initdb/postgres,
#     "blocklab-build" unpacks, configures, makes and installs sources
#   - the PostgreSQL 15 release tarball, from Debian's source package (works offline from
#     the Debian mirror), cached under /var/cache/blocklab/src
#   - for the tests only: the PostgreSQL 17 and 18 release tarballs, from the newest
#     postgresql-17 (trixie) and postgresql-18 (sid) source packages, through deb-src entries
#     of their own (no binary package comes from those suites), or from the newest earlier
#     point release in the mirror's pool when the index names files the mirror no longer
#     serves (its .dsc checked against debian-keyring), and bison, flex (17's and 18's
#     tarballs carry no generated parser files) and liburing-dev (--with-liburing)
# Source it (". deploy/setup.sh") to get BLOCKLAB_* variables exported.
set -euo pipefail

BLOCKLAB_CACHE=${BLOCKLAB_CACHE:-/var/cache/blocklab}
export BLOCKLAB_PG_USER=${BLOCKLAB_PG_USER:-blocklab}
export BLOCKLAB_BUILD_USER=${BLOCKLAB_BUILD_USER:-blocklab-build}
export BLOCKLAB_BUILD_CACHE=${BLOCKLAB_BUILD_CACHE:-$BLOCKLAB_CACHE/builds}
export BLOCKLAB_PG_TARBALL=${BLOCKLAB_PG_TARBALL:-$BLOCKLAB_CACHE/src/postgresql-15.tar.bz2}
export BLOCKLAB_PG17_TARBALL=${BLOCKLAB_PG17_TARBALL:-$BLOCKLAB_CACHE/src/postgresql-17.tar.bz2}
export BLOCKLAB_PG18_TARBALL=${BLOCKLAB_PG18_TARBALL:-$BLOCKLAB_CACHE/src/postgresql-18.tar.bz2}

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup: run as root or install sudo" >&2; exit 1; }
  SUDO="sudo"
fi

pkgs=(build-essential pkg-config libreadline-dev zlib1g-dev bzip2 ca-certificates sqlite3 ccache procps dpkg-dev)
case "${BLOCKLAB_SETUP_FOR:-test}" in
  demo) ;;
  test) pkgs+=(iproute2 time postgresql-15 postgresql-client-15 chromium curl bison flex liburing-dev git debian-keyring) ;;
  *) echo "setup: BLOCKLAB_SETUP_FOR=$BLOCKLAB_SETUP_FOR (allowed: demo, test)" >&2; exit 1 ;;
esac
need_pkgs=()
for pkg in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need_pkgs+=("$pkg")
done
if [ ${#need_pkgs[@]} -gt 0 ]; then
  echo "setup: installing ${need_pkgs[*]}"
  $SUDO apt-get update -q
  # The Debian postgresql package would start a cluster of its own; we only want the binaries.
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need_pkgs[@]}"
fi

if ! command -v cargo >/dev/null; then
  echo "setup: cargo (Rust 1.85 or newer) is required; install it with rustup" >&2
  exit 1
fi

if ! id "$BLOCKLAB_PG_USER" >/dev/null 2>&1; then
  echo "setup: creating OS user $BLOCKLAB_PG_USER (runs initdb and postgres)"
  $SUDO useradd --system --home-dir /var/lib/blocklab --shell /usr/sbin/nologin "$BLOCKLAB_PG_USER"
fi
if ! id "$BLOCKLAB_BUILD_USER" >/dev/null 2>&1; then
  echo "setup: creating OS user $BLOCKLAB_BUILD_USER (configures and makes PostgreSQL sources)"
  $SUDO useradd --system --home-dir /nonexistent --no-create-home --shell /usr/sbin/nologin "$BLOCKLAB_BUILD_USER"
fi
if [ "$BLOCKLAB_BUILD_USER" = "$BLOCKLAB_PG_USER" ]; then
  echo "setup: BLOCKLAB_BUILD_USER must differ from BLOCKLAB_PG_USER ($BLOCKLAB_PG_USER)" >&2
  exit 1
fi

$SUDO mkdir -p "$BLOCKLAB_CACHE/src" "$BLOCKLAB_BUILD_CACHE" /var/lib/blocklab
$SUDO chmod 755 "$BLOCKLAB_CACHE" "$BLOCKLAB_CACHE/src" "$BLOCKLAB_BUILD_CACHE" /var/lib/blocklab

# The configured Debian mirror (deb.debian.org when none is configured).
mirror_uri() {
  local uri
  uri=$(grep -h '^URIs:' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n1 | awk '{print $2}')
  echo "${uri:-http://deb.debian.org/debian}"
}

# When the mirror's index names a version whose files it no longer serves (the pool keeps a
# few earlier point releases), takes the newest earlier point release of the same Debian
# revision from the pool: its .dsc must carry a good signature of a Debian developer
# (debian-keyring), and the .orig tarball the SHA-256 that .dsc names. Prints the tarball's
# path (in $2).
fetch_older_orig() {
  local major=$1 tmp=$2 newest upstream minor rev pool dsc name sum m
  newest=$(apt-cache showsrc "postgresql-$major" | awk '/^Version:/{print $2}' | sort -Vr | head -n1)
  [ -n "$newest" ] && command -v curl >/dev/null || return 1
  upstream=${newest%%-*}
  rev=${newest#*-}
  minor=${upstream#*.}
  case "$minor" in '' | *[!0-9]*) return 1 ;; esac
  [ -s /usr/share/keyrings/debian-keyring.gpg ] \
    || $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debian-keyring >&2
  pool="$(mirror_uri)/pool/main/p/postgresql-$major"
  for ((m = minor - 1; m >= 0 && m >= minor - 4; m--)); do
    dsc="postgresql-${major}_${major}.${m}-${rev}.dsc"
    curl -fsS -o "$tmp/$dsc" "$pool/$dsc" 2>/dev/null || { rm -f "$tmp/$dsc"; continue; }
    if ! gpgv --keyring /usr/share/keyrings/debian-keyring.gpg "$tmp/$dsc" >/dev/null 2>&1; then
      echo "setup: $dsc: no good signature of a Debian developer; not used" >&2
      rm -f "$tmp/$dsc"
      continue
    fi
    sum="" name=""
    read -r sum _ name < <(awk '/^Checksums-Sha256:/{f=1;next} /^[^ ]/{f=0} f&&/orig\.tar\.[a-z0-9]+$/{print $1, $2, $3; exit}' "$tmp/$dsc")
    [ -n "${name:-}" ] || continue
    echo "setup: postgresql-$major=$newest is not served; fetching $major.$m ($dsc, signature good)" >&2
    curl -fsS -o "$tmp/$name" "$pool/$name" || { rm -f "$tmp/$name"; continue; }
    if [ "$(sha256sum "$tmp/$name" | cut -d' ' -f1)" != "$sum" ]; then
      echo "setup: $name does not match the SHA-256 its .dsc names; not used" >&2
      rm -f "$tmp/$name"
      continue
    fi
    echo "$tmp/$name"
    return 0
  done
  return 1
}

# Downloads the newest version of source package postgresql-$1 that the mirror serves, with
# `apt-get source --download-only` (which verifies what it fetches: the suite's signed Release
# names the Sources index's checksum, the index names the .dsc's, the .dsc names the .orig
# tarball's), and installs its .orig tarball, PostgreSQL's release tarball, as $2 (keeping
# the real compression in the name: the agent's tar reads any).
fetch_orig() {
  local major=$1 dest=$2 tmp version orig=""
  tmp=$(mktemp -d)
  chmod 755 "$tmp"
  for version in $(apt-cache showsrc "postgresql-$major" | awk '/^Version:/{print $2}' | sort -Vru); do
    echo "setup: fetching PostgreSQL source postgresql-$major=$version"
    if (cd "$tmp" && apt-get source --download-only "postgresql-$major=$version" >/dev/null 2>&1); then
      orig=$(ls "$tmp"/postgresql-"$major"_*.orig.tar.* 2>/dev/null | grep -v '\.asc$' | head -n1 || true)
      [ -n "$orig" ] && break
    fi
    echo "setup: postgresql-$major=$version did not download"
    orig=""
    rm -f "$tmp"/*
  done
  if [ -z "$orig" ]; then
    orig=$(fetch_older_orig "$major" "$tmp") || orig=""
  fi
  if [ -z "$orig" ]; then
    rm -rf "$tmp"
    echo "setup: could not download any postgresql-$major source package version" >&2
    return 1
  fi
  case "$orig" in
    *.tar.bz2) ;;
    *) dest=${dest%.tar.bz2}.tar.${orig##*.tar.} ;;
  esac
  $SUDO install -m 644 "$orig" "$dest"
  rm -rf "$tmp"
  echo "setup: installed $(basename "$orig") as $dest"
}

fetch_pg_source() {
  local list=/etc/apt/sources.list.d/blocklab-deb-src.sources
  if ! apt-cache showsrc postgresql-15 2>/dev/null | grep -q '^Version:'; then
    echo "setup: adding deb-src entries for the configured Debian mirror"
    local uri
    uri=$(mirror_uri)
    $SUDO tee "$list" >/dev/null <<SRC
Types: deb-src
URIs: $uri
Suites: bookworm bookworm-updates
Components: main

Types: deb-src
URIs: ${uri%/debian}/debian-security
Suites: bookworm-security
Components: main
SRC
    $SUDO apt-get update -q
  fi
  fetch_orig 15 "$BLOCKLAB_PG_TARBALL"
}

if [ ! -s "$BLOCKLAB_PG_TARBALL" ]; then
  fetch_pg_source
fi
echo "setup: PostgreSQL source $BLOCKLAB_PG_TARBALL ($(tar -tjf "$BLOCKLAB_PG_TARBALL" | head -n1 | cut -d/ -f1))"

# PostgreSQL 17 and 18 come from Debian's newer suites as source packages only: the sources
# file below has deb-src entries and no deb entry, so apt never installs a binary from them.
fetch_newer_pg_source() {
  local major=$1 dest=$2 list=/etc/apt/sources.list.d/blocklab-deb-src-newer.sources
  if [ ! -f "$list" ]; then
    echo "setup: adding deb-src entries for trixie and sid (source packages only)"
    local uri
    uri=$(mirror_uri)
    $SUDO tee "$list" >/dev/null <<SRC
Types: deb-src
URIs: $uri
Suites: trixie trixie-updates sid
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: ${uri%/debian}/debian-security
Suites: trixie-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
    $SUDO apt-get update -q
  fi
  fetch_orig "$major" "$dest"
}

if [ "${BLOCKLAB_SETUP_FOR:-test}" = test ]; then
  missing=()
  for major in 17 18; do
    var=BLOCKLAB_PG${major}_TARBALL
    found=$(ls "${!var%.tar.bz2}".tar.* 2>/dev/null | head -n1 || true)
    if [ -z "$found" ] || [ ! -s "$found" ]; then
      if ! fetch_newer_pg_source "$major" "${!var}"; then
        missing+=("postgresql-$major")
        continue
      fi
      found=$(ls "${!var%.tar.bz2}".tar.* | head -n1)
    fi
    export "$var=$found"
    echo "setup: PostgreSQL source ${!var} ($(tar -tf "${!var}" | head -n1 | cut -d/ -f1))"
  done
  for pkg in "${missing[@]}"; do
    case "$pkg" in
      # The tests build 17 and 18 (tests/tests/pg_versions.rs): without them they cannot pass.
      *) echo "setup: no source tarball for $pkg (Debian's mirror served none): the tests need it" >&2; exit 1 ;;
    esac
  done
fi
