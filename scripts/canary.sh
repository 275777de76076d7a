#!/usr/bin/env bash
# The canary (make canary): the engine's tests must FAIL on every deliberate
# fault of mem/canary.h, and pass on the same build with no fault selected.
# A detector that cannot fail is a defect; this proves each one can.
#   BUILD=build-canary scripts/canary.sh
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-canary}
U="$BUILD/bin/engine_unit_tests"
S="$BUILD/bin/engine_soak"
C="$BUILD/bin/crash_points"
names=("" "readers skip the seqlock re-check" "writers take no bucket lock"
       "repair keeps an interrupted split's misrouted copies" "a child binds to a live process's slot"
       "an adopter frees a claim before it leaves the slot"
       "aggregate readers skip the version re-check" "removing a hash / set frees its record, not its trie"
       "reads do not record their access" "a read's access lands in a record no longer linked"
       "a page marked draining still takes claims" "a moved record keeps its version"
       "automove swaps a slot outside the seqlock bracket" "the aging pass ages nothing"
       "the route word has no change count (ABA)"
       "eviction gives up on a sparse table (spurious -OOM)"
       "the large repair forgets a run at its group's end"
       "a large free gives back a group other objects still use"
       "the repair ignores a slot copy left in flight"
       "automove frees an overflow node it did not unlink"
       "a record whose trie cells moved keeps its version"
       "a given-back stack cell stays on the stack (handed out twice)"
       "a volatile policy evicts a pooled key without a TTL"
       "volatile policies keep picking collections with no TTL keys"
       "the volatile walk reads every bucket (few TTL keys out of reach)")
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT

# Each detector: a name and a command; exit 0 = the tests passed.
detectors=(
  "unit:$U"
  "soak:$S --procs 3 --seconds 8 --keys 20000"
  "crash-soak:$S --procs 3 --seconds 8 --keys 20000 --crash 12"
  "crash-points:$C --sample 150 --per-site 1"
)

run() {  # fault detector-command -> exit code (timeouts count as failure)
  PERFCACHED_CANARY=$1 timeout 120 $2 > "$log/out" 2>&1
}

echo "canary: the unbroken canary build must pass every detector"
for d in "${detectors[@]}"; do
  if ! run 0 "${d#*:}"; then
    echo "canary: detector ${d%%:*} fails without a fault:"; tail -20 "$log/out"; exit 1
  fi
done
total=$((${#names[@]} - 1))  # names[0] is the unbroken build
caught=0
for f in $(seq 1 "$total"); do
  by=""
  for d in "${detectors[@]}"; do
    if ! run "$f" "${d#*:}"; then by="${d%%:*}"; break; fi
  done
  if [ -n "$by" ]; then
    echo "canary fault $f (${names[$f]}): caught by $by"; caught=$((caught + 1))
  else
    echo "canary fault $f (${names[$f]}): NOT CAUGHT by any detector"
  fi
done
echo "canary: $caught of $total deliberate faults caught"
[ "$caught" -eq "$total" ]
