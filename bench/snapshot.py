#!/usr/bin/python3
"""bench/snapshot.py — snapshot write and load of the same keys: perfcached
(SAVE into a snapshot file, recovery at start) against Debian's
redis-server (SAVE into dump.rdb, load at start), in one run.

Both servers get the same 1,000,000 keys (string values of 100 bytes, a
tenth of them with a TTL) through redis-cli --pipe. Then, for each:
SAVE's wall time as the client sees it; the file's size; a restart's load
time (redis-server: until PING stops answering -LOADING, and its log's
"DB loaded from disk"; perfcached: its log's "recovered N key(s) ... in M
ms", which is before the door accepts); and a check that every key came
back. Ratios are perfcached / redis (below 1 = perfcached faster / smaller).

  /usr/bin/python3 bench/snapshot.py [--keys N] [--runs R]

Timings are printed, never asserted. Exit code 0 unless the benchmark
itself failed (a server did not start, keys missing after a load)."""
import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PERFCACHED = os.environ.get("PERFCACHED", os.path.join(ROOT, "bin", "perfcached"))
REDIS_SERVER = os.environ.get("REDIS_SERVER", "redis-server")
REDIS_CLI = os.environ.get("REDIS_CLI", "redis-cli")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ping(port, timeout=120):
    """Seconds until PING answers PONG (not -LOADING, not refused)."""
    t0 = time.time()
    while time.time() - t0 < timeout:
        p = subprocess.run([REDIS_CLI, "-p", str(port), "ping"], capture_output=True, text=True)
        if p.stdout.strip() == "PONG":
            return time.time() - t0
        time.sleep(0.01)
    raise RuntimeError("server on port %d did not answer PONG" % port)


def cli(port, *args):
    return subprocess.run([REDIS_CLI, "-p", str(port)] + list(args), capture_output=True, text=True,
                          check=True, timeout=600).stdout.strip()


def load_file(path, n):
    with open(path, "wb") as f:
        for i in range(n):
            k = b"key:%d" % i
            v = (b"%d-" % i).ljust(100, b"v")
            if i % 10 == 0:
                f.write(b"*5\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n$2\r\nEX\r\n$5\r\n86400\r\n" % (len(k), k, len(v), v))
            else:
                f.write(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(k), k, len(v), v))


def fill(port, path):
    with open(path, "rb") as f:
        subprocess.run([REDIS_CLI, "-p", str(port), "--pipe"], stdin=f, check=True, capture_output=True, timeout=600)


class Redis:
    name = "redis-server"

    def __init__(self, tmp):
        self.dir = os.path.join(tmp, "redis")
        os.makedirs(self.dir, exist_ok=True)
        self.port = free_port()
        self.log = os.path.join(self.dir, "redis.log")

    def start(self):
        self.p = subprocess.Popen([REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", self.dir,
                                   "--save", "", "--appendonly", "no", "--logfile", self.log],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return wait_ping(self.port)

    def load_ms(self, waited):
        with open(self.log) as f:
            m = re.findall(r"DB loaded from disk: ([0-9.]+) seconds", f.read())
        return float(m[-1]) * 1000 if m else waited * 1000

    def file_bytes(self):
        return os.path.getsize(os.path.join(self.dir, "dump.rdb"))

    def stop(self):
        self.p.send_signal(signal.SIGKILL)  # no shutdown save: the file is SAVE's
        self.p.wait(timeout=30)


class Perfcached:
    name = "perfcached"

    def __init__(self, tmp):
        self.dir = os.path.join(tmp, "perfcached")
        os.makedirs(self.dir, exist_ok=True)
        self.port = free_port()
        self.log = os.path.join(self.dir, "perfcached.log")

    def start(self):
        self.logf = open(self.log, "a")
        self.p = subprocess.Popen([PERFCACHED, "-D", "-o", "listen.resp=127.0.0.1:%d" % self.port,
                                   "-o", "mi.fifo_name=", "-o", "mi.datagram=", "-o", "memory.arena_mb=1024",
                                   "-o", "wal.dir=" + os.path.join(self.dir, "data"), "-o", 'wal.save=""',
                                   "-o", "collection.0.buckets_log2=20"],
                                  stdout=self.logf, stderr=subprocess.STDOUT)
        return wait_ping(self.port)

    def load_ms(self, waited):
        with open(self.log) as f:
            m = re.findall(r"recovered \d+ key\(s\) from snapshot .* in (\d+) ms", f.read())
        return float(m[-1]) if m else waited * 1000

    def file_bytes(self):
        d = os.path.join(self.dir, "data")
        return max(os.path.getsize(os.path.join(d, x)) for x in os.listdir(d) if x.endswith(".pcs"))

    def stop(self):
        for k in subprocess.run(["pgrep", "-P", str(self.p.pid)], capture_output=True, text=True).stdout.split():
            os.kill(int(k), signal.SIGKILL)
        self.p.send_signal(signal.SIGKILL)
        self.p.wait(timeout=30)
        self.logf.close()
        time.sleep(0.3)


def measure(srv, pipe, n):
    srv.start()
    fill(srv.port, pipe)
    have = int(cli(srv.port, "dbsize"))
    if have != n:
        raise RuntimeError("%s: %d keys after the fill, expected %d" % (srv.name, have, n))
    t0 = time.time()
    cli(srv.port, "save")
    save_ms = (time.time() - t0) * 1000
    size = srv.file_bytes()
    srv.stop()
    waited = srv.start()
    load_ms = srv.load_ms(waited)
    back = int(cli(srv.port, "dbsize"))
    srv.stop()
    if back != n:
        raise RuntimeError("%s: %d keys after the load, expected %d" % (srv.name, back, n))
    return save_ms, load_ms, size


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keys", type=int, default=1000000)
    ap.add_argument("--runs", type=int, default=2)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="perfcached-bench-snap-")
    try:
        pipe = os.path.join(tmp, "fill.resp")
        load_file(pipe, a.keys)
        res = {"redis-server": [], "perfcached": []}
        for run in range(a.runs):
            for cls in (Redis, Perfcached):  # alternate
                srv = cls(os.path.join(tmp, "run%d" % run))
                r = measure(srv, pipe, a.keys)
                res[srv.name].append(r)
                print("run %d %-12s save %7.0f ms  load %7.0f ms  file %6.1f MB" % (run + 1, srv.name, r[0], r[1],
                                                                                   r[2] / 1e6), file=sys.stderr)
        med = {k: [sorted(x[i] for x in v)[len(v) // 2] for i in range(3)] for k, v in res.items()}
        rs, ps = med["redis-server"], med["perfcached"]
        print("%d keys, 100-byte values (10%% with a TTL); median of %d runs" % (a.keys, a.runs))
        print("| | redis-server | perfcached | perfcached / redis |")
        print("|---|---|---|---|")
        print("| SAVE (ms, client wall time) | %.0f | %.0f | %.2f |" % (rs[0], ps[0], ps[0] / rs[0]))
        print("| load at start (ms) | %.0f | %.0f | %.2f |" % (rs[1], ps[1], ps[1] / rs[1]))
        print("| file (MB) | %.1f | %.1f | %.2f |" % (rs[2] / 1e6, ps[2] / 1e6, ps[2] / rs[2]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
