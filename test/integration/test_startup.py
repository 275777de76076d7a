# perfcached — start-up that refuses what it cannot do, loudly (issue 12, part 0).
# Copyright (c) 2026 the perfcached authors.
"""A second daemon on any door of a running one (RESP port, HTTP door, MI
FIFO, MI datagram socket) exits non-zero and says why, and the first one
keeps serving on all of its doors. Started in the background (no -D), every
failure before serving exits non-zero with the reason on stderr, and the pid
file's directory is made. Real daemons on loopback; every process is stopped
by PID and every wait is bounded."""
import fcntl
import json
import os
import select
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
import unittest

import redis  # Debian's python3-redis

from harness import BIN, Daemon, free_port, mi_datagram_raw, mi_fifo_raw, override_args, wait_port

NOBODY = 65534


def mi_request(method, params=None):
    req = {"jsonrpc": "2.0", "method": method, "id": 1}
    if params is not None:
        req["params"] = params
    return json.dumps(req).encode()


def pids_with_arg(marker):
    """PIDs of processes whose command line holds `marker` (a test's unique
    temp dir): how a test finds a daemon that detached."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                if marker.encode() in f.read():
                    out.append(int(d))
        except OSError:
            pass
    return sorted(out)


def wait_gone(pid, timeout=15.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:  # our own child: reap it
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return True
        except ChildProcessError:
            pass
        time.sleep(0.05)
    return False


def wait_exited(pid, timeout=10.0):
    """Until `pid` is gone or a zombie (its descriptors are closed then; an
    empty /proc/PID/cmdline comes earlier, before they are)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with open("/proc/%d/stat" % pid) as f:
                if f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                    return True
        except OSError:
            return True
        time.sleep(0.05)
    return False


def kill_marked(marker):
    """Stop (by PID) every process started with `marker` in its arguments."""
    for pid in pids_with_arg(marker):
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    for pid in pids_with_arg(marker):
        if not wait_gone(pid, 10):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def tcp_lock(run_dir, port):
    """The lock file that claims 127.0.0.1:port (proc/claim.h)."""
    return os.path.join(run_dir, ".perfcached-tcp-127.0.0.1:%d.lock" % port)


def path_lock(path):
    """The lock file that claims a FIFO / socket / pid file path."""
    d, name = os.path.split(path)
    return os.path.join(d, "." + name + ".lock")


def lock_pid(lock):
    with open(lock) as f:
        return int(f.read())


def open_lock_files(pid):
    """The *.lock files process `pid` has open."""
    out = []
    try:
        fds = os.listdir("/proc/%d/fd" % pid)
    except OSError:
        return out
    for fd in fds:
        try:
            target = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        if target.endswith(".lock"):
            out.append(target)
    return sorted(out)


def abstract_perfcached_names(*marks):
    """Abstract UNIX socket names starting with 'perfcached' (/proc/net/unix
    shows them with a leading '@'; reachable, and bindable, by any user)
    that hold one of `marks` (a test's port, pid or directory: other
    daemons may run on this host)."""
    with open("/proc/net/unix") as f:
        names = [line.split()[-1] for line in f if len(line.split()) > 7 and line.split()[-1].startswith("@perfcached")]
    return [n for n in names if any(str(m) in n for m in marks)]


class Squatter:
    """A process of another user (nobody) that takes what it can of a
    daemon's doors before the daemon starts: binds each abstract name (the
    claims of an earlier version) and creates and flocks each lock file.
    Stopped by PID; it also leaves by itself after 120 s."""

    def __init__(self, names=(), locks=()):
        r1, w1 = os.pipe()  # report: child -> test
        r2, w2 = os.pipe()  # stop: the test closes w2
        pid = os.fork()
        if pid == 0:
            try:
                os.close(r1)
                os.close(w2)
                os.setgroups([])
                os.setgid(NOBODY)
                os.setuid(NOBODY)
                held, bound, locked = [], 0, 0
                for n in names:
                    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    try:
                        s.bind(b"\0" + n.encode())
                        s.listen(4)
                        held.append(s)
                        bound += 1
                    except OSError:
                        s.close()
                for lock in locks:
                    try:
                        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
                    except OSError:
                        continue
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        os.write(fd, b"%d\n" % os.getpid())
                        held.append(fd)
                        locked += 1
                    except OSError:
                        os.close(fd)
                os.write(w1, json.dumps({"bound": bound, "locked": locked}).encode())
                os.close(w1)
                select.select([r2], [], [], 120)
            finally:
                os._exit(0)
        self.pid = pid
        os.close(w1)
        os.close(r2)
        self.stop_fd = w2
        data = b""
        while True:
            r, _, _ = select.select([r1], [], [], 15)
            chunk = os.read(r1, 4096) if r else b""
            if not chunk:
                break
            data += chunk
        os.close(r1)
        self.report = json.loads(data or b"{}")

    def stop(self):
        if self.stop_fd is not None:
            os.close(self.stop_fd)
            self.stop_fd = None
        if not wait_gone(self.pid, 10):
            os.kill(self.pid, signal.SIGKILL)
            wait_gone(self.pid, 5)


