#!/usr/bin/env bash
# Installs (with apt-get) whatever perfcached needs to build and test that is
# not already present. Idempotent and quiet when nothing is missing.
#   scripts/install-deps.sh          build + test dependencies
#   scripts/install-deps.sh --check  only report what is missing (exit 1 if any)
set -euo pipefail

PKGS=(
  g++ make pkg-config
  libsodium-dev libevent-dev libsqlite3-dev libzstd-dev
  libcpputest-dev libtinyxml2-dev
  nlohmann-json3-dev
  redis-tools redis-server python3 python3-redis python3-prometheus-client sqlite3
  clang libclang-rt-14-dev
  procps iproute2 curl
  groff-base man-db
  systemd                      # systemd-analyze: test_systemd verifies the unit (PID 1 is not changed)
  dpkg-dev debhelper fakeroot build-essential lintian adduser   # make deb (dpkg-buildpackage -b, dh 13), lintian; test_deb installs the .debs
  kamailio kamailio-redis-modules rtpengine-daemon
  libpq-dev postgresql         # [db] url = postgres://...: the backend and the server test_db starts
)
# Packages whose maintainer scripts start a system service on install. The
# tests start their own (foreground, loopback, temp dirs) and must never
# depend on, or collide with, a system one.
SERVICES=(redis-server kamailio rtpengine-daemon postgresql)

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ "${1:-}" = "--check" ]; then
  if [ ${#missing[@]} -gt 0 ]; then echo "missing: ${missing[*]}"; exit 1; fi
  exit 0
fi

[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# policy-rc.d answering 101 keeps invoke-rc.d (sysvinit and systemd alike)
# from starting services while the packages install; ours goes away after.
policy=/usr/sbin/policy-rc.d
own_policy=""
if [ ! -e "$policy" ]; then
  trap '[ -z "$own_policy" ] || $SUDO rm -f "$policy"' EXIT
  own_policy=1
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null
  $SUDO chmod 755 "$policy"
fi
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
if [ -n "$own_policy" ]; then $SUDO rm -f "$policy"; own_policy=""; fi
# Belt and braces: stop and disable any of those services we just installed
# (never one that was there before), with or without systemd. redis-server
# would hold 6379 (perfcached's default), kamailio 5060, rtpengine its ng port.
for svc in "${SERVICES[@]}"; do
  printf '%s\n' "${missing[@]}" | grep -qx "$svc" || continue
  if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
    $SUDO systemctl disable --now "$svc" >/dev/null 2>&1 || true
  else
    $SUDO service "$svc" stop >/dev/null 2>&1 || true
    $SUDO update-rc.d "$svc" disable >/dev/null 2>&1 || true
  fi
done
echo "install-deps: done"
