# perfcached — bench/types.sh's driver: hashes and sets (and SET/GET) against
# perfcached and Debian's redis-server, same workload, ratios from the same run.
# Copyright (c) 2026 the perfcached authors.
"""Starts redis-server and perfcached (default multi-process configuration:
one worker per core) on free loopback ports, like bench/resp.sh, and drives
both with Debian's redis-benchmark. For every run it reads the servers' CPU
time (utime+stime from /proc/<pid>/stat; for perfcached the supervisor, its
reaped children and every live child) and divides by the requests served.
Runs alternate redis, perfcached. Usage: see bench/types.sh."""
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PERFCACHED = os.environ.get("PERFCACHED", os.path.join(ROOT, "bin", "perfcached"))
REDIS_SERVER = os.environ.get("REDIS_SERVER", "redis-server")
REDIS_BENCHMARK = os.environ.get("REDIS_BENCHMARK", "redis-benchmark")
CLK_TCK = os.sysconf("SC_CLK_TCK")
CPUS = os.cpu_count() or 1
WORKERS = int(os.environ.get("WORKERS", CPUS))
CLIENTS = 50


def say(msg):
    print("types.sh: " + msg, file=sys.stderr, flush=True)


class Broken(Exception):
    """The benchmark itself broke (exit 1)."""


# ------------------------------------------------------------- RESP client --

class Conn:
    def __init__(self, port, timeout=60):
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

    def _fill(self):
        d = self.s.recv(1 << 20)
        if not d:
            raise Broken("connection closed by the server")
        if self.pos > (1 << 20):
            del self.buf[:self.pos]
            self.pos = 0
        self.buf += d

    def _line(self):
        while True:
            i = self.buf.find(b"\r\n", self.pos)
            if i >= 0:
                line = bytes(self.buf[self.pos:i])
                self.pos = i + 2
                return line
            self._fill()

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
            while len(self.buf) - self.pos < n + 2:
                self._fill()
            v = bytes(self.buf[self.pos:self.pos + n])
            self.pos += n + 2
            return v
        if t == b"*":
            n = int(rest)
            return None if n < 0 else [self.reply() for _ in range(n)]
        raise Broken("bad reply line %r" % line)

    def call(self, *args):
        self.send([args])
        return self.reply()

    def close(self):
        self.s.close()


def free_ports(n):
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


# ---------------------------------------------------------------- servers --

def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            st = f.read().rsplit(")", 1)[1].split()[0]
        return st not in ("Z", "X")
    except (OSError, IndexError):
        return False


def kids(pid):
    r = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True, timeout=5)
    return sorted(int(x) for x in r.stdout.split())


def cpu_ticks(top):
    """utime+stime of top (+ cutime+cstime of its reaped children) plus
    utime+stime of each live child, in clock ticks."""
    total = 0
    for i, pid in enumerate([top] + kids(top)):
        try:
            with open("/proc/%d/stat" % pid) as f:
                f_ = f.read().rsplit(")", 1)[1].split()
        except OSError:
            if i == 0:
                raise Broken("cannot read /proc/%d/stat: the server died" % top)
            continue
        # f_[0] is field 3 (state): utime=14 -> [11], stime [12], cutime [13], cstime [14]
        total += int(f_[11]) + int(f_[12])
        if i == 0:
            total += int(f_[13]) + int(f_[14])
    return total


class Server:
    def __init__(self, name, args, port, tmp):
        self.name, self.port = name, port
        self.log_path = os.path.join(tmp, name + ".log")
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT)
        self.pid = self.proc.pid
        deadline = time.time() + 20
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise Broken("%s exited during start-up (see %s)" % (name, self.log_path))
            try:
                c = Conn(port, timeout=2)
                ok = c.call("PING") == "PONG"
                c.close()
                if ok:
                    break
            except (OSError, Broken):
                pass
            time.sleep(0.1)
        else:
            raise Broken("%s did not answer PING on 127.0.0.1:%d within 20 s" % (name, port))
        self.kids = kids(self.pid)

    def cpu(self):
        if not alive(self.pid):
            raise Broken("%s (pid %d) is not running" % (self.name, self.pid))
        return cpu_ticks(self.pid)

    def used_memory(self):
        c = Conn(self.port)
        info = c.call("INFO", "memory")
        c.close()
        if not isinstance(info, bytes):
            raise Broken("%s INFO memory replied %r" % (self.name, info))
        for line in info.decode().splitlines():
            if line.startswith("used_memory:"):
                return int(line.split(":")[1])
        raise Broken("%s INFO memory has no used_memory" % self.name)

    def stop(self):
        ks = kids(self.pid) if self.proc.poll() is None else []
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        for k in ks:  # the supervisor stops its children; none may outlive it
            if alive(k):
                try:
                    os.kill(k, signal.SIGKILL)
                except OSError:
                    pass
        self.log.close()


