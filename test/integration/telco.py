# perfcached — helpers for the real telecom clients (rtpengine, Kamailio) used as tests.
# Copyright (c) 2026 the perfcached authors.
"""The backend a client test runs against (perfcached, or Debian's
redis-server to prove the test itself right), a bencode codec for
rtpengine's ng control protocol, and a process wrapper that starts a client
in the foreground and stops it by PID. Every wait is bounded."""
import os
import shutil
import signal
import subprocess
import time

from harness import Daemon, RawClient, RedisServer

_PATH_EXTRA = ("/usr/sbin", "/sbin", "/usr/bin")


def need_binary(name):
    """The path of a binary from Debian's packages. Missing: fail loudly (an
    exception in setUpClass is an error, never a silent skip): install-deps
    installs it."""
    path = shutil.which(name, path=os.pathsep.join([os.environ.get("PATH", "")] + list(_PATH_EXTRA)))
    if not path:
        raise RuntimeError("%s not installed: run scripts/install-deps.sh" % name)
    return path


class Backend:
    """perfcached (kind "perfcached") or redis-server (kind "redis")."""

    def __init__(self, kind):
        self.kind = kind
        if kind == "perfcached":
            self.server = Daemon(workers=2)
        elif kind == "redis":
            self.server = RedisServer()
        else:
            raise ValueError(kind)
        self.port = self.server.port

    def call(self, *args, db=0):
        c = RawClient(self.port)
        try:
            if db:
                c.call("SELECT", db)
            return parse(c.call(*args))
        finally:
            c.close()

    def stop(self):
        self.server.stop()


def parse(raw):
    """A raw RESP2 reply as Python: bytes, int, None, list, or an Exception."""
    def one(i):
        t = raw[i:i + 1]
        j = raw.index(b"\r\n", i)
        line = raw[i + 1:j]
        if t == b"+":
            return line, j + 2
        if t == b"-":
            return RuntimeError(line.decode()), j + 2
        if t == b":":
            return int(line), j + 2
        if t == b"$":
            n = int(line)
            if n < 0:
                return None, j + 2
            return raw[j + 2:j + 2 + n], j + 4 + n
        if t == b"*":
            n = int(line)
            if n < 0:
                return None, j + 2
            out, k = [], j + 2
            for _ in range(n):
                v, k = one(k)
                out.append(v)
            return out, k
        raise ValueError(raw)
    return one(0)[0]


# --- bencode (rtpengine ng protocol) ---------------------------------------

def bencode(v):
    if isinstance(v, bool):
        v = int(v)
    if isinstance(v, int):
        return b"i%de" % v
    if isinstance(v, str):
        v = v.encode()
    if isinstance(v, bytes):
        return b"%d:%s" % (len(v), v)
    if isinstance(v, (list, tuple)):
        return b"l" + b"".join(bencode(x) for x in v) + b"e"
    if isinstance(v, dict):
        return b"d" + b"".join(bencode(k) + bencode(v[k]) for k in sorted(v)) + b"e"
    raise TypeError(type(v))


def bdecode(data):
    def one(i):
        c = data[i:i + 1]
        if c == b"i":
            j = data.index(b"e", i)
            return int(data[i + 1:j]), j + 1
        if c == b"l":
            out, i = [], i + 1
            while data[i:i + 1] != b"e":
                v, i = one(i)
                out.append(v)
            return out, i + 1
        if c == b"d":
            out, i = {}, i + 1
            while data[i:i + 1] != b"e":
                k, i = one(i)
                v, i = one(i)
                out[k.decode()] = v
            return out, i + 1
        j = data.index(b":", i)
        n = int(data[i:j])
        return data[j + 1:j + 1 + n], j + 1 + n
    v, end = one(0)
    if end != len(data):
        raise ValueError("trailing bytes after bencoded value")
    return v


# --- a client process -------------------------------------------------------

class Proc:
    """A foreground process with its output in a log file; stopped by PID."""

    def __init__(self, args, log_path, cwd):
        self.args = args
        self.log_path = log_path
        self.log = open(log_path, "ab")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT, cwd=cwd,
                                     start_new_session=True)

    def alive(self):
        return self.proc.poll() is None

    def read_log(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def wait_log(self, needle, timeout=10.0):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if needle in self.read_log():
                return True
            if not self.alive():
                return False
            time.sleep(0.05)
        return False

    def stop(self, sig=signal.SIGTERM, timeout=10.0):
        """Signal the process (and its process group: Kamailio forks its
        workers into it) by PID, wait bounded, then SIGKILL."""
        pid = self.proc.pid
        if self.alive():
            try:
                os.killpg(pid, sig)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(pid, signal.SIGKILL)
                self.proc.wait(timeout=5)
        # children left behind by a leader that died first: by PID, only
        # the members of the session this object started
        for left in group_members(pid):
            try:
                os.kill(left, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.log.close()
        return self.proc.returncode


def group_members(pgid):
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid and int(fields[3]) == pgid:  # pgrp, session
            out.append(int(name))
    return out
