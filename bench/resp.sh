#!/usr/bin/env bash
# bench/resp.sh — perfcached vs Debian's redis-server over RESP.
#
# Starts both servers on free loopback ports, preloads 20,000 keys with
# 200-byte values, then drives each with redis-benchmark (50 clients,
# -d 200, -r 20000, SET and GET) at pipeline 1, 16 and 64. A run is
# `-t set` then `-t get` (the requests of `-t set,get`, split so that CPU
# time is measured per command). Runs alternate redis, perfcached, redis,
# perfcached, ...; the median of 3 runs is reported. For every run the servers' own CPU time (utime+stime from
# /proc/<pid>/stat, perfcached's supervisor + all its children) is
# divided by the requests served. See bench/README.md.
#
#   bench/resp.sh              full run, table (about 2-3 min)
#   bench/resp.sh --json       the same, ONE JSON object on stdout
#   bench/resp.sh --quick      smoke run: 1 run per cell, small -n
#   options: --runs N  --seconds S (target length of each cell, default 3)
#   env:     WORKERS (perfcached workers, default: number of cores),
#            PERFCACHED, REDIS_SERVER, REDIS_BENCHMARK, REDIS_CLI (binaries),
#            KEEP_TMP=1 (keep the temp dir: server logs, raw CSV per run)
#
# Progress goes to stderr, results to stdout. Exit code: 0 unless the
# benchmark itself failed (a server did not start or died, redis-benchmark
# failed or timed out, wrong replies, a perfcached child died during a run).
# Missed targets never fail it.
set -euo pipefail

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }

QUICK=0
JSON=0
RUNS=""
TARGET_S=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1 ;;
    --json) JSON=1 ;;
    --runs) RUNS=${2:?--runs needs a number}; shift ;;
    --seconds) TARGET_S=${2:?--seconds needs a number}; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "resp.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
if [ "$QUICK" = 1 ]; then
  RUNS=${RUNS:-1}
  TARGET_S=${TARGET_S:-0}
else
  RUNS=${RUNS:-3}
  TARGET_S=${TARGET_S:-3}
fi
[[ "$RUNS" =~ ^[1-9][0-9]*$ ]] || { echo "resp.sh: --runs must be a positive integer" >&2; exit 2; }
[[ "$TARGET_S" =~ ^[0-9]+([.][0-9]+)?$ ]] || { echo "resp.sh: --seconds must be a number" >&2; exit 2; }

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PERFCACHED=${PERFCACHED:-$ROOT/bin/perfcached}
REDIS_SERVER=${REDIS_SERVER:-redis-server}
REDIS_BENCHMARK=${REDIS_BENCHMARK:-redis-benchmark}
REDIS_CLI=${REDIS_CLI:-redis-cli}
CPUS=$(nproc)
WORKERS=${WORKERS:-$CPUS}
CLK_TCK=$(getconf CLK_TCK)
PIPELINES=(1 16 64)
TESTS=(set get)
CLIENTS=50
VALUE_BYTES=200
KEYS=20000
# Fixed -n for --quick, probe -n for the calibration of a full run.
declare -A QUICK_N=([1]=10000 [16]=50000 [64]=100000)
declare -A PROBE_N=([1]=50000 [16]=300000 [64]=600000)

T0=$(date +%s.%N)
say() { echo "resp.sh: $*" >&2; }
die() { echo "resp.sh: FAILED: $*" >&2; exit 1; }

for tool in "$REDIS_SERVER" "$REDIS_BENCHMARK" "$REDIS_CLI" python3 pgrep timeout; do
  command -v "$tool" >/dev/null 2>&1 || die "'$tool' not found (scripts/install-deps.sh installs it)"
done
if [ ! -x "$PERFCACHED" ]; then
  say "$PERFCACHED missing, building it (make -j$CPUS bin/perfcached)"
  make -C "$ROOT" -j"$CPUS" bin/perfcached >&2 || die "could not build bin/perfcached"
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/perfcached-resp-bench.XXXXXX")
RAW=$TMP/runs.tsv
: >"$RAW"
REDIS_PID=""
PC_PID=""
PC_KIDS=""       # perfcached children seen at start (and last sample)
PROBLEMS=0       # misbehaviour seen (reported; fails the exit code)

# ---------------------------------------------------------------- helpers ---

