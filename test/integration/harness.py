# perfcached — integration test harness: start the real daemon, talk to it, stop it by PID.
# Copyright (c) 2026 the perfcached authors.
"""Starts bin/perfcached (and, for comparisons, Debian's redis-server) on free
loopback ports. Every server is stopped by PID; every wait is bounded.

PERFCACHED_ADDR=host:port makes tests that accept it use an already-running
daemon instead (like memcached's T_MEMD_USE_DAEMON)."""
import atexit
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("PERFCACHED_BIN", os.path.join(ROOT, "bin", "perfcached"))

# Every Daemon's work directory (logs, FIFO, sockets, data) is removed when
# the test process exits, by then every daemon has been stopped; set
# PC_KEEP_TEST_DIRS=1 to keep them for a post-mortem. (make check left
# ~7,000 of them in /tmp before.)
_workdirs = []


@atexit.register
def _remove_workdirs():
    if os.environ.get("PC_KEEP_TEST_DIRS") == "1":
        return
    for d in _workdirs:
        shutil.rmtree(d, ignore_errors=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_port(port, timeout=10.0, host="127.0.0.1"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with socket.create_connection((host, port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                data = s.recv(64)
                if data.startswith(b"+PONG") or data.startswith(b"-NOAUTH"):
                    return True
        except OSError:
            pass
        time.sleep(0.05)
    return False


def wait_tcp(port, timeout=10.0, host="127.0.0.1"):
    """Wait (bounded) until something accepts connections on the port."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            socket.create_connection((host, port), timeout=0.5).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


def http_request(port, method, path, body=None, headers=None, host=None):
    """One HTTP request on loopback; host= sends that Host header instead
    of the real one. Returns (status, body, Content-Type)."""
    import http.client
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    h = dict(headers or {})
    if host is not None:
        c.putrequest(method, path, skip_host=True)
        c.putheader("Host", host)
        for k, v in h.items():
            c.putheader(k, v)
        if body is not None:
            c.putheader("Content-Length", str(len(body)))
        c.endheaders(body)
    else:
        c.request(method, path, body=body, headers=h)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data, r.getheader("Content-Type")


def override_args(defaults, overrides):
    """The -o arguments: each default replaced by an override of the same
    section.key (the daemon refuses a setting -o gives twice), then the
    other overrides in order."""
    given = {o.split("=", 1)[0] for o in overrides}
    out = []
    for o in [d for d in defaults if d.split("=", 1)[0] not in given] + list(overrides):
        out += ["-o", o]
    return out


def children(pid):
    try:
        out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True,
                             timeout=5).stdout
        return [int(x) for x in out.split()]
    except Exception:
        return []


def proc_cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""


class Daemon:
    """A perfcached process tree started for one test (or one test class)."""

    def __init__(self, workers=2, overrides=(), config=None, arena_mb=64, host="127.0.0.1", env=None,
                 port=None):
        """workers=None: the configured default (one worker per core).
        env: the daemon's environment (default: the test's); port: the RESP
        port (default: a free one)."""
        self.port = port or free_port()
        self.host = host
        self.workdir = tempfile.mkdtemp(prefix="perfcached-test-")
        _workdirs.append(self.workdir)
        self.log_path = os.path.join(self.workdir, "perfcached.log")
        self.fifo = os.path.join(self.workdir, "perfcached_fifo")
        defaults = [f"listen.resp={host}:{self.port}", f"mi.fifo_name={self.fifo}",
                    f"mi.reply_dir={self.workdir}/", f"mi.datagram={self.workdir}/mi.sock",
                    f"memory.arena_mb={arena_mb}", "memory.hugepages=off"]
        if workers is not None:
            defaults.append(f"daemon.workers={workers}")
        args = [BIN, "-D"]
        self.config_path = None
        if config is not None:
            self.config_path = path = os.path.join(self.workdir, "perfcached.conf")
            with open(path, "w") as f:
                f.write(config)
            args += ["-f", path]
        args += override_args(defaults, overrides)
        self.args = args
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT, env=env)
        if not wait_port(self.port, host=host):
            self.stop()
            raise RuntimeError("perfcached did not start: " + self.read_log())
        self.pid = self.proc.pid

    def read_log(self):
        try:
            with open(self.log_path) as f:
                return f.read()
        except OSError:
            return ""

    def wait_log(self, text, timeout=10.0):
        """True once `text` is in the log (bounded wait)."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if text in self.read_log():
                return True
            time.sleep(0.05)
        return False

    def worker_pids(self):
        """The worker processes (named "pc-worker N" by the daemon)."""
        out = []
        for k in children(self.proc.pid):
            try:
                with open("/proc/%d/comm" % k) as f:
                    if f.read().startswith("pc-worker"):
                        out.append(k)
            except OSError:
                pass
        return sorted(out)

    def stop(self, timeout=15):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                for k in children(self.proc.pid):
                    os.kill(k, signal.SIGKILL)
                self.proc.kill()
                self.proc.wait(timeout=5)
        self.log.close()
        return self.proc.returncode


def have_netns():
    return os.geteuid() == 0 and shutil.which("ip") is not None


class NetNs:
    """A network namespace with a veth pair into it (198.18.0.0/15, the
    benchmarking range): a client run in it with run() reaches the daemon
    off loopback, from `peer` to `host` (both /30 addresses)."""

    def __init__(self, tag, host, peer):
        self.name = "pcns%s%d" % (tag, os.getpid())
        self.veth = "pc%sa%d" % (tag, os.getpid() % 10000)
        self.host, self.peer = host, peer
        self.other = "pc%sb%d" % (tag, os.getpid() % 10000)

    def up(self):
        """Build it; returns "" or why it could not be built (then call down())."""
        ns, a, b = self.name, self.veth, self.other
        cmds = [["ip", "netns", "add", ns],
                ["ip", "link", "add", a, "type", "veth", "peer", "name", b],
                ["ip", "link", "set", b, "netns", ns],
                ["ip", "addr", "add", self.host + "/30", "dev", a],
                ["ip", "link", "set", a, "up"],
                ["ip", "netns", "exec", ns, "ip", "addr", "add", self.peer + "/30", "dev", b],
                ["ip", "netns", "exec", ns, "ip", "link", "set", b, "up"],
                ["ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"]]
        for c in cmds:
            r = subprocess.run(c, capture_output=True, text=True, timeout=10)
            if r.returncode != 0:
                return "cannot build the namespace: %s" % r.stderr.strip()
        return ""

    def down(self):
        subprocess.run(["ip", "link", "del", self.veth], capture_output=True, timeout=10)
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True, timeout=10)

    def run(self, args, timeout=15):
        return subprocess.run(["ip", "netns", "exec", self.name] + list(args), capture_output=True, text=True,
                              timeout=timeout)

    def redis_ping(self, port):
        """redis-cli PING from the namespace to host:port: "PONG" or what came instead."""
        return self.run(["redis-cli", "-h", self.host, "-p", str(port), "PING"]).stdout.strip()


class RedisServer:
    """Debian's redis-server, for byte-for-byte comparisons."""

    def __init__(self):
        self.port = free_port()
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--daemonize", "no", "--databases", "16"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if not wait_port(self.port):
            self.stop()
            raise RuntimeError("redis-server did not start")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)


def encode(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, str):
            a = a.encode()
        elif isinstance(a, int):
            a = str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class RawClient:
    """A RESP client that returns replies as raw bytes (for exact comparisons)."""

    def __init__(self, port, timeout=10.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buf = b""
        self.pos = 0

    def close(self):
        self.sock.close()

    def send_raw(self, data):
        self.sock.sendall(data)

    def _fill(self):
        chunk = self.sock.recv(1 << 16)
        if not chunk:
            raise ConnectionError("closed")
        if self.pos > (1 << 20):
            self.buf = self.buf[self.pos:]
            self.pos = 0
        self.buf += chunk

    def _line(self):
        while True:
            i = self.buf.find(b"\r\n", self.pos)
            if i >= 0:
                break
            self._fill()
        line = self.buf[self.pos:i + 2]
        self.pos = i + 2
        return line

    def _take(self, n):
        while len(self.buf) - self.pos < n:
            self._fill()
        out = self.buf[self.pos:self.pos + n]
        self.pos += n
        return out

    def read_reply(self):
        line = self._line()
        t = line[:1]
        if t in (b"+", b"-", b":"):
            return line
        if t == b"$":
            n = int(line[1:-2])
            if n < 0:
                return line
            return line + self._take(n + 2)
        if t == b"*":
            n = int(line[1:-2])
            parts = [line]
            for _ in range(max(n, 0)):
                parts.append(self.read_reply())
            return b"".join(parts)
        raise ValueError("bad reply line %r" % line)

    def call(self, *args):
        self.send_raw(encode(*args))
        return self.read_reply()

    def closed(self, timeout=5.0):
        """True if the server closed the connection (after any pending bytes)."""
        self.sock.settimeout(timeout)
        try:
            while True:
                chunk = self.sock.recv(1 << 16)
                if not chunk:
                    return True
                self.buf += chunk
        except socket.timeout:
            return False
        except ConnectionResetError:
            return True


def wait_for_path(path, timeout=10.0):
    """Wait (bounded) until a FIFO / socket file exists."""
    deadline = time.time() + timeout
    while not os.path.exists(path) and time.time() < deadline:
        time.sleep(0.05)
    return os.path.exists(path)


_mi_seq = [0]


def mi_fifo_raw(fifo, reply_dir, payload, reply=True, timeout=5.0):
    """One request the way opensips-cli sends it (":name:" + JSON) on the MI
    FIFO; returns the reply bytes (b"" when none came within timeout)."""
    _mi_seq[0] += 1
    name = "perfcached_test_reply_%d_%d" % (os.getpid(), _mi_seq[0])
    path = os.path.join(reply_dir, name)
    os.mkfifo(path, 0o600)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a reader exists before the request goes out
    try:
        with open(fifo, "wb", buffering=0) as f:
            f.write((":%s:" % (name if reply else "")).encode() + payload)
        data, deadline = b"", time.time() + timeout
        while time.time() < deadline:
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                time.sleep(0.01)
                continue
            if chunk:
                data += chunk
            elif data:
                break  # the server wrote its line and closed
            else:
                time.sleep(0.01)
        return data
    finally:
        os.close(fd)
        os.unlink(path)


def mi_datagram_raw(sock_path, payload, workdir, timeout=5.0):
    """One request on the MI datagram socket; returns the reply datagram."""
    _mi_seq[0] += 1
    me = os.path.join(workdir, "mi-client-%d-%d.sock" % (os.getpid(), _mi_seq[0]))
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(me)
    s.settimeout(timeout)
    try:
        s.sendto(payload, sock_path)
        return s.recv(1 << 20)
    finally:
        s.close()
        os.unlink(me)


def key_state(port, db=0, expiry="flag"):
    """Every key of a db: (type, value, expiry) for strings, hashes and sets.
    expiry "flag": whether it has a TTL; "abs": its PEXPIRETIME (ms)."""
    import redis
    r = redis.Redis(port=port, db=db)
    out = {}
    for k in r.scan_iter(count=1000):
        t = r.type(k)
        if t == b"string":
            v = r.get(k)
        elif t == b"hash":
            v = tuple(sorted(r.hgetall(k).items()))
        elif t == b"set":
            v = tuple(sorted(r.smembers(k)))
        else:
            continue
        out[k] = (t, v, r.pttl(k) > 0 if expiry == "flag" else r.execute_command("PEXPIRETIME", k))
    return out


def fill_numbered(r, n, width=1000):
    """SET k:0 .. k:n-1, each to "<i>:" and `width` x's, pipelined 1,000 at a time."""
    p = r.pipeline(transaction=False)
    for i in range(n):
        p.set("k:%d" % i, "%d:" % i + "x" * width)
        if i % 1000 == 999:
            p.execute()
    p.execute()


def numbered_wrong(r, width=1000):
    """The keys fill_numbered made that hold another value now (a key
    that is gone is not counted here)."""
    return [k for k in r.scan_iter(count=1000)
            if r.get(k) != b"%d:" % int(k.split(b":")[1]) + b"x" * width]


def wal_fields_records(data):
    """How many fields records (kind 5) the WAL segments in `data` hold,
    by `perfcached -W`."""
    import re
    p = subprocess.run([BIN, "-W", data], capture_output=True, text=True, timeout=60)
    m = re.search(r"(\d+) fields, \d+ expire\)", p.stdout)
    assert m, p.stdout + p.stderr
    return int(m.group(1))


def wal_expire_records(data):
    """How many expire records (kind 6) the WAL segments in `data` hold."""
    import re
    p = subprocess.run([BIN, "-W", data], capture_output=True, text=True, timeout=60)
    m = re.search(r"(\d+) expire\)", p.stdout)
    assert m, p.stdout + p.stderr
    return int(m.group(1))