# ------------------------------------------------------------- workloads --

# (name, preload function name or None, redis-benchmark arguments after the
# common ones). Keys from __rand_int__ are zero-padded to 12 digits.
def workloads():
    w = [
        ("SET -d 200 -r 20000", "strings", ["-d", "200", "-r", "20000", "-t", "set"]),
        ("GET -d 200 -r 20000", "strings", ["-d", "200", "-r", "20000", "-t", "get"]),
        ("-t hset (1 hash, -r 100000)", None, ["-r", "100000", "-t", "hset"]),
        ("-t sadd (1 set, -r 100000)", None, ["-r", "100000", "-t", "sadd"]),
        ("-t spop (the -t sadd set)", None, ["-t", "spop"]),
        ("HSET h:rand f:rand v (-r 10000)", None,
         ["-r", "10000", "HSET", "h:__rand_int__", "f:__rand_int__", "v"]),
        ("HGET hpack f:rand (100 fields)", "hpack", ["-r", "100", "HGET", "hpack", "f:__rand_int__"]),
        ("HGET htrie f:rand (10000 fields)", "htrie",
         ["-r", "10000", "HGET", "htrie", "f:__rand_int__"]),
        ("HGETALL h10 (10 fields)", "h10", ["HGETALL", "h10"]),
        ("HINCRBY hc:rand f:rand 1 (-r 100)", None,
         ["-r", "100", "HINCRBY", "hc:__rand_int__", "f:__rand_int__", "1"]),
        ("SISMEMBER spack m:rand (100 members)", "spack",
         ["-r", "100", "SISMEMBER", "spack", "m:__rand_int__"]),
        ("SISMEMBER sint rand (intset 500)", "sint", ["-r", "500", "SISMEMBER", "sint", "__rand_int__"]),
        ("SISMEMBER strie m:rand (10000 members)", "strie",
         ["-r", "10000", "SISMEMBER", "strie", "m:__rand_int__"]),
        ("SADD s:rand m:rand (-r 10000)", None, ["-r", "10000", "SADD", "s:__rand_int__", "m:__rand_int__"]),
    ]
    return w


def r12(i):
    return b"%012d" % i


def preload(conn, what):
    """Deterministic contents both servers get before the workloads."""
    cmds = []
    if what == "strings":
        v = (b"preload:" + b"p" * 200)[:200]
        cmds = [(b"SET", b"key:" + r12(i), v) for i in range(20000)]
    elif what == "hpack":
        cmds = [[b"HSET", b"hpack"] + sum(([b"f:" + r12(i), b"v%d" % i] for i in range(100)), [])]
    elif what == "htrie":
        cmds = [[b"HSET", b"htrie"] + sum(([b"f:" + r12(i), b"v%d" % i] for i in range(lo, lo + 500)), [])
                for lo in range(0, 10000, 500)]
    elif what == "h10":
        cmds = [[b"HSET", b"h10"] + sum(([b"field%d" % i, b"value-%d" % i] for i in range(10)), [])]
    elif what == "spack":
        cmds = [[b"SADD", b"spack"] + [b"m:" + r12(i) for i in range(100)]]
    elif what == "sint":
        cmds = [[b"SADD", b"sint"] + [b"%d" % i for i in range(500)]]
    elif what == "strie":
        cmds = [[b"SADD", b"strie"] + [b"m:" + r12(i) for i in range(lo, lo + 500)]
                for lo in range(0, 10000, 500)]
    for lo in range(0, len(cmds), 1000):
        part = cmds[lo:lo + 1000]
        conn.send(part)
        for c in part:
            r = conn.reply()
            if isinstance(r, RuntimeError) or r is None:
                raise Broken("preload %s: %s replied %r" % (what, c[0].decode(), r))


EXPECT_ENC = {"hpack": "listpack", "htrie": "hashtable", "h10": "listpack",
              "spack": "listpack", "sint": "intset", "strie": "hashtable"}