# Python helper: free ports, preload, verification, the final report.
cat >"$TMP/resp_tool.py" <<'PY'
import json, socket, statistics, sys

class Conn:
    def __init__(self, port, timeout=20):
        self.s = socket.create_connection(("127.0.0.1", int(port)), timeout=timeout)
        self.buf = bytearray()
        self.pos = 0

    def send(self, cmds):
        out = bytearray()
        for c in cmds:
            out += b"*%d\r\n" % len(c)
            for a in c:
                a = a if isinstance(a, bytes) else str(a).encode()
                out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.s.sendall(out)

    def _need(self, n):
        while len(self.buf) - self.pos < n:
            d = self.s.recv(1 << 20)
            if not d:
                raise EOFError("connection closed by the server")
            self.buf += d

    def _line(self):
        while True:
            i = self.buf.find(b"\r\n", self.pos)
            if i >= 0:
                line = bytes(self.buf[self.pos:i])
                self.pos = i + 2
                return line
            d = self.s.recv(1 << 20)
            if not d:
                raise EOFError("connection closed by the server")
            self.buf += d

    def reply(self):
        line = self._line()
        t, rest = line[:1], line[1:]
        if t == b"+":
            return rest.decode()
        if t == b"-":
            return RuntimeError(rest.decode())
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            if n < 0:
                return None
            self._need(n + 2)
            v = bytes(self.buf[self.pos:self.pos + n])
            self.pos += n + 2
            return v
        if t == b"*":
            n = int(rest)
            return None if n < 0 else [self.reply() for _ in range(n)]
        raise ValueError("bad reply line %r" % line)

    def call(self, *args):
        self.send([args])
        return self.reply()

def key(i):
    return b"key:%012d" % i  # redis-benchmark's __rand_int__ expansion

def preload_value(size):
    return (b"preload:" + b"p" * size)[:size]

def cmd_ports(n):
    socks = []
    for _ in range(int(n)):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    print(" ".join(str(s.getsockname()[1]) for s in socks))

def cmd_preload(port, nkeys, size):
    nkeys, size = int(nkeys), int(size)
    c = Conn(port)
    v = preload_value(size)
    bad = 0
    for lo in range(0, nkeys, 1000):
        hi = min(nkeys, lo + 1000)
        c.send([(b"SET", key(i), v) for i in range(lo, hi)])
        for i in range(lo, hi):
            r = c.reply()
            if r != "OK":
                bad += 1
                if bad <= 5:
                    print("SET %s replied %r" % (key(i).decode(), r), file=sys.stderr)
    if bad:
        print("preload: %d SETs did not reply +OK" % bad, file=sys.stderr)
        sys.exit(1)

def cmd_verify(port, nkeys, size):
    """DBSIZE is nkeys and every key holds a size-byte value: ours from the
    preload, or redis-benchmark's -d value (7.0 fills it with the same
    pseudo-random bytes in every run, so at most one other value may appear)."""
    nkeys, size = int(nkeys), int(size)
    c = Conn(port)
    pre = preload_value(size)
    problems = []
    n = c.call(b"DBSIZE")
    if n != nkeys:
        problems.append("DBSIZE replied %r, expected %d" % (n, nkeys))
    bad = 0
    others = {}

    def check(k, r):
        nonlocal bad
        if isinstance(r, bytes) and len(r) == size:
            if r != pre:
                others[r] = others.get(r, 0) + 1
            return
        bad += 1
        if bad <= 5:
            problems.append("%s replied %r" % (k, r if not isinstance(r, bytes)
                                               else r[:40] + b"... (%d bytes)" % len(r)))

    for lo in range(0, nkeys, 1000):
        hi = min(nkeys, lo + 1000)
        c.send([(b"GET", key(i)) for i in range(lo, hi)])
        for i in range(lo, hi):
            check("GET " + key(i).decode(), c.reply())
        c.send([[b"MGET"] + [key(i) for i in range(lo, hi)]])
        r = c.reply()
        if not isinstance(r, list) or len(r) != hi - lo:
            bad += 1
            problems.append("MGET key:%012d..key:%012d replied %r" % (lo, hi - 1, r))
        else:
            for i, x in zip(range(lo, hi), r):
                check("MGET ... " + key(i).decode(), x)
    if len(others) > 1:
        problems.append("%d different non-preload values (expected at most 1): %s" % (
            len(others), ", ".join("%r... x%d" % (v[:16], n) for v, n in list(others.items())[:5])))
    if bad:
        problems.append("%d wrong replies in total" % bad)
    for p in problems:
        print("verify: " + p, file=sys.stderr)
    sys.exit(1 if problems else 0)

