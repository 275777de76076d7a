#!/usr/bin/python3
# perfcached — bench/eviction: hit rate and requests/s of a cache under
# maxmemory, perfcached against redis-server in the same run (issue 10).
# Copyright (c) 2026 the perfcached authors.
"""A Zipfian (s = 0.99) trace over a keyspace about 5x larger than what
maxmemory holds, values of 100..1000 bytes (fixed per key), GET and, on a
miss, SET (a cache in front of a database). For each server and policy:
hit rate (hits / requests) and requests per second (GETs + SETs / wall
time), with the same trace, the same maxmemory and the same client.

  bench/eviction.py                      # 10,000,000 requests (the issue's run)
  bench/eviction.py --requests 2000000   # shorter
  bench/eviction.py --quick              # smoke run (200,000 requests)

The client is bench/trace_client (C++, built by make: one connection,
pipelines of --batch GETs, then one pipeline of SETs for the misses), so
the servers set the pace; --client py uses the Python client instead (it
bounds both servers: about 60,000 requests/s).

  bench/eviction.py --policies allkeys-lru   # one policy (comma-separated list)
  bench/eviction.py --runs 3                 # each pairing 3 times, alternated: medians
"""
import argparse
import array
import bisect
import json
import os
import random
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "integration"))
import redis  # noqa: E402  (python3-redis)

from harness import Daemon, RedisServer  # noqa: E402

def zipf_cdf(n, s):
    w = [1.0 / (k ** s) for k in range(1, n + 1)]
    total = sum(w)
    acc, cdf = 0.0, []
    for x in w:
        acc += x / total
        cdf.append(acc)
    return cdf


def trace(cdf, n, seed):
    rnd = random.Random(seed)
    perm = list(range(len(cdf)))
    rnd.shuffle(perm)  # popularity rank -> key id: hot keys spread over the table
    out = []
    for _ in range(n):
        out.append(perm[min(bisect.bisect_left(cdf, rnd.random()), len(cdf) - 1)])
    return out


def value_size(k):
    return 100 + (k * 7919) % 901


def run(r, keys, batch):
    hits = sets = 0
    t0 = time.time()
    for i in range(0, len(keys), batch):
        chunk = keys[i:i + batch]
        p = r.pipeline(transaction=False)
        for k in chunk:
            p.get(b"k:%d" % k)
        got = p.execute()
        miss = [k for k, v in zip(chunk, got) if v is None]
        hits += len(chunk) - len(miss)
        if miss:
            p = r.pipeline(transaction=False)
            for k in miss:
                p.set(b"k:%d" % k, b"v" * value_size(k))
            res = p.execute(raise_on_error=False)
            bad = [x for x in res if x is not True]
            if bad:
                raise RuntimeError("SET refused under maxmemory: %r" % bad[0])
            sets += len(miss)
    wall = time.time() - t0
    return hits, sets, wall


ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
TRACE_CLIENT = os.path.join(ROOT, "build", "bin", "trace_client")


