#!/usr/bin/env bash
# Runs every test stage of `make check` (after the build) and ends with one
# line "check: N passed, M failed" (unit tests, integration tests, soak runs
# and fuzz targets, each counted). Exit status 0 only when nothing failed.
#   BUILD=build scripts/check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
passed=0
failed=0
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT

stage() { echo "== $*"; }

stage "dependency direction (scripts/check-deps.sh)"
if scripts/check-deps.sh; then passed=$((passed + 1)); else failed=$((failed + 1)); fi

stage "unit tests ($BUILD/bin/unit_tests)"
"$BUILD/bin/unit_tests" > "$log/unit" 2>&1
rc=$?
tail -n 3 "$log/unit"
n=$(grep -oE '[0-9]+ tests,' "$log/unit" | grep -oE '[0-9]+' | tail -1)
f=$(grep -oE '\(([0-9]+) failures' "$log/unit" | grep -oE '[0-9]+' | tail -1)
n=${n:-0}; f=${f:-0}
if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; grep -B2 -A20 -i "error\|failure" "$log/unit" | head -60; fi
[ "$f" -gt 0 ] && grep -A6 "Failure in" "$log/unit" | head -80
passed=$((passed + n - f)); failed=$((failed + f))

stage "engine soak (3 workers + splitter, then 12 x kill -9)"
for args in "--procs 3 --seconds 6 --keys 20000" "--procs 3 --seconds 6 --keys 20000 --crash 12"; do
  if "$BUILD/bin/engine_soak" $args; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
done

stage "crash points: a writer killed at sampled stores, then repair + audit ($CRASH_BUILD)"
if "${CRASH_BUILD:-build-crash}/bin/crash_points" --sample 300 --per-site 2; then
  passed=$((passed + 1)); else failed=$((failed + 1)); fi

stage "canary: every deliberate engine fault must make the tests fail"
if BUILD="${CANARY_BUILD:-build-canary}" scripts/canary.sh; then
  passed=$((passed + 1)); else failed=$((failed + 1)); fi

stage "integration tests (real daemon, redis-server, redis-cli, python3-redis)"
(cd test/integration && timeout 1500 /usr/bin/python3 -m unittest discover -v -p 'test_*.py') \
  > "$log/integ" 2>&1
rc=$?
grep -E "^(Ran|OK|FAILED)" "$log/integ"
n=$(grep -oE '^Ran [0-9]+' "$log/integ" | grep -oE '[0-9]+')
f=0
# "(failures=2, errors=1, expected failures=1, unexpected successes=1)": an
# expected failure is no failure; an unexpected success is one.
for x in $(grep -oE '(\(|, )(failures|errors|unexpected successes)=[0-9]+' "$log/integ" |
           grep -oE '[0-9]+'); do f=$((f + x)); done
n=${n:-0}
if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
[ "$f" -gt 0 ] && grep -B5 -A30 "^FAIL:\|^ERROR:" "$log/integ" | head -150
passed=$((passed + n - f)); failed=$((failed + f))

stage "differential: redis-server vs perfcached, same streams, same bytes (test/diff)"
# One check: no difference outside test/diff/allow.txt, every dispatched
# command covered or exempt (test/diff/README.md). A new seed every run.
# Its self-test first: with ECHO's replies corrupted it must report ECHO.
timeout 120 /usr/bin/python3 test/diff/run_diff.py --corrupt echo --ops 0 --stream server \
  > "$log/diff-self" 2>&1
self_rc=$?
if [ "$self_rc" -eq 0 ] || ! grep -q "^  command:    ECHO" "$log/diff-self"; then
  echo "diff self-test: a corrupted ECHO reply was not reported"; tail -5 "$log/diff-self"
fi
timeout 300 /usr/bin/python3 test/diff/run_diff.py > "$log/diff" 2>&1
rc=$?
grep -E "^diff: (seed|[0-9]+ commands)" "$log/diff"
if [ "$self_rc" -eq 0 ] || ! grep -q "^  command:    ECHO" "$log/diff-self"; then
  failed=$((failed + 1))
elif [ "$rc" -eq 0 ]; then
  passed=$((passed + 1))
else
  grep -B1 -A14 "^DIFFERENCE" "$log/diff" | head -150
  grep -E "NOT COVERED|FAILED|Traceback|Error" "$log/diff" | head -20
  failed=$((failed + 1))
fi

stage "fuzz targets: corpus regression + 10 s of fresh input each"
for t in ${FUZZ_TARGETS:-glob resp config mi http event xmlrpc reload export snapshot}; do
  bin="$BUILD/fuzz/${t}_fuzz"
  if [ ! -x "$bin" ]; then echo "fuzz $t: not built"; failed=$((failed + 1)); continue; fi
  if "$bin" -runs=0 "test/fuzz/corpus/$t" > "$log/fz" 2>&1 &&
     "$bin" -max_total_time=10 -max_len=4096 > "$log/fz" 2>&1; then
    echo "fuzz $t: ok"; passed=$((passed + 1))
  else
    echo "fuzz $t: FAILED"; tail -30 "$log/fz"; failed=$((failed + 1))
  fi
done

echo "check: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
