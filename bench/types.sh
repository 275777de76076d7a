#!/usr/bin/env bash
# bench/types.sh — hashes and sets (and SET/GET again): perfcached vs Debian's
# redis-server over RESP, same workload, ratios measured in the same run.
#
#   bench/types.sh             full run, tables (about 3-5 min)
#   bench/types.sh --quick     smoke run (~30-60 s): small -n, 100k-member big set/hash
#   bench/types.sh --json      the same, ONE JSON object on stdout
#   options: --big N (members of the big set / fields of the big hash,
#            default 1000000, --quick 100000)
#   env:     WORKERS (perfcached workers, default: number of cores),
#            PERFCACHED, REDIS_SERVER, REDIS_BENCHMARK (binaries), KEEP_TMP=1
#
# The driver is bench/types_bench.py (Debian's /usr/bin/python3, stdlib only).
# Progress goes to stderr, tables to stdout. Exit code 0 unless the benchmark
# itself broke (a server did not start or died, redis-benchmark failed, wrong
# replies); slower figures never fail it. See bench/README.md, docs/types.md.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ ! -x "${PERFCACHED:-$ROOT/bin/perfcached}" ]; then
  echo "types.sh: bin/perfcached missing, building it (make -j2 bin/perfcached)" >&2
  make -C "$ROOT" -j2 bin/perfcached >&2
fi
exec /usr/bin/python3 "$ROOT/bench/types_bench.py" "$@"