def run_c(port, trace_path, batch):
    out = subprocess.run([TRACE_CLIENT, "--port", str(port), "--trace", trace_path, "--batch", str(batch)],
                         check=True, capture_output=True, text=True, timeout=3600).stdout
    r = json.loads(out)
    return r["hits"], r["sets"], r["wall_s"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=10_000_000)
    ap.add_argument("--maxmemory-mb", type=int, default=64)
    ap.add_argument("--keys", type=int, default=0, help="keyspace (default: 5x what maxmemory holds)")
    ap.add_argument("--batch", type=int, default=500)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--policies", default="allkeys-lru,allkeys-lfu,allkeys-random")
    ap.add_argument("--client", choices=("c", "py"), default="c")
    ap.add_argument("--workers", type=int, default=2, help="perfcached daemon.workers")
    ap.add_argument("--runs", type=int, default=1, help="runs of each pairing, servers alternated; medians")
    a = ap.parse_args()
    if a.client == "c" and not os.access(TRACE_CLIENT, os.X_OK):
        sys.exit("bench/eviction: %s is missing (run make)" % TRACE_CLIENT)
    if a.quick:
        a.requests = 200_000
        a.maxmemory_mb = 16
    # ~550-byte values + key + record/index overhead: about 640 bytes a key
    nkeys = a.keys or int(5 * (a.maxmemory_mb << 20) / 640)
    mm = a.maxmemory_mb << 20
    print("bench/eviction: %d requests, Zipf s=0.99 over %d keys, values 100..1000 B, maxmemory %d MiB"
          % (a.requests, nkeys, a.maxmemory_mb))
    t = time.time()
    keys = trace(zipf_cdf(nkeys, 0.99), a.requests, 42)
    print("  trace built in %.1f s; client %s" % (time.time() - t, "bench/trace_client" if a.client == "c" else "python3-redis"))
    tf = tempfile.NamedTemporaryFile(prefix="pc-trace-", suffix=".u32", delete=False)
    array.array("I", keys).tofile(tf)
    tf.close()
    def measure(port, policy):
        c = redis.Redis(port=port, socket_timeout=60)
        try:
            c.config_set("maxmemory", mm)
            c.config_set("maxmemory-policy", policy)
            if a.client == "c":
                h, s, w = run_c(port, tf.name, a.batch)
            else:
                h, s, w = run(c, keys, a.batch)
            return h, s, w, int(c.info("stats")["evicted_keys"]), c.dbsize()
        finally:
            c.close()

    rows = []
    try:
        run_all(a, measure, rows)
    finally:
        os.unlink(tf.name)
    report(a, rows)


def run_redis(a, measure, policy):
    rs = RedisServer()
    try:
        return ("redis-server", policy) + measure(rs.port, policy)
    finally:
        rs.stop()


def run_perfcached(a, measure, policy):
    # the arena is sized well above maxmemory: maxmemory is the limit under test
    d = Daemon(workers=a.workers, arena_mb=max(64, 4 * a.maxmemory_mb))
    try:
        return ("perfcached", policy) + measure(d.port, policy)
    finally:
        d.stop()


def run_all(a, measure, rows):
    # --runs R: each pairing R times, the two servers alternated (redis
    # first in odd runs, perfcached first in even ones): this VM's speed
    # drifts over minutes, so a pair is measured close together
    for r in range(a.runs):
        for policy in a.policies.split(","):
            order = (run_redis, run_perfcached) if r % 2 == 0 else (run_perfcached, run_redis)
            for f in order:
                row = f(a, measure, policy)
                rows.append(row)
                if a.runs > 1:
                    print("  run %d: %-13s %-15s %6.2f%% %9.0f requests/s"
                          % (r + 1, row[0], policy, 100.0 * row[2] / a.requests, (a.requests + row[3]) / row[4]),
                          flush=True)


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2.0


def report(a, rows):
    # one line per server and policy: the medians over the runs (the
    # evictions and keys held of the run with the median rate)
    merged = []
    for srv, pol in dict.fromkeys((r[0], r[1]) for r in rows):
        mine = [r for r in rows if r[0] == srv and r[1] == pol]
        rps = [(a.requests + r[3]) / r[4] for r in mine]
        mid = sorted(zip(rps, range(len(mine))))[len(mine) // 2][1]
        merged.append((srv, pol, median([r[2] for r in mine]), median(rps), mine[mid][5], mine[mid][6],
                       median([r[4] for r in mine])))
    print()
    if a.runs > 1:
        print("  medians of %d runs" % a.runs)
    print("  %-13s %-15s %9s %12s %10s %9s %8s" % ("server", "policy", "hit rate", "requests/s", "evicted", "keys held", "wall s"))
    base = {}
    for srv, pol, h, rps, ev, held, w in merged:
        rate = 100.0 * h / a.requests
        if srv == "redis-server":
            base[pol] = (rate, rps)
        extra = ""
        if srv == "perfcached" and pol in base:
            extra = "   (%+.1f points, %.2fx redis)" % (rate - base[pol][0], rps / base[pol][1])
        print("  %-13s %-15s %8.2f%% %12.0f %10d %9d %8.1f%s" % (srv, pol, rate, rps, ev, held, w, extra))


if __name__ == "__main__":
    main()