def med(xs):
    return statistics.median(xs) if xs else None

def cmd_report(raw, meta_path):
    meta = json.load(open(meta_path))
    clk = meta["clk_tck"]
    runs = []
    for line in open(raw):
        f = line.split()
        if not f:
            continue
        runs.append(dict(server=f[0], pipeline=int(f[1]), rep=int(f[2]), test=f[3].upper(),
                         n=int(f[4]), rps=float(f[5]), avg=float(f[6]), p50=float(f[7]),
                         p95=float(f[8]), p99=float(f[9]), max=float(f[10]),
                         ticks=int(f[11]), wall=float(f[12]),
                         client=int(f[13]), other=int(f[14])))
    servers = ("redis", "perfcached")

    def sel(server, p, test=None):
        return [r for r in runs if r["server"] == server and r["pipeline"] == p
                and (test is None or r["test"] == test)]

    def ratio(a, b):
        return a / b if a is not None and b else None

    cells, cpu_both = [], []
    for p in meta["pipelines"]:
        for test in ("SET", "GET"):
            cell = {"pipeline": p, "test": test}
            for s in servers:
                rs = sel(s, p, test)
                cell["requests"] = rs[0]["n"] if rs else None
                cell[s + "_rps"] = med([r["rps"] for r in rs])
                cell[s + "_p99_ms"] = med([r["p99"] for r in rs])
                cell[s + "_p50_ms"] = med([r["p50"] for r in rs])
                cell[s + "_cpu_us_per_req"] = med([r["ticks"] / clk / r["n"] * 1e6 for r in rs])
                cell[s + "_seconds"] = med([r["n"] / r["rps"] for r in rs])
                cell[s + "_runs"] = [{"rps": r["rps"], "p99_ms": r["p99"],
                                      "cpu_us_per_req": round(r["ticks"] / clk / r["n"] * 1e6, 4),
                                      "seconds": round(r["n"] / r["rps"], 3),
                                      "client_cpu_us_per_req": round(r["client"] / clk / r["n"] * 1e6, 4),
                                      "other_load_cpus": round(r["other"] / clk / r["wall"], 3)}
                                     for r in rs]
            cell["rps_ratio"] = ratio(cell["perfcached_rps"], cell["redis_rps"])
            cell["p99_ratio"] = ratio(cell["perfcached_p99_ms"], cell["redis_p99_ms"])
            cell["cpu_ratio"] = ratio(cell["perfcached_cpu_us_per_req"], cell["redis_cpu_us_per_req"])
            cells.append(cell)
        # SET+GET together: CPU of both runs of a repetition / requests of both.
        both = {"pipeline": p}
        for s in servers:
            per_rep = []
            for rep in sorted({r["rep"] for r in sel(s, p)}):
                rs = [r for r in sel(s, p) if r["rep"] == rep]
                per_rep.append(sum(r["ticks"] for r in rs) / clk / sum(r["n"] for r in rs) * 1e6)
            both[s + "_cpu_us_per_req"] = med(per_rep)
        both["cpu_ratio"] = ratio(both["perfcached_cpu_us_per_req"], both["redis_cpu_us_per_req"])
        cpu_both.append(both)

    durations = [r["n"] / r["rps"] for r in runs]
    min_s = min(durations) if durations else None
    other = [r["other"] / clk / r["wall"] for r in runs]
    other_mean = sum(other) / len(other) if other else None
    other_max = max(other) if other else None

    # Targets (informational).
    miss_rps = ["P%d %s %.2fx" % (c["pipeline"], c["test"], c["rps_ratio"])
                for c in cells if c["rps_ratio"] is None or c["rps_ratio"] < 1.0]
    miss_p99 = ["P%d %s %.3f vs %.3f ms" % (c["pipeline"], c["test"], c["perfcached_p99_ms"], c["redis_p99_ms"])
                for c in cells if c["perfcached_p99_ms"] > c["redis_p99_ms"]]
    targets = {
        "rps_ge_redis_every_cell": {"met": not miss_rps, "missed_cells": miss_rps},
        "p99_le_redis_every_cell": {"met": not miss_p99, "missed_cells": miss_p99},
    }
    for b in cpu_both:
        if b["pipeline"] in (16, 64):
            targets["cpu_per_req_le_0.6x_redis_p%d" % b["pipeline"]] = {
                "met": b["cpu_ratio"] is not None and b["cpu_ratio"] <= 0.6, "ratio": b["cpu_ratio"]}

    out = dict(meta)
    out.update(cells=cells, cpu_set_get=cpu_both, targets=targets,
               min_run_seconds=min_s,
               other_load_cpus_mean=other_mean, other_load_cpus_max=other_max,
               all_runs_over_2s=(min_s is not None and min_s > 2.0))
    if meta["json"]:
        print(json.dumps(out, indent=1, sort_keys=False))
        return

    def f(x, fmt):
        return "-" if x is None else fmt % x

    print("perfcached vs redis-server over RESP, redis-benchmark -c %d -d %d -r %d, SET and GET"
          % (meta["clients"], meta["value_bytes"], meta["keys"]))
    print("%s; %s; %d CPUs shared by both servers and redis-benchmark; perfcached workers=%d"
          % (meta["redis_version"], meta["perfcached_version"], meta["cpus"], meta["workers"]))
    print("mode %s: %d run(s) per cell, median shown; runs alternate redis, perfcached, ..."
          % (meta["mode"], meta["runs"]))
    if meta.get("perfcached_tier"):
        print("perfcached arena: " + meta["perfcached_tier"])
    print()
    hdr = ("pipeline", "test", "requests", "redis rps", "perfcached rps", "ratio", "redis p99",
           "perfcached p99", "redis cpu us/req", "perfcached cpu us/req", "cpu ratio")
    w = (8, 4, 9, 11, 14, 6, 10, 14, 16, 21, 9)
    print("  ".join(h.rjust(x) for h, x in zip(hdr, w)))
    for c in cells:
        row = (str(c["pipeline"]), c["test"], str(c["requests"]),
               f(c["redis_rps"], "%.0f"), f(c["perfcached_rps"], "%.0f"), f(c["rps_ratio"], "%.2fx"),
               f(c["redis_p99_ms"], "%.3f ms"), f(c["perfcached_p99_ms"], "%.3f ms"),
               f(c["redis_cpu_us_per_req"], "%.3f"), f(c["perfcached_cpu_us_per_req"], "%.3f"),
               f(c["cpu_ratio"], "%.2fx"))
        print("  ".join(v.rjust(x) for v, x in zip(row, w)))
    print()
    print("server CPU per request, SET and GET runs together (utime+stime / requests):")
    for b in cpu_both:
        print("  P%-3d redis %s us, perfcached %s us, ratio %s"
              % (b["pipeline"], f(b["redis_cpu_us_per_req"], "%.3f"),
                 f(b["perfcached_cpu_us_per_req"], "%.3f"), f(b["cpu_ratio"], "%.2fx")))
    print()
    print("runs (rps / p99 ms / server cpu us per req / seconds / other load CPUs):")
    for c in cells:
        for s in servers:
            print("  P%-3d %s %-10s %s" % (c["pipeline"], c["test"], s, "  ".join(
                "%.0f/%.3f/%.3f/%.2fs/%.2f" % (r["rps"], r["p99_ms"], r["cpu_us_per_req"], r["seconds"],
                                               r["other_load_cpus"])
                for r in c[s + "_runs"])))
    if other_mean is not None:
        print("other load (CPU used by processes other than the server under test and redis-benchmark):"
              " mean %.2f, max %.2f CPUs%s" % (other_mean, other_max,
              "" if other_max < 0.25 else " -- the machine was NOT idle; figures are disturbed"))
    if min_s is not None:
        print("shortest run: %.2f s (%s)" % (min_s, "every run > 2 s" if min_s > 2.0 else
              ("NOT every run > 2 s" + (" (--quick)" if meta["mode"] == "quick" else ""))))
    print()
    ref = {16: 1.24, 64: 0.83}
    for b in cpu_both:
        if b["pipeline"] in ref:
            print("reference: redis-server 7.0.15 CPU/req at P%d here %s us (issue: about %.2f us)"
                  % (b["pipeline"], f(b["redis_cpu_us_per_req"], "%.2f"), ref[b["pipeline"]]))

    def verdict(ok):
        return "target met" if ok else "target missed"

    print("target: SET/GET rps >= redis-server in every cell: %s%s" % (
        verdict(not miss_rps), (" (" + ", ".join(miss_rps) + ")") if miss_rps else ""))
    print("target: p99 no worse than redis-server in every cell: %s%s" % (
        verdict(not miss_p99), (" (" + ", ".join(miss_p99) + ")") if miss_p99 else ""))
    for b in cpu_both:
        if b["pipeline"] in (16, 64):
            t = targets["cpu_per_req_le_0.6x_redis_p%d" % b["pipeline"]]
            print("target: server CPU/request <= 0.6x redis-server at P%d: %s (%s)" % (
                b["pipeline"], verdict(t["met"]), f(b["cpu_ratio"], "%.2fx")))
    print("problems: %d%s" % (meta["problems"], "" if not meta["problems"] else " (see stderr)"))
    print("wall time: %.1f s" % meta["wall_s"])