class SecondDaemon(unittest.TestCase):
    """A running daemon with all four doors; a second one tries each."""

    @classmethod
    def setUpClass(cls):
        cls.http_port = free_port()
        cls.d = Daemon(workers=2, overrides=["listen.http=127.0.0.1:%d" % cls.http_port])
        cls.dgram = os.path.join(cls.d.workdir, "mi.sock")
        cls.fifo_ino = os.stat(cls.d.fifo).st_ino
        cls.dgram_ino = os.stat(cls.dgram).st_ino
        cls.other = tempfile.mkdtemp(prefix="perfcached-test-second-")

    @classmethod
    def tearDownClass(cls):
        kill_marked(cls.other)
        rc = cls.d.stop()
        shutil.rmtree(cls.other, ignore_errors=True)
        assert rc == 0, "first daemon exit code %r" % rc

    def second(self, **door):
        """Start a second daemon whose doors are its own except `door`;
        returns (exit code, stderr), or fails when it keeps running."""
        own = {
            "listen.resp": "127.0.0.1:%d" % free_port(),
            "listen.http": "",
            "mi.fifo_name": os.path.join(self.other, "fifo"),
            "mi.datagram": os.path.join(self.other, "mi.sock"),
        }
        own.update(door)
        args = [BIN, "-D", "-o", "memory.arena_mb=32", "-o", "memory.hugepages=off",
                "-o", "daemon.workers=1", "-o", "mi.reply_dir=%s/" % self.other]
        for k, v in own.items():
            args += ["-o", "%s=%s" % (k, v)]
        p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            out, err = p.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            p.kill()  # the supervisor, by PID; its children follow (PR_SET_PDEATHSIG)
            p.communicate(timeout=10)
            kill_marked(self.other)
            self.fail("the second daemon kept running on a door of the first")
        return p.returncode, err

    def assertFirstServes(self):
        d = self.d
        # Its lock files are still there, still naming it: a refused daemon
        # never removes a lock file another one holds.
        for lock in self.locks():
            self.assertEqual(lock_pid(lock), d.pid, lock)
        # Its FIFO and datagram socket are still the ones it made, and answer.
        self.assertEqual(os.stat(d.fifo).st_ino, self.fifo_ino, "the FIFO was replaced")
        self.assertEqual(os.stat(self.dgram).st_ino, self.dgram_ino, "the datagram socket was replaced")
        r = mi_fifo_raw(d.fifo, d.workdir, mi_request("uptime"))
        self.assertIn(b'"Up time"', r)
        r = mi_datagram_raw(self.dgram, mi_request("uptime"), d.workdir)
        self.assertIn(b'"Up time"', r)
        with socket.create_connection(("127.0.0.1", self.http_port), timeout=5) as s:
            s.sendall(b"GET /health HTTP/1.0\r\nHost: 127.0.0.1:%d\r\n\r\n" % self.http_port)
            resp = s.recv(4096)
            self.assertIn(b"200", resp.split(b"\r\n")[0], resp)
        # Every fresh connection lands on this daemon (no kernel split).
        c = redis.Redis(host="127.0.0.1", port=d.port, socket_timeout=5)
        c.set("startup-probe", "first")
        for _ in range(40):
            c2 = redis.Redis(host="127.0.0.1", port=d.port, socket_timeout=5)
            self.assertEqual(c2.get("startup-probe"), b"first")
            c2.close()

    def locks(self):
        # Started with -D and no pid_file: TCP locks in /run/perfcached.
        return sorted([tcp_lock("/run/perfcached", self.d.port), tcp_lock("/run/perfcached", self.http_port),
                       path_lock(self.d.fifo), path_lock(self.dgram)])

    def test_locks_held_by_the_supervisor_alone(self):
        self.assertEqual(open_lock_files(self.d.pid), self.locks())
        kids, deadline = [], time.time() + 5
        while len(kids) < 4 and time.time() < deadline:  # timer, 2 workers, MI process
            kids = subprocess.run(["pgrep", "-P", str(self.d.pid)], capture_output=True, text=True,
                                  timeout=5).stdout.split()
            time.sleep(0.05)
        self.assertEqual(len(kids), 4, kids)
        for k in kids:
            self.assertEqual(open_lock_files(int(k)), [], "child %s keeps a door's lock" % k)

    def test_no_abstract_socket_names(self):
        # The abstract namespace has no permissions: nothing of ours in it.
        self.assertEqual(abstract_perfcached_names(self.d.port, self.http_port, self.d.workdir, self.d.pid), [])

    def test_same_resp_port(self):
        rc, err = self.second(**{"listen.resp": "127.0.0.1:%d" % self.d.port})
        self.assertEqual(rc, 1, err)
        self.assertIn("cannot listen on 127.0.0.1:%d: address in use" % self.d.port, err)
        self.assertIn("another perfcached (pid %d)" % self.d.pid, err)
        self.assertFirstServes()

    def test_same_resp_port_other_spelling(self):
        # localhost and 0.0.0.0 are the same port: the claim (localhost) or
        # the probe (the wildcard) refuses them.
        rc, err = self.second(**{"listen.resp": "localhost:%d" % self.d.port})
        self.assertEqual(rc, 1, err)
        self.assertIn("address in use", err)
        rc, err = self.second(**{"listen.resp": "0.0.0.0:%d" % self.d.port, "listen.resp_allow": "127.0.0.1"})
        self.assertEqual(rc, 1, err)
        self.assertIn("address in use", err)
        self.assertFirstServes()

    def test_same_fifo(self):
        rc, err = self.second(**{"mi.fifo_name": self.d.fifo})
        self.assertEqual(rc, 1, err)
        self.assertIn("MI FIFO %s: another perfcached (pid %d) serves it" % (self.d.fifo, self.d.pid), err)
        self.assertFirstServes()

    def test_same_datagram_socket(self):
        rc, err = self.second(**{"mi.datagram": self.dgram})
        self.assertEqual(rc, 1, err)
        self.assertIn("MI datagram socket %s: another perfcached (pid %d) serves it" % (self.dgram, self.d.pid),
                      err)
        self.assertFirstServes()

    def test_same_http_port(self):
        rc, err = self.second(**{"listen.http": "127.0.0.1:%d" % self.http_port})
        self.assertEqual(rc, 1, err)
        self.assertIn("HTTP door: cannot listen on 127.0.0.1:%d: address in use" % self.http_port, err)
        self.assertFirstServes()

    def test_refused_daemon_leaves_no_paths(self):
        # It made its own FIFO before the datagram socket was refused: it
        # removes what it made, and nothing of the first daemon's.
        rc, err = self.second(**{"mi.datagram": self.dgram})
        self.assertEqual(rc, 1, err)
        self.assertFalse(os.path.exists(os.path.join(self.other, "fifo")))
        self.assertFirstServes()


