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
  procps iproute2
)

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
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# Debian starts redis-server as a service on install; it would hold port
# 6379 (perfcached's default). Tests and benchmarks start their own, so
# stop and disable the one we just installed (never one that was there).
if printf '%s\n' "${missing[@]}" | grep -qx redis-server; then
  if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
    $SUDO systemctl disable --now redis-server >/dev/null 2>&1 || true
  else
    $SUDO service redis-server stop >/dev/null 2>&1 || true
    $SUDO update-rc.d redis-server disable >/dev/null 2>&1 || true
  fi
fi
echo "install-deps: done"