if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    {"ports": cmd_ports, "preload": cmd_preload, "verify": cmd_verify,
     "report": cmd_report}[cmd](*args)
PY
tool() { python3 "$TMP/resp_tool.py" "$@"; }

alive() { # pid: running (not gone, not a zombie)
  local st
  st=$(sed -n 's/^[0-9]* (.*) \([A-Za-z]\) .*/\1/p' "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}

# shellcheck disable=SC2317  # used by the EXIT trap
stop_pid() { # pid [pid...]: TERM, wait up to 10 s, then KILL
  local pid i
  for pid in "$@"; do
    if alive "$pid"; then kill -TERM "$pid" 2>/dev/null || true; fi
  done
  for ((i = 0; i < 100; i++)); do
    local any=0
    for pid in "$@"; do alive "$pid" && any=1; done
    [ "$any" = 0 ] && break
    sleep 0.1
  done
  for pid in "$@"; do
    if alive "$pid"; then
      say "pid $pid did not stop on SIGTERM in 10 s, sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
}

# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [ -n "$PC_PID" ]; then
    local kids
    kids=$(pgrep -P "$PC_PID" 2>/dev/null | tr '\n' ' ' || true)
    stop_pid "$PC_PID"
    wait "$PC_PID" 2>/dev/null || true
    # The supervisor stops its children; make sure none outlives it.
    # shellcheck disable=SC2086
    [ -n "$kids$PC_KIDS" ] && stop_pid $kids $PC_KIDS
  fi
  if [ -n "$REDIS_PID" ]; then
    stop_pid "$REDIS_PID"
    wait "$REDIS_PID" 2>/dev/null || true
  fi
  if [ "$rc" -ne 0 ] && [ -s "$TMP/perfcached.log" ]; then
    echo "---- perfcached log (last 30 lines) ----" >&2
    tail -n 30 "$TMP/perfcached.log" >&2
  fi
  if [ "${KEEP_TMP:-0}" = 1 ]; then say "kept $TMP"; else rm -rf "$TMP"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

wait_ready() { # name pid port: PING answers PONG within 20 s
  local name=$1 pid=$2 port=$3 i
  for ((i = 0; i < 200; i++)); do
    alive "$pid" || die "$name (pid $pid) exited during start-up"
    if [ "$(timeout 2 "$REDIS_CLI" -h 127.0.0.1 -p "$port" ping 2>/dev/null)" = PONG ]; then
      return 0
    fi
    sleep 0.1
  done
  die "$name did not answer PING on 127.0.0.1:$port within 20 s"
}

# utime+stime (+ cutime+cstime: children it has already reaped) of $1, plus
# utime+stime of each of its live children, in clock ticks.
cpu_ticks() {
  local top=$1 total=0 pid stat rest first=1
  local -a f
  for pid in "$top" $(pgrep -P "$top" || true); do
    if ! read -r stat <"/proc/$pid/stat" 2>/dev/null; then
      [ $first = 1 ] && return 1
      continue
    fi
    rest=${stat##*) }
    read -r -a f <<<"$rest"
    # rest starts at field 3 (state): utime=14 -> [11], stime -> [12], cutime -> [13], cstime -> [14]
    total=$((total + f[11] + f[12]))
    [ $first = 1 ] && total=$((total + f[13] + f[14]))
    first=0
  done
  echo "$total"
}

# Non-idle ticks of the whole machine (first line of /proc/stat; iowait and
# idle excluded, steal included).
sys_busy() {
  local user nice system irq softirq steal
  read -r _ user nice system _ _ irq softirq steal _ </proc/stat
  echo $((user + nice + system + irq + softirq + steal))
}

# cutime+cstime of this shell: every child it has reaped, with their own
# reaped descendants (timeout -> redis-benchmark).
shell_child_ticks() {
  local stat rest
  local -a f
  read -r stat <"/proc/$$/stat"
  rest=${stat##*) }
  read -r -a f <<<"$rest"
  echo $((f[13] + f[14]))
}

kids_of() { pgrep -P "$1" | sort -n | tr '\n' ' ' || true; }

# run_bench server port pid pipeline rep test n timeout
#   appends: server pipeline rep test n rps avg p50 p95 p99 max ticks wall
run_bench() {
  local server=$1 port=$2 pid=$3 p=$4 rep=$5 test=$6 n=$7 tmo=$8
  local out="$TMP/rb.$server.P$p.$rep.$test" c0 c1 k0 k1 t0 t1 b0 b1 s0 s1 rc=0
  alive "$pid" || die "$server (pid $pid) is not running before P$p $test run $rep"
  k0=$(kids_of "$pid")
  c0=$(cpu_ticks "$pid") || die "cannot read /proc/$pid/stat ($server)"
  s0=$(shell_child_ticks)
  b0=$(sys_busy)
  t0=$(date +%s.%N)
  timeout -k 5 "$tmo" "$REDIS_BENCHMARK" -h 127.0.0.1 -p "$port" -c "$CLIENTS" -d "$VALUE_BYTES" \
    -r "$KEYS" -t "$test" -P "$p" -n "$n" --csv >"$out" 2>"$out.err" || rc=$?
  t1=$(date +%s.%N)
  b1=$(sys_busy)
  s1=$(shell_child_ticks)
  c1=$(cpu_ticks "$pid") || die "$server (pid $pid) died during P$p $test run $rep"
  k1=$(kids_of "$pid")
  if [ $rc -ne 0 ]; then
    if [ $rc = 124 ]; then say "redis-benchmark timed out after ${tmo}s"; else say "redis-benchmark exited $rc"; fi
    cat "$out" "$out.err" >&2 || true
    die "redis-benchmark against $server failed (P$p $test run $rep, -n $n)"
  fi
  if [ -s "$out.err" ]; then
    say "redis-benchmark stderr ($server P$p $test run $rep):"
    head -n 20 "$out.err" >&2
  fi
  if [ "$k0" != "$k1" ]; then
    say "PROBLEM: $server children changed during P$p $test run $rep: before [$k0] after [$k1]" \
      "(CPU time of a dead child is lost)"
    PROBLEMS=$((PROBLEMS + 1))
  fi
  # CSV: header "test","rps","avg_latency_ms",...,"p99_latency_ms",...; one line per test.
  local line
  line=$(awk -F, -v want="${test^^}" '
    { gsub(/"/, "") }
    NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
    $1 == want {
      if (!col["rps"] || !col["p99_latency_ms"]) { print "BADHEADER"; exit }
      printf "%s %s %s %s %s %s\n", $col["rps"], $col["avg_latency_ms"], $col["p50_latency_ms"],
             $col["p95_latency_ms"], $col["p99_latency_ms"], $col["max_latency_ms"]; found = 1 }
    END { if (!found) print "NOTFOUND" }' "$out")
  case "$line" in
    BADHEADER* | NOTFOUND* | "")
      cat "$out" >&2
      die "cannot parse redis-benchmark --csv output ($server P$p $test run $rep)" ;;
  esac
  # Client = redis-benchmark (reaped by timeout, reaped by this shell);
  # other = the machine's busy ticks minus server and client.
  local wall client other
  wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
  client=$((s1 - s0))
  other=$((b1 - b0 - (c1 - c0) - client))
  [ $other -lt 0 ] && other=0
  echo "$server $p $rep $test $n $line $((c1 - c0)) $wall $client $other" >>"$RAW_P"
  awk -v s="$server" -v p="$p" -v r="$rep" -v t="${test^^}" -v n="$n" -v l="$line" -v d=$((c1 - c0)) \
    -v hz="$CLK_TCK" -v o="$other" -v w="$wall" 'BEGIN {
    split(l, f, " ")
    printf "resp.sh:   P%-2s %s run %s %-10s %9.0f rps  p99 %6.3f ms  cpu %.3f us/req  %.2f s  other load %.2f CPUs\n",
           p, t, r, s, f[1], f[5], d / hz / n * 1e6, n / f[1], o / hz / w }' >&2
}

# probe server port pipeline n: prints the higher of the SET and GET rps
probe() {
  local server=$1 port=$2 p=$3 n=$4 out="$TMP/probe.$1.P$3"
  timeout -k 5 60 "$REDIS_BENCHMARK" -h 127.0.0.1 -p "$port" -c "$CLIENTS" -d "$VALUE_BYTES" \
    -r "$KEYS" -t set,get -P "$p" -n "$n" --csv >"$out" 2>"$out.err" ||
    { cat "$out" "$out.err" >&2; die "calibration run against $server failed (P$p -n $n)"; }
  awk -F, 'NR > 1 { gsub(/"/, ""); if ($2 + 0 > m) m = $2 + 0 } END { if (m <= 0) exit 1; printf "%.0f\n", m }' "$out" ||
    { cat "$out" >&2; die "cannot parse calibration output ($server P$p)"; }
}

verify() { # server port
  if ! tool verify "$2" "$KEYS" "$VALUE_BYTES"; then
    say "PROBLEM: $1 on port $2 gave wrong replies (see above)"
    PROBLEMS=$((PROBLEMS + 1))
    return 1
  fi
}

# ---------------------------------------------------------------- start -----

read -r REDIS_PORT PC_PORT <<<"$(tool ports 2)"
REDIS_VERSION=$("$REDIS_SERVER" --version | sed -n 's/.*v=\([^ ]*\).*/redis-server \1/p')
PC_VERSION=$("$PERFCACHED" -V 2>&1 | head -n 1)
say "redis-server on 127.0.0.1:$REDIS_PORT, perfcached (workers=$WORKERS) on 127.0.0.1:$PC_PORT, $CPUS CPUs"

"$REDIS_SERVER" --save '' --appendonly no --port "$REDIS_PORT" --bind 127.0.0.1 --daemonize no \
  --dir "$TMP" >"$TMP/redis.log" 2>&1 &
REDIS_PID=$!
"$PERFCACHED" -D -o "listen.resp=127.0.0.1:$PC_PORT" -o "daemon.workers=$WORKERS" \
  -o "mi.fifo_name=$TMP/perfcached_fifo" -o "mi.datagram=$TMP/perfcached_mi.sock" -o "mi.reply_dir=$TMP/" \
  >"$TMP/perfcached.log" 2>&1 &
PC_PID=$!
wait_ready redis-server "$REDIS_PID" "$REDIS_PORT"
wait_ready perfcached "$PC_PID" "$PC_PORT"
PC_KIDS=$(kids_of "$PC_PID")
say "redis-server pid $REDIS_PID; perfcached supervisor pid $PC_PID, children [$PC_KIDS]"
[ "$(wc -w <<<"$PC_KIDS")" -ge "$WORKERS" ] ||
  say "note: perfcached has $(wc -w <<<"$PC_KIDS") children, expected timer + $WORKERS workers"
PC_TIER=$(sed -n 's/.*arena: \(.*\)$/\1/p' "$TMP/perfcached.log" | head -n 1)

say "preloading $KEYS keys ($VALUE_BYTES-byte values) into both servers"
timeout 60 python3 "$TMP/resp_tool.py" preload "$REDIS_PORT" "$KEYS" "$VALUE_BYTES" || die "preload of redis-server failed"
timeout 60 python3 "$TMP/resp_tool.py" preload "$PC_PORT" "$KEYS" "$VALUE_BYTES" || die "preload of perfcached failed"
verify redis-server "$REDIS_PORT" || die "redis-server preload check failed"
verify perfcached "$PC_PORT" || die "perfcached preload check failed"

# ------------------------------------------------------------------ runs ----

for p in "${PIPELINES[@]}"; do
  if [ "$QUICK" = 1 ]; then
    n=${QUICK_N[$p]}
  else
    # Calibrate: -n = target seconds x the faster server's rps (so the slower
    # one runs longer), rounded up to 10,000; never below the probe size.
    r1=$(probe redis "$REDIS_PORT" "$p" "${PROBE_N[$p]}")
    r2=$(probe perfcached "$PC_PORT" "$p" "${PROBE_N[$p]}")
    n=$(awk -v a="$r1" -v b="$r2" -v s="$TARGET_S" -v lo="${PROBE_N[$p]}" 'BEGIN {
      m = a > b ? a : b; n = int(m * s / 10000 + 0.999) * 10000; if (n < lo) n = lo; print n }')
    say "P$p calibration: redis $r1 rps, perfcached $r2 rps (probe -n ${PROBE_N[$p]}) -> -n $n per run"
  fi
  tmo=$(awk -v s="$TARGET_S" 'BEGIN { printf "%d", 60 + 20 * s }')
  for attempt in 1 2; do
    RAW_P=$TMP/runs.P$p.tsv
    : >"$RAW_P"
    for ((rep = 1; rep <= RUNS; rep++)); do
      for test in "${TESTS[@]}"; do run_bench redis "$REDIS_PORT" "$REDIS_PID" "$p" "$rep" "$test" "$n" "$tmo"; done
      for test in "${TESTS[@]}"; do run_bench perfcached "$PC_PORT" "$PC_PID" "$p" "$rep" "$test" "$n" "$tmo"; done
    done
    [ "$QUICK" = 1 ] && break
    # Every run must last > 2 s. If the host sped up since the probe, redo
    # this pipeline once with -n scaled so the shortest run takes TARGET_S (>= 3).
    min_s=$(awk '{ d = $5 / $6; if (NR == 1 || d < m) m = d } END { printf "%.2f", m }' "$RAW_P")
    awk -v m="$min_s" 'BEGIN { exit !(m > 2.0) }' && break
    [ "$attempt" = 2 ] && { say "P$p: shortest run still ${min_s} s after the redo"; break; }
    n=$(awk -v n="$n" -v m="$min_s" -v s="$TARGET_S" 'BEGIN {
      if (s < 3) s = 3; print int(n * s / m / 10000 + 0.999) * 10000 }')
    say "P$p: shortest run ${min_s} s, not > 2 s; redoing P$p with -n $n"
  done
  cat "$RAW_P" >>"$RAW"
  verify redis-server "$REDIS_PORT" || true
  verify perfcached "$PC_PORT" || true
done

PC_KIDS_END=$(kids_of "$PC_PID")
if [ "$PC_KIDS_END" != "$PC_KIDS" ]; then
  say "PROBLEM: perfcached children at start [$PC_KIDS], at the end [$PC_KIDS_END]"
  PROBLEMS=$((PROBLEMS + 1))
fi
if grep -qiE ' (error|crit|alert|emerg|warning)[: ]' "$TMP/perfcached.log"; then
  say "perfcached logged warnings/errors:"
  grep -iE ' (error|crit|alert|emerg|warning)[: ]' "$TMP/perfcached.log" | head -n 20 >&2
fi

# ---------------------------------------------------------------- report ----

WALL=$(awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
python3 - "$TMP/meta.json" <<PY
import json, sys
json.dump({
  "mode": "$([ "$QUICK" = 1 ] && echo quick || echo full)",
  "json": $([ "$JSON" = 1 ] && echo True || echo False),
  "cpus": $CPUS, "workers": $WORKERS, "runs": $RUNS, "clk_tck": $CLK_TCK,
  "clients": $CLIENTS, "value_bytes": $VALUE_BYTES, "keys": $KEYS,
  "pipelines": [$(IFS=,; echo "${PIPELINES[*]}")],
  "seconds_target": $TARGET_S,
  "redis_version": "$REDIS_VERSION", "perfcached_version": "$PC_VERSION",
  "perfcached_tier": """$PC_TIER""",
  "problems": $PROBLEMS, "wall_s": $WALL,
}, open(sys.argv[1], "w"))
PY
tool report "$RAW" "$TMP/meta.json"
if [ "$PROBLEMS" -gt 0 ]; then
  say "FAILED: $PROBLEMS problem(s) with the servers' behaviour (see above)"
  exit 1
fi
exit 0