class ForeignOwners(unittest.TestCase):
    """Doors held by something that is not a perfcached with a claim."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="perfcached-test-foreign-")

    def tearDown(self):
        kill_marked(self.dir)
        shutil.rmtree(self.dir, ignore_errors=True)

    def run_fg(self, *overrides):
        args = [BIN, "-D"] + override_args(
            ["memory.arena_mb=32", "memory.hugepages=off", "daemon.workers=1",
             "listen.resp=127.0.0.1:%d" % free_port(), "mi.fifo_name=%s/fifo" % self.dir,
             "mi.reply_dir=%s/" % self.dir, "mi.datagram=%s/mi.sock" % self.dir], overrides)
        p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            _, err = p.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate(timeout=10)
            self.fail("perfcached kept running without a configured door")
        return p.returncode, err

    def test_fifo_read_by_another_process(self):
        path = os.path.join(self.dir, "fifo")
        os.mkfifo(path, 0o600)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # somebody else serves it
        try:
            rc, err = self.run_fg()
            ino = os.stat(path).st_ino
        finally:
            os.close(fd)
        self.assertEqual(rc, 1, err)
        self.assertIn("another process reads this FIFO", err)
        self.assertTrue(stat.S_ISFIFO(os.stat(path).st_mode))
        self.assertEqual(os.stat(path).st_ino, ino)

    def test_datagram_bound_by_another_process(self):
        path = os.path.join(self.dir, "mi.sock")
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        s.bind(path)
        try:
            rc, err = self.run_fg()
        finally:
            s.close()
        self.assertEqual(rc, 1, err)
        self.assertIn("another process is bound to this socket", err)
        self.assertTrue(os.path.exists(path), "the other process's socket was removed")

    def test_http_port_taken_is_fatal_in_the_foreground(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        try:
            rc, err = self.run_fg("listen.http=127.0.0.1:%d" % port)
        finally:
            s.close()
        self.assertEqual(rc, 1, err)
        self.assertIn("HTTP door: cannot listen on 127.0.0.1:%d: address in use" % port, err)

    def test_stopping_leaves_a_replaced_path_alone(self):
        # A program that does not claim replaces the daemon's FIFO and socket
        # while it runs: stopping the daemon removes neither of them.
        d = Daemon(workers=1)
        fd, s = None, None
        try:
            sock = os.path.join(d.workdir, "mi.sock")
            # The MI process serves (it checked its FIFO at start) before the swap.
            self.assertIn(b'"Up time"', mi_fifo_raw(d.fifo, d.workdir, mi_request("uptime")))
            os.unlink(d.fifo)
            os.mkfifo(d.fifo, 0o600)
            fd = os.open(d.fifo, os.O_RDONLY | os.O_NONBLOCK)
            os.unlink(sock)
            s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            s.bind(sock)
        finally:
            rc = d.stop()
        try:
            self.assertEqual(rc, 0)
            self.assertTrue(os.path.exists(d.fifo), "the other program's FIFO was removed")
            self.assertTrue(os.path.exists(sock), "the other program's socket was removed")
        finally:
            if fd is not None:
                os.close(fd)
            if s is not None:
                s.close()
            shutil.rmtree(d.workdir, ignore_errors=True)

    def test_regular_file_at_fifo_path_is_kept(self):
        path = os.path.join(self.dir, "fifo")
        with open(path, "w") as f:
            f.write("operator's notes\n")
        rc, err = self.run_fg()
        self.assertEqual(rc, 1, err)
        self.assertIn("the path exists and is not a FIFO", err)
        with open(path) as f:
            self.assertEqual(f.read(), "operator's notes\n")


class Background(unittest.TestCase):
    """Without -D: the starting process exits when the daemon serves (0) or
    failed (1, with the reason on stderr) — with no syslog to read."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="perfcached-test-bg-")
        os.chmod(self.dir, 0o755)
        self.port = free_port()
        self.pid_file = os.path.join(self.dir, "run", "sub", "perfcached.pid")  # directories missing

    def tearDown(self):
        kill_marked(self.dir)
        shutil.rmtree(self.dir, ignore_errors=True)

    def args(self, *overrides):
        return [BIN] + override_args(
            ["memory.arena_mb=32", "memory.hugepages=off", "daemon.workers=2",
             "listen.resp=127.0.0.1:%d" % self.port, "daemon.pid_file=%s" % self.pid_file,
             "mi.fifo_name=%s/fifo" % self.dir, "mi.reply_dir=%s/" % self.dir,
             "mi.datagram=%s/mi.sock" % self.dir], overrides)

    def start(self, *overrides, **kw):
        # communicate() returns only when every process let go of stderr.
        return subprocess.run(self.args(*overrides), capture_output=True, text=True, timeout=30, **kw)

    def test_starts_and_writes_pid_file_in_a_missing_directory(self):
        p = self.start()
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("perfcached ready", p.stderr)  # said where it was started, too
        self.assertTrue(os.path.exists(self.pid_file), "no pid file: " + p.stderr)
        with open(self.pid_file) as f:
            pid = int(f.read())
        self.assertEqual(pids_with_arg(self.dir)[0], pid)  # the supervisor, not a parent that left
        self.assertTrue(wait_port(self.port, timeout=5))
        r = mi_fifo_raw(os.path.join(self.dir, "fifo"), self.dir, mi_request("uptime"))
        self.assertIn(b'"Up time"', r)
        # Every door (the pid file too) is claimed without an abstract name.
        self.assertEqual(abstract_perfcached_names(self.port, self.dir, pid), [])
        os.kill(pid, signal.SIGTERM)
        self.assertTrue(wait_gone(pid))
        for path in (self.pid_file, os.path.join(self.dir, "fifo"), os.path.join(self.dir, "mi.sock")):
            self.assertFalse(os.path.exists(path), path + " left behind")

    def test_launcher_output_closed(self):
        # Whoever reads the launcher's stderr goes away at once (a pager, a
        # closed terminal): the daemon still starts (no SIGPIPE death).
        r, w = os.pipe()
        os.close(r)
        p = subprocess.run(self.args(), stdout=subprocess.DEVNULL, stderr=w, timeout=30)
        os.close(w)
        self.assertEqual(p.returncode, 0)
        self.assertTrue(wait_port(self.port, timeout=5))
        with open(self.pid_file) as f:
            pid = int(f.read())
        os.kill(pid, signal.SIGTERM)
        self.assertTrue(wait_gone(pid))

    def test_port_taken(self):
        s = socket.socket()
        s.bind(("127.0.0.1", self.port))
        s.listen(1)
        try:
            p = self.start()
        finally:
            s.close()
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("cannot listen on 127.0.0.1:%d: address in use" % self.port, p.stderr)
        self.assertEqual(pids_with_arg(self.dir), [])
        self.assertFalse(os.path.exists(self.pid_file))

    def test_second_daemon_in_the_background(self):
        p = self.start()
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(self.pid_file) as f:
            pid = int(f.read())
        fifo = os.path.join(self.dir, "fifo")
        ino = os.stat(fifo).st_ino
        # Same doors, same pid file: refused, and the first keeps all of them.
        q = self.start()
        self.assertEqual(q.returncode, 1, q.stderr)
        self.assertIn("another perfcached (pid %d)" % pid, q.stderr)
        with open(self.pid_file) as f:
            self.assertEqual(int(f.read()), pid)
        self.assertEqual(os.stat(fifo).st_ino, ino)
        self.assertIn(b'"Up time"', mi_fifo_raw(fifo, self.dir, mi_request("uptime")))
        self.assertEqual(pids_with_arg(self.dir)[0], pid)

    def test_http_door_that_cannot_open(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        hp = s.getsockname()[1]
        try:
            p = self.start("listen.http=127.0.0.1:%d" % hp)
        finally:
            s.close()
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("HTTP door: cannot listen on 127.0.0.1:%d" % hp, p.stderr)
        self.assertNotIn("perfcached ready", p.stderr)
        self.assertEqual(pids_with_arg(self.dir), [])
        # What it made before the HTTP door failed is gone again.
        self.assertFalse(os.path.exists(os.path.join(self.dir, "fifo")))
        self.assertFalse(os.path.exists(self.pid_file))

    def drop_to_nobody(self):
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)

    def test_not_root(self):
        # As an ordinary user: a run directory (the TCP doors' lock files)
        # and a FIFO directory only root may write, and a fifo_user only
        # root may give the FIFO to.
        p = self.start(preexec_fn=self.drop_to_nobody)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("RESP door: cannot claim 127.0.0.1:%d: cannot create directory %s/run: Permission denied"
                      % (self.port, self.dir), p.stderr)
        mine = os.path.join(self.dir, "nobody")
        os.mkdir(mine)
        os.chown(mine, NOBODY, NOBODY)
        p = self.start("daemon.pid_file=%s/p.pid" % mine, preexec_fn=self.drop_to_nobody)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("MI FIFO %s/fifo: lock file %s/.fifo.lock Permission denied" % (self.dir, self.dir), p.stderr)
        p = subprocess.run(self.args("mi.fifo_name=%s/fifo" % mine, "mi.datagram=", "mi.fifo_user=root",
                                     "daemon.pid_file=%s/p.pid" % mine),
                           capture_output=True, text=True, timeout=30, preexec_fn=self.drop_to_nobody)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("only root can change a file's owner", p.stderr)
        self.assertEqual(pids_with_arg(self.dir), [])