def sys_busy():
    """Non-idle ticks of the whole machine (iowait and idle excluded)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return v[0] + v[1] + v[2] + v[5] + v[6] + (v[7] if len(v) > 7 else 0)


def children_ticks():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (ru.ru_utime + ru.ru_stime) * CLK_TCK


def run_rb(srv, extra, n, p, tmp, tag):
    """One redis-benchmark run; returns dict(rps, p99, ticks, n, seconds)."""
    args = [REDIS_BENCHMARK, "-h", "127.0.0.1", "-p", str(srv.port), "-c", str(CLIENTS),
            "-P", str(p), "-n", str(n), "--csv"] + extra
    k0 = kids(srv.pid)
    c0 = srv.cpu()
    b0, ch0 = sys_busy(), children_ticks()
    t0 = time.time()
    try:
        r = subprocess.run(args, capture_output=True, text=True, timeout=180)
    except subprocess.TimeoutExpired:
        raise Broken("redis-benchmark timed out against %s (%s)" % (srv.name, tag))
    t1 = time.time()
    c1 = srv.cpu()
    b1, ch1 = sys_busy(), children_ticks()
    if r.returncode != 0:
        raise Broken("redis-benchmark exited %d against %s (%s): %s" % (
            r.returncode, srv.name, tag, (r.stdout + r.stderr)[-500:]))
    if kids(srv.pid) != k0:
        raise Broken("%s children changed during %s" % (srv.name, tag))
    lines = [ln.replace('"', "").split(",") for ln in r.stdout.splitlines() if ln.strip()]
    if len(lines) < 2:
        raise Broken("cannot parse redis-benchmark --csv (%s %s): %r" % (srv.name, tag, r.stdout[-300:]))
    hdr, row = lines[0], lines[1]
    col = {h: i for i, h in enumerate(hdr)}
    try:
        rps = float(row[col["rps"]])
        p99 = float(row[col["p99_latency_ms"]])
    except (KeyError, ValueError, IndexError):
        raise Broken("cannot parse redis-benchmark --csv (%s %s): %r" % (srv.name, tag, r.stdout[-300:]))
    ticks = c1 - c0
    # other load: CPUs busy with anything but this server and redis-benchmark
    other = max(0.0, (b1 - b0) - ticks - (ch1 - ch0)) / CLK_TCK / max(t1 - t0, 1e-3)
    res = dict(rps=rps, p99=p99, ticks=ticks, n=n, seconds=round(t1 - t0, 3),
               cpu_us=ticks / CLK_TCK / n * 1e6, other_cpus=round(other, 2))
    say("  %-40s P%-2d %-10s %9.0f rps  p99 %6.3f ms  cpu %.3f us/req  %.2f s  other load %.2f CPUs" % (
        tag, p, srv.name, rps, p99, res["cpu_us"], t1 - t0, other))
    return res


# ----------------------------------------------------------- big aggregates --

def build_big(srv, kind, nbig, batch=100, window=200):
    """SADD bigset / HSET bighash of nbig members, `batch` per command,
    `window` commands in flight. Returns (seconds, cpu ticks, bytes)."""
    conn = Conn(srv.port, timeout=120)
    m0 = srv.used_memory()
    c0 = srv.cpu()
    t0 = time.time()
    cmds = []
    for lo in range(0, nbig, batch):
        hi = min(nbig, lo + batch)
        if kind == "set":
            cmds.append([b"SADD", b"bigset"] + [b"m:" + r12(i) for i in range(lo, hi)])
        else:
            c = [b"HSET", b"bighash"]
            for i in range(lo, hi):
                c += [b"f:" + r12(i), b"v:%d" % i]
            cmds.append(c)
    added = 0
    for lo in range(0, len(cmds), window):
        part = cmds[lo:lo + window]
        conn.send(part)
        for _ in part:
            r = conn.reply()
            if not isinstance(r, int):
                raise Broken("%s build %s replied %r" % (srv.name, kind, r))
            added += r
    t1 = time.time()
    c1 = srv.cpu()
    key = b"bigset" if kind == "set" else b"bighash"
    n = conn.call(b"SCARD" if kind == "set" else b"HLEN", key)
    enc = conn.call(b"OBJECT", b"ENCODING", key)
    conn.close()
    if added != nbig or n != nbig:
        raise Broken("%s build %s: added %d, card %r, expected %d" % (srv.name, kind, added, n, nbig))
    m1 = srv.used_memory()
    return dict(seconds=round(t1 - t0, 3), cpu_us=(c1 - c0) / CLK_TCK / nbig * 1e6,
                bytes=m1 - m0, bytes_per=(m1 - m0) / nbig,
                encoding=enc.decode() if isinstance(enc, bytes) else repr(enc))


def scan_big(srv, kind, nbig, count=1000):
    """Full SSCAN / HSCAN iteration with COUNT count; every member seen."""
    conn = Conn(srv.port, timeout=120)
    cmd, key = (b"SSCAN", b"bigset") if kind == "set" else (b"HSCAN", b"bighash")
    seen = set()
    calls = 0
    c0 = srv.cpu()
    t0 = time.time()
    cur = b"0"
    while True:
        r = conn.call(cmd, key, cur, b"COUNT", count)
        calls += 1
        if not isinstance(r, list) or len(r) != 2:
            raise Broken("%s %s replied %r" % (srv.name, cmd.decode(), r))
        cur = r[0]
        items = r[1] if kind == "set" else r[1][0::2]
        seen.update(items)
        if cur == b"0":
            break
        if calls > 10 * nbig:
            raise Broken("%s %s did not finish in %d calls" % (srv.name, cmd.decode(), calls))
    t1 = time.time()
    c1 = srv.cpu()
    conn.close()
    if len(seen) != nbig:
        raise Broken("%s %s saw %d distinct members of %d" % (srv.name, cmd.decode(), len(seen), nbig))
    return dict(seconds=round(t1 - t0, 3), calls=calls, cpu_ms=(c1 - c0) / CLK_TCK * 1e3)


# ------------------------------------------------------------------ main --

def ratio(a, b):
    return a / b if a is not None and b else None


def fmt(x, f):
    return "-" if x is None else f % x


def on_term(signum, frame):
    raise KeyboardInterrupt("signal %d" % signum)


def main(argv):
    signal.signal(signal.SIGTERM, on_term)
    quick = "--quick" in argv
    as_json = "--json" in argv
    nbig = 100000 if quick else 1000000
    if "--big" in argv:
        nbig = int(argv[argv.index("--big") + 1])
    for a in argv:
        if a in ("-h", "--help"):
            with open(os.path.join(ROOT, "bench", "types.sh")) as f:
                for ln in f.read().split("set -euo")[0].splitlines()[1:]:
                    print(ln[2:])
            return 0
    n_of = {1: 10000, 16: 50000} if quick else {1: 100000, 16: 500000}
    t_start = time.time()
    tmp = tempfile.mkdtemp(prefix="perfcached-types-bench.")
    rport, pport = free_ports(2)
    redis_v = subprocess.run([REDIS_SERVER, "--version"], capture_output=True, text=True).stdout.split()
    redis_v = "redis-server " + next((x[2:] for x in redis_v if x.startswith("v=")), "?")
    pc_v = subprocess.run([PERFCACHED, "-V"], capture_output=True, text=True).stdout.splitlines()
    pc_v = pc_v[0] if pc_v else "perfcached ?"
    say("redis-server on 127.0.0.1:%d, perfcached (workers=%d) on 127.0.0.1:%d, %d CPUs, tmp %s"
        % (rport, WORKERS, pport, CPUS, tmp))
    servers = []
    out = dict(mode="quick" if quick else "full", cpus=CPUS, workers=WORKERS, clients=CLIENTS,
               redis_version=redis_v, perfcached_version=pc_v, big=nbig,
               date=time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
               loadavg=open("/proc/loadavg").read().split()[:3], workloads=[], big_rows=[], big_results={})
    try:
        redis = Server("redis", [REDIS_SERVER, "--save", "", "--appendonly", "no", "--port", str(rport),
                                 "--bind", "127.0.0.1", "--daemonize", "no", "--dir", tmp], rport, tmp)
        servers.append(redis)
        # The default configuration, but the arena may grow (1M-entry aggregates
        # on both servers need more than the default 256 MiB committed).
        pc = Server("perfcached", [PERFCACHED, "-D", "-o", "listen.resp=127.0.0.1:%d" % pport,
                                   "-o", "daemon.workers=%d" % WORKERS,
                                   "-o", "memory.arena_cap_mb=4096",
                                   # its own MI paths: one daemon per FIFO (a running one keeps /run/perfcached)
                                   "-o", "mi.fifo_name=%s/perfcached_fifo" % tmp,
                                   "-o", "mi.datagram=%s/perfcached_mi.sock" % tmp,
                                   "-o", "mi.reply_dir=%s/" % tmp], pport, tmp)
        servers.append(pc)
        both = (redis, pc)
        say("redis pid %d; perfcached pid %d children %s" % (redis.pid, pc.pid, pc.kids))
        # the big set and hash first, on fresh arenas: used_memory counts whole
        # 2 MiB groups in perfcached, and chunks freed by earlier workloads would
        # be reused and hide the cost
        big = out["big_results"]
        for kind in ("set", "hash"):
            for s in both:
                say("building the %d-member big %s on %s" % (nbig, kind, s.name))
                big.setdefault("build_" + kind, {})[s.name] = build_big(s, kind, nbig)
            for p in (1, 16):
                extra = (["-r", str(nbig), "SISMEMBER", "bigset", "m:__rand_int__"] if kind == "set"
                         else ["-r", str(nbig), "HGET", "bighash", "f:__rand_int__"])
                tag = ("SISMEMBER bigset m:rand" if kind == "set" else "HGET bighash f:rand")
                row = dict(workload=tag + " (%d)" % nbig, pipeline=p)
                for s in both:
                    row[s.name] = run_rb(s, extra, n_of[p], p, tmp, tag)
                row["rps_ratio"] = ratio(row["perfcached"]["rps"], row["redis"]["rps"])
                row["cpu_ratio"] = ratio(row["perfcached"]["cpu_us"], row["redis"]["cpu_us"])
                out["big_rows"].append(row)
            for s in both:
                say("full %s of the big %s on %s" % ("SSCAN" if kind == "set" else "HSCAN", kind, s.name))
                big.setdefault("scan_" + kind, {})[s.name] = scan_big(s, kind, nbig)
        wl = workloads()
        for what in sorted({w[1] for w in wl if w[1]}):
            for s in both:
                c = Conn(s.port)
                preload(c, what)
                if what in EXPECT_ENC:
                    key = what.encode()
                    enc = c.call(b"OBJECT", b"ENCODING", key)
                    if enc != EXPECT_ENC[what].encode():
                        say("note: %s OBJECT ENCODING %s = %r (expected %s)" % (s.name, what, enc, EXPECT_ENC[what]))
                c.close()
        # the small-aggregate workloads
        for name, _, extra in wl:
            for p in (1, 16):
                row = dict(workload=name, pipeline=p)
                for s in both:
                    row[s.name] = run_rb(s, extra, n_of[p], p, tmp, name)
                row["rps_ratio"] = ratio(row["perfcached"]["rps"], row["redis"]["rps"])
                row["cpu_ratio"] = ratio(row["perfcached"]["cpu_us"], row["redis"]["cpu_us"])
                out["workloads"].append(row)
        # sanity after the runs: the preloaded aggregates are intact
        for s in both:
            c = Conn(s.port)
            for key, cmd, want in ((b"hpack", b"HLEN", 100), (b"htrie", b"HLEN", 10000),
                                   (b"h10", b"HLEN", 10), (b"spack", b"SCARD", 100),
                                   (b"sint", b"SCARD", 500), (b"strie", b"SCARD", 10000)):
                got = c.call(cmd, key)
                if got != want:
                    raise Broken("%s %s %s replied %r, expected %d" % (s.name, cmd.decode(), key.decode(), got, want))
            c.close()
        for s in both:
            c = Conn(s.port)
            m0 = s.used_memory()
            t0 = time.time()
            r = c.call(b"DEL", b"bigset", b"bighash")
            big.setdefault("del_ms", {})[s.name] = round((time.time() - t0) * 1e3, 1)
            c.close()
            big.setdefault("del_freed_mb", {})[s.name] = round((m0 - s.used_memory()) / 2**20, 1)
            if r != 2:
                raise Broken("%s DEL bigset bighash replied %r" % (s.name, r))
        if kids(pc.pid) != pc.kids:
            raise Broken("perfcached children at start %s, at the end %s" % (pc.kids, kids(pc.pid)))
    except Broken as e:
        say("FAILED: %s" % e)
        for s in servers:
            if s.name == "perfcached":
                try:
                    print(open(s.log_path).read()[-3000:], file=sys.stderr)
                except OSError:
                    pass
        return 1
    finally:
        for s in servers:
            s.stop()
        if os.environ.get("KEEP_TMP") == "1":
            say("kept " + tmp)
        else:
            subprocess.run(["rm", "-rf", tmp], timeout=30)
    out["wall_s"] = round(time.time() - t_start, 1)
    out["loadavg_end"] = open("/proc/loadavg").read().split()[:3]
    if as_json:
        print(json.dumps(out, indent=1))
        return 0
    report(out)
    return 0


def report(o):
    print("perfcached vs redis-server, hashes and sets (+ SET/GET), redis-benchmark -c %d, %s mode"
          % (o["clients"], o["mode"]))
    print("%s; %s; %d CPUs shared by both servers and redis-benchmark; perfcached workers=%d; %s; "
          "loadavg at start %s" % (o["redis_version"], o["perfcached_version"], o["cpus"], o["workers"],
                                   o["date"], " ".join(o["loadavg"])))
    print("one run per cell, redis then perfcached; CPU = server utime+stime / requests "
          "(perfcached: supervisor + all workers)")
    print("other load r/p = CPUs busy with other processes (not the server, not redis-benchmark) during "
          "the redis / perfcached run: above ~0.25 the cell is disturbed")
    print()
    hdr = ("workload", "P", "requests", "redis rps", "perfcached rps", "ratio",
           "redis cpu us/req", "perfcached cpu us/req", "cpu ratio", "other load r/p")
    w = (40, 2, 8, 10, 14, 6, 16, 21, 9, 14)
    print("  ".join(h.ljust(x) if i == 0 else h.rjust(x) for i, (h, x) in enumerate(zip(hdr, w))))
    for r in o["workloads"] + o["big_rows"]:
        row = (r["workload"], str(r["pipeline"]), str(r["redis"]["n"]),
               fmt(r["redis"]["rps"], "%.0f"), fmt(r["perfcached"]["rps"], "%.0f"),
               fmt(r["rps_ratio"], "%.2fx"), fmt(r["redis"]["cpu_us"], "%.3f"),
               fmt(r["perfcached"]["cpu_us"], "%.3f"), fmt(r["cpu_ratio"], "%.2fx"),
               "%.2f/%.2f" % (r["redis"]["other_cpus"], r["perfcached"]["other_cpus"]))
        print("  ".join(v.ljust(x) if i == 0 else v.rjust(x) for i, (v, x) in enumerate(zip(row, w))))
    b = o["big_results"]
    print()
    print("big aggregates, %d members / fields (12-digit names, values v:N):" % o["big"])
    for kind in ("set", "hash"):
        bb, ss = b["build_" + kind], b["scan_" + kind]
        r, p = bb["redis"], bb["perfcached"]
        print("  build %-4s (100 per command, 200 in flight): redis %.2f s, perfcached %.2f s, ratio %.2fx;"
              " cpu us/member redis %.2f, perfcached %.2f, ratio %.2fx"
              % (kind, r["seconds"], p["seconds"], ratio(p["seconds"], r["seconds"]) or 0,
                 r["cpu_us"], p["cpu_us"], ratio(p["cpu_us"], r["cpu_us"]) or 0))
        print("  memory %-4s (used_memory delta): redis %.1f B/member (%s), perfcached %.1f B/member (%s), ratio %.2fx"
              % (kind, r["bytes_per"], r["encoding"], p["bytes_per"], p["encoding"],
                 ratio(p["bytes_per"], r["bytes_per"]) or 0))
        r, p = ss["redis"], ss["perfcached"]
        print("  %s full (COUNT 1000): redis %.2f s / %d calls / cpu %.0f ms, perfcached %.2f s / %d calls / "
              "cpu %.0f ms, time ratio %.2fx"
              % ("SSCAN" if kind == "set" else "HSCAN", r["seconds"], r["calls"], r["cpu_ms"],
                 p["seconds"], p["calls"], p["cpu_ms"], ratio(p["seconds"], r["seconds"]) or 0))
    d = b["del_ms"]
    f = b["del_freed_mb"]
    print("  DEL bigset bighash (at the end): redis %.1f ms, perfcached %.1f ms; used_memory dropped by "
          "redis %.1f MiB, perfcached %.1f MiB" % (d["redis"], d["perfcached"], f["redis"], f["perfcached"]))
    print("loadavg at the end: %s (the machine is shared: 2 CPUs, other builds running)" % " ".join(o["loadavg_end"]))
    print("wall time: %.1f s" % o["wall_s"])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
