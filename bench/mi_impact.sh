#!/usr/bin/env bash
# What does MI introspection cost the data path? perfcached with 1,000,000
# keys serves redis-benchmark (GET/SET, 50 clients, pipeline 16) while a
# client walks the whole keyspace over MI (perf_scan, 100 buckets a call, in
# a loop, plus perf_keys with the default limit) — against the same
# benchmark with MI idle. Runs alternate; median of RUNS (default 3).
#   bench/mi_impact.sh [--quick]
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=3; REQS=4000000; KEYS=1000000
if [ "${1:-}" = "--quick" ]; then RUNS=1; REQS=400000; KEYS=100000; fi
W=$(mktemp -d)
PORT=$(/usr/bin/python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
bin/perfcached -D -o listen.resp=127.0.0.1:$PORT -o memory.arena_mb=512 -o memory.hugepages=off \
  -o mi.fifo_name=$W/fifo -o mi.datagram=$W/mi.sock -o mi.reply_dir=$W/ > $W/log 2>&1 &
PID=$!
MIPID=""
cleanup() {
  set +e  # a cleanup step that fails must not skip the others (the daemon above all)
  [ -n "$MIPID" ] && kill "$MIPID" 2>/dev/null
  kill "$PID" 2>/dev/null
  wait "$PID" 2>/dev/null
  rm -rf "$W"
}
trap cleanup EXIT
for _ in $(seq 100); do redis-cli -p $PORT ping >/dev/null 2>&1 && break; sleep 0.1; done
echo "mi_impact: preloading $KEYS keys"
/usr/bin/python3 - "$PORT" "$KEYS" <<'PY'
import sys, redis
r = redis.Redis(port=int(sys.argv[1]))
n = int(sys.argv[2])
p = r.pipeline(transaction=False)
for i in range(n):
    p.set("key:%08d" % i, "x" * 100)
    if i % 20000 == 19999:
        p.execute()
p.execute()
print("mi_impact: dbsize", r.dbsize())
PY
# Requests per second of one redis-benchmark run (SET and GET averaged).
bench_rps() {
  timeout 300 redis-benchmark -p $PORT -c 50 -P 16 -d 100 -r $KEYS -t set,get -n $REQS --csv 2>/dev/null |
    awk -F'"' '/^"(SET|GET)"/{s+=$4; n++} END{printf "%d\n", s/n}'
}
mi_walk() {
  # One lightweight client (no process per call): perf_scan over the
  # datagram socket, 100 buckets a call, whole keyspace, again and again.
  exec /usr/bin/python3 - "$W/mi.sock" "$W/walker.sock" <<'PY'
import json, os, socket, sys
srv, me = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
if os.path.exists(me):
    os.unlink(me)
s.bind(me)
s.settimeout(5)
calls = 0
while True:
    cursor = 0
    while True:
        s.sendto(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "perf_scan",
                             "params": [cursor, "*", "100"]}).encode(), srv)
        cursor = json.loads(s.recv(1 << 20))["result"]["cursor"]
        calls += 1
        if cursor == 0:
            break
    s.sendto(b'{"jsonrpc":"2.0","id":2,"method":"perf_keys","params":["key:0000*"]}', srv)
    s.recv(1 << 20)
PY
}
declare -a A B
for i in $(seq $RUNS); do
  A+=($(bench_rps))
  mi_walk & MIPID=$!
  sleep 0.5
  B+=($(bench_rps))
  kill $MIPID 2>/dev/null; wait $MIPID 2>/dev/null || true; MIPID=""
  echo "mi_impact: run $i: MI idle ${A[-1]} req/s, MI walking ${B[-1]} req/s"
done
med() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
ma=$(med "${A[@]}"); mb=$(med "${B[@]}")
echo "perfcached RESP throughput, $KEYS keys, redis-benchmark -c 50 -P 16 GET/SET:"
echo "  MI idle:                                   $ma requests/s"
echo "  MI walking the keyspace (perf_scan loop):  $mb requests/s"
/usr/bin/python3 -c "a=$ma;b=$mb;print('  cost: %.1f%% (target < 5%%)' % (100.0*(a-b)/a))"