class OtherUsers(unittest.TestCase):
    """Another local user cannot keep the daemon from starting by holding
    a claim it has no right to (an abstract socket name, a lock file), and
    a lock file another user made is refused by name, never trusted."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="perfcached-test-users-")
        self.port, self.http = free_port(), free_port()
        self.fifo = os.path.join(self.dir, "fifo")
        self.sock = os.path.join(self.dir, "mi.sock")
        self.pid_file = os.path.join(self.dir, "perfcached.pid")
        self.squatter = None

    def tearDown(self):
        if self.squatter:
            self.squatter.stop()
        kill_marked(self.dir)
        shutil.rmtree(self.dir, ignore_errors=True)

    def start(self):
        """In the background (with its pid file): (exit code, stderr)."""
        args = [BIN, "-o", "memory.arena_mb=32", "-o", "memory.hugepages=off", "-o", "daemon.workers=1",
                "-o", "listen.resp=127.0.0.1:%d" % self.port, "-o", "listen.http=127.0.0.1:%d" % self.http,
                "-o", "daemon.pid_file=%s" % self.pid_file, "-o", "mi.fifo_name=%s" % self.fifo,
                "-o", "mi.reply_dir=%s/" % self.dir, "-o", "mi.datagram=%s" % self.sock]
        p = subprocess.run(args, capture_output=True, text=True, timeout=30)
        return p.returncode, p.stderr

    def all_locks(self):
        return [tcp_lock(self.dir, self.port), tcp_lock(self.dir, self.http), path_lock(self.fifo),
                path_lock(self.sock), path_lock(self.pid_file)]

    def test_other_user_cannot_stop_the_daemon(self):
        # Root's directory (like /run/perfcached): nobody can enter it but not
        # make a file there, so it cannot hold a door -- nor keep root's
        # daemon from serving them.
        os.chmod(self.dir, 0o755)
        stale = path_lock(self.fifo)  # left by a daemon killed with -9
        with open(stale, "w") as f:
            f.write("999999\n")
        os.chmod(stale, 0o600)
        names = ["perfcached:tcp:127.0.0.1:%d" % self.port, "perfcached:tcp:127.0.0.1:%d" % self.http] + \
                ["perfcached:path:%s" % p for p in (self.fifo, self.sock, self.pid_file)]
        self.squatter = Squatter(names, self.all_locks())
        self.assertEqual(self.squatter.report, {"bound": 5, "locked": 0})  # what it holds is in place
        rc, err = self.start()
        self.assertEqual(rc, 0, err)
        self.assertNotIn("another perfcached", err)
        with open(self.pid_file) as f:
            pid = int(f.read())
        self.assertTrue(wait_port(self.port, timeout=5))
        c = redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=5)
        self.assertTrue(c.set("k", "v"))
        self.assertIn(b'"Up time"', mi_fifo_raw(self.fifo, self.dir, mi_request("uptime")))
        self.assertIn(b'"Up time"', mi_datagram_raw(self.sock, mi_request("uptime"), self.dir))
        with socket.create_connection(("127.0.0.1", self.http), timeout=5) as s:
            s.sendall(b"GET /health HTTP/1.0\r\nHost: 127.0.0.1:%d\r\n\r\n" % self.http)
            self.assertIn(b"200", s.recv(4096).split(b"\r\n")[0])
        for lock in self.all_locks():
            st = os.stat(lock)
            self.assertEqual((st.st_uid, stat.S_IMODE(st.st_mode), lock_pid(lock)), (0, 0o600, pid), lock)
        c.close()
        os.kill(pid, signal.SIGTERM)
        self.assertTrue(wait_gone(pid))
        # It removed its lock files (the stale one too: it held it).
        self.assertEqual([l for l in self.all_locks() if os.path.exists(l)], [])

    def test_lock_file_of_another_user_is_refused_by_name(self):
        # A world-writable run directory (sticky, like /tmp): nobody makes the
        # RESP door's lock file first. Root's daemon does not use it -- it
        # could be anybody's -- and says whose it is.
        os.chmod(self.dir, 0o1777)
        lock = tcp_lock(self.dir, self.port)
        self.squatter = Squatter(locks=[lock])
        self.assertEqual(self.squatter.report, {"bound": 0, "locked": 1})
        rc, err = self.start()
        self.assertEqual(rc, 1, err)
        self.assertIn("RESP door: cannot claim 127.0.0.1:%d: lock file %s belongs to uid %d, not to this user "
                      "(uid 0): not using it, it is not this user's perfcached" % (self.port, lock, NOBODY), err)
        self.assertIn("any user can make files in %s: choose a directory only this user can write" % self.dir, err)
        self.assertEqual(os.stat(lock).st_uid, NOBODY)  # left alone
        self.assertFalse(os.path.exists(self.pid_file))

    def test_restart_after_kill_9(self):
        # kill -9 leaves the lock files: nobody holds their locks, so the
        # next daemon takes them at once.
        rc, err = self.start()
        self.assertEqual(rc, 0, err)
        with open(self.pid_file) as f:
            pid = int(f.read())
        kids = [int(k) for k in subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True,
                                               timeout=5).stdout.split()]
        self.assertEqual(len(kids), 3, kids)  # timer, worker, MI process
        os.kill(pid, signal.SIGKILL)
        self.assertTrue(wait_gone(pid))
        for k in kids:  # they follow (PR_SET_PDEATHSIG): exited, their descriptors closed
            self.assertTrue(wait_exited(k), "child %d outlived the supervisor" % k)
        self.assertEqual([l for l in self.all_locks() if not os.path.exists(l)], [])
        rc, err = self.start()
        self.assertEqual(rc, 0, err)
        with open(self.pid_file) as f:
            self.assertEqual(lock_pid(tcp_lock(self.dir, self.port)), int(f.read()))


class Logs(unittest.TestCase):
    """What an operator reads: where each door listens, the MI process by
    its name, a stalled worker, a full arena (once a minute at most)."""

    def test_doors_logged_and_mi_process_named(self):
        hp = free_port()
        d = Daemon(workers=2, overrides=["listen.http=127.0.0.1:%d" % hp])
        try:
            log = d.read_log()
            self.assertIn("notice: RESP door listening on 127.0.0.1:%d" % d.port, log)
            self.assertIn("notice: MI FIFO listening on %s" % d.fifo, log)
            self.assertIn("notice: MI datagram socket listening on %s/mi.sock" % d.workdir, log)
            self.assertIn("notice: HTTP door listening on http://127.0.0.1:%d/" % hp, log)
            # The MI process dies: named as such, restarted, serving the same FIFO.
            mi, deadline = [], time.time() + 5
            while not mi and time.time() < deadline:  # named once it runs (prctl)
                mi = [k for k in subprocess.run(["pgrep", "-P", str(d.pid)], capture_output=True, text=True,
                                                timeout=5).stdout.split()
                      if open("/proc/%s/comm" % k).read().strip() == "pc-mi"]
                time.sleep(0.05)
            self.assertEqual(len(mi), 1)
            ino = os.stat(d.fifo).st_ino
            os.kill(int(mi[0]), signal.SIGKILL)
            self.assertTrue(d.wait_log("MI process (rank -2, pid %s) killed by signal 9" % mi[0]), d.read_log())
            self.assertTrue(d.wait_log("MI process rank -2 restarted"), d.read_log())
            self.assertNotIn("module process", d.read_log())
            self.assertEqual(os.stat(d.fifo).st_ino, ino)
            self.assertIn(b'"Up time"', mi_fifo_raw(d.fifo, d.workdir, mi_request("uptime")))
        finally:
            self.assertEqual(d.stop(), 0)
        self.assertFalse(os.path.exists(d.fifo), "the FIFO outlived the daemon")

    def test_hugetlb_failure_in_words(self):
        """The tier note in words on every surface: the start-up log, MI
        mem_shm_dump and perf_stats, MEMORY DOCTOR, INFO (proc/tier_words.h)."""
        d = Daemon(workers=1, arena_mb=32, overrides=["memory.hugepages=auto"])
        try:
            log = d.read_log()
            shown = {"log": [l for l in log.splitlines() if "notice: arena:" in l][0]}
            dump = json.loads(mi_fifo_raw(d.fifo, d.workdir, mi_request("mem_shm_dump")))["result"]
            shown["mem_shm_dump"] = dump["tier_note"]
            stats = json.loads(mi_fifo_raw(d.fifo, d.workdir, mi_request("perf_stats")))["result"]
            shown["perf_stats"] = stats["arena"]["tier_note"]
            c = redis.Redis(host="127.0.0.1", port=d.port, socket_timeout=10)
            shown["MEMORY DOCTOR"] = c.execute_command("MEMORY", "DOCTOR").decode()
            shown["INFO"] = json.dumps(c.info("all"))
            c.close()
        finally:
            self.assertEqual(d.stop(), 0)
        tier = dump["tier"]
        self.assertIn("tier %s (" % tier, shown["log"])
        for where, text in shown.items():
            for raw in ("Bad address", "Cannot allocate memory", "Invalid argument", "the kernel said"):
                self.assertNotIn(raw, text, where)
        if tier != "hugetlb":  # this machine's pool had no page to give: every surface says so in words
            for where in ("log", "mem_shm_dump", "perf_stats", "MEMORY DOCTOR"):
                self.assertRegex(shown[where], r"hugetlb: (the pool had no free 2 MiB page|no 2 MiB pages can be had)",
                                 where)
            self.assertIn(dump["tier_note"], shown["MEMORY DOCTOR"])
            self.assertEqual(dump["tier_note"], shown["perf_stats"])

    def test_large_arena_fault_in_progress(self):
        """A large arena takes seconds to fault in: the start and the end are
        logged at notice (from 1 GiB; every second meanwhile), before the
        arena's own line. A small one says nothing more."""
        d = Daemon(workers=1, arena_mb=2048)
        try:
            log = d.read_log()
        finally:
            self.assertEqual(d.stop(), 0)
        lines = log.splitlines()
        start = [i for i, l in enumerate(lines) if "notice: arena: faulting in 2.0 GiB" in l]
        end = [i for i, l in enumerate(lines) if "notice: arena: faulted in 2.0 of 2.0 GiB in " in l]
        arena = [i for i, l in enumerate(lines) if "notice: arena: 2048 MiB committed" in l]
        self.assertEqual((len(start), len(end), len(arena)), (1, 1, 1), log)
        self.assertLess(start[0], end[0])
        self.assertLess(end[0], arena[0])
        for l in lines[start[0] + 1:end[0]]:  # in between: only progress, each further on
            self.assertRegex(l, r"notice: arena: faulted in \d+\.\d of 2\.0 GiB \(\d+%\)$")
        small = Daemon(workers=1, arena_mb=256)
        try:
            log = small.read_log()
        finally:
            self.assertEqual(small.stop(), 0)
        self.assertIn("notice: arena: 256 MiB committed", log)
        self.assertNotIn("faulting in", log)
        self.assertNotIn("faulted in", log)

    def healthy_gauge(self, port):
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1:%d\r\n\r\n" % port)
            body = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                body += chunk
        for line in body.decode().splitlines():
            if line.startswith("perfcached_healthy "):
                return float(line.split()[1])
        self.fail("no perfcached_healthy in /metrics")

    def test_stalled_worker(self):
        hp = free_port()
        d = Daemon(workers=2, overrides=["listen.http=127.0.0.1:%d" % hp])
        try:
            self.assertEqual(self.healthy_gauge(hp), 1)
            pids, deadline = [], time.time() + 5
            while not pids and time.time() < deadline:  # named once they run (prctl)
                pids = d.worker_pids()
                time.sleep(0.05)
            w = pids[0]
            os.kill(w, signal.SIGSTOP)
            try:
                self.assertTrue(d.wait_log("(pid %d) is stalled: no heartbeat for" % w), d.read_log())
                self.assertEqual(self.healthy_gauge(hp), 0)  # what an alert rule watches
            finally:
                os.kill(w, signal.SIGCONT)
            self.assertTrue(d.wait_log("(pid %d) beats again after" % w), d.read_log())
        finally:
            self.assertEqual(d.stop(), 0)

    def test_full_arena_logged_once_a_minute(self):
        d = Daemon(workers=1, arena_mb=16, overrides=["daemon.databases=1"])
        try:
            c = redis.Redis(host="127.0.0.1", port=d.port, socket_timeout=10)
            big = b"x" * (256 << 10)
            refused = 0
            for i in range(400):  # 100 MiB at most: the 16 MiB arena refuses long before
                try:
                    c.set("big%d" % i, big)
                except redis.exceptions.ResponseError as e:
                    self.assertIn("OOM", str(e))
                    refused += 1
                    if refused >= 20:
                        break
            self.assertGreaterEqual(refused, 20)
            self.assertTrue(d.wait_log("arena full:"), d.read_log())
            time.sleep(0.5)
            for i in range(20):  # a second burst within the minute: not logged again
                try:
                    c.set("more%d" % i, big)
                except redis.exceptions.ResponseError:
                    pass
            time.sleep(0.5)
            self.assertEqual(d.read_log().count("arena full:"), 1, d.read_log())
        finally:
            self.assertEqual(d.stop(), 0)


class CheckMode(unittest.TestCase):
    """perfcached -C catches what start-up would trip on."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="perfcached-test-check-")
        self.conf = os.path.join(self.dir, "perfcached.conf")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def check(self, text=None, *overrides):
        args = [BIN, "-C"]
        if text is not None:
            with open(self.conf, "w") as f:
                f.write(text)
            args += ["-f", self.conf]
        for o in overrides:
            args += ["-o", o]
        return subprocess.run(args, capture_output=True, text=True, timeout=20)

    def test_misspelt_collection_override(self):
        p = self.check("[collection sessions]\nbuckets = 1024\n", "collection.sesions.buckets=4096")
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertIn("-o collection.sesions.buckets: no collection 'sesions' (collections: sessions)", p.stderr)
        p = self.check(None, "collection.sessions.expired_events=yes")  # the defaults have 0..15
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertIn("no collection 'sessions' (collections: 0, 1, 2", p.stderr)

    def test_override_keeps_the_default_databases(self):
        p = self.check(None, "collection.0.expired_events=yes")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("16 collection(s): 0 (expired_events) 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15\n", p.stdout)

    def test_repeated_key(self):
        p = self.check("[daemon]\nworkers = 2\n\n[memory]\narena_mb = 64\n[daemon]\nworkers = 3\n")
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertIn("%s:7: 'workers' is set twice in [daemon] (first at %s:2): remove one" % (self.conf, self.conf),
                      p.stderr)
        # List keys add up (several AUTH secrets rotate, CIDRs accumulate).
        p = self.check("[listen]\nresp_allow = 10.0.0.0/8\nresp_allow = 10.1.0.0/16\n")
        self.assertEqual(p.returncode, 0, p.stderr)
        # A -o given twice is refused, both values named (the last used to
        # win silently); lists add up; a -o over the file's value wins.
        p = self.check(None, "memory.arena_mb=32", "memory.arena_mb=64")
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertIn("perfcached: -o memory.arena_mb=64: given twice (first -o memory.arena_mb=32): give it once",
                      p.stderr)
        p = self.check(None, "collection.3.buckets=4096", "collection.3.buckets_log2=10")
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertIn("-o collection.3.buckets_log2=10: given twice (first -o collection.3.buckets=4096)", p.stderr)
        p = self.check(None, "listen.resp_allow=10.0.0.0/8", "listen.resp_allow=10.1.0.0/16", "wal.save=60 1",
                       "wal.save=300 10", "secrets.resp=a", "secrets.resp=b")
        self.assertEqual(p.returncode, 0, p.stderr)
        p = self.check("[memory]\narena_mb = 16\n", "memory.arena_mb=64")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("arena 64 MiB", p.stdout)
        # The daemon itself (not only -C) refuses to start with it.
        p = subprocess.run([BIN, "-D", "-o", "listen.resp=127.0.0.1:0", "-o", "mi.fifo_name=", "-o", "mi.datagram=",
                            "-o", "memory.arena_mb=16", "-o", "daemon.workers=1", "-o", "daemon.workers=2"],
                           capture_output=True, text=True, timeout=20)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("-o daemon.workers=2: given twice (first -o daemon.workers=1): give it once", p.stderr)

    def test_listen_errors_name_their_line(self):
        p = self.check("[listen]\nresp_allow = 10.0.0.0/8\nresp_allow = 10.0.0.300\nresp_allow = 10.2.0.0/16\n")
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertIn("%s:3: [listen] resp_allow: expected an address or CIDR" % self.conf, p.stderr)
        p = self.check("[collection a]\n[listen]\nresp_collections = 0:a\nresp_collections = 1:b\n"
                       "resp_collections = 2:a\n")
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertIn("%s:4: [listen] resp_collections: '1:b' names no declared collection" % self.conf, p.stderr)
        p = self.check("[listen]\nresp = 127.0.0.1:7000\nhttp = 127.0.0.1:7000\n")
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertIn("%s:3: [listen] http = 127.0.0.1:7000 is the RESP door's address" % self.conf, p.stderr)


if __name__ == "__main__":
    unittest.main()
