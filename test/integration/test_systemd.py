# perfcached — systemd: sd_notify (READY, STATUS, WATCHDOG, RELOADING, STOPPING), SIGHUP reload, the unit file.
# Copyright (c) 2026 the perfcached authors.
"""systemd is not PID 1 here: each test plays its part. It binds the
NOTIFY_SOCKET datagram socket itself, starts the daemon with that address
in the environment (as the unit's ExecStart= line, in one test), and reads
what the daemon says, with the sender's pid (SCM_CREDENTIALS, which is how
systemd enforces NotifyAccess=main)."""
import os
import re
import shlex
import shutil
import signal
import socket
import stat
import struct
import subprocess
import tempfile
import threading
import time
import unittest

import redis

from harness import BIN, ROOT, Daemon, NetNs, free_port, have_netns, http_request, wait_port

UNIT = os.path.join(ROOT, "contrib", "perfcached.service")


class NotifyListener:
    """systemd's end of NOTIFY_SOCKET: a path in a temporary directory or
    an abstract name. A thread records (arrival time, sender pid, text)."""

    def __init__(self, abstract=False, on_message=None):
        self.dir = tempfile.mkdtemp(prefix="perfcached-notify-")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        if abstract:
            name = "perfcached-test-notify-%d-%d" % (os.getpid(), id(self))
            self.sock.bind("\0" + name)
            self.address = "@" + name
        else:
            self.address = os.path.join(self.dir, "notify")
            self.sock.bind(self.address)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self.sock.settimeout(0.1)
        self.on_message = on_message
        self.messages = []
        self.lock = threading.Lock()
        self.running = True
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while self.running:
            try:
                data, anc, _, _ = self.sock.recvmsg(4096, socket.CMSG_SPACE(12))
            except socket.timeout:
                continue
            except OSError:
                return
            pid = None
            for level, kind, cdata in anc:
                if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                    pid = struct.unpack("iII", cdata[:12])[0]
            text = data.decode(errors="replace")
            if self.on_message:
                self.on_message(text)
            with self.lock:
                self.messages.append((time.time(), pid, text))

    def env(self, **extra):
        e = {k: v for k, v in os.environ.items() if k not in ("WATCHDOG_USEC", "WATCHDOG_PID", "JOURNAL_STREAM")}
        e["NOTIFY_SOCKET"] = self.address
        e.update(extra)
        return e

    def snapshot(self):
        with self.lock:
            return list(self.messages)

    def wait_for(self, line, timeout=10.0, after=0):
        """Index of the first message at or after index `after` with `line`
        as one of its lines (bounded wait), or None."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            for i, (_, _, text) in enumerate(self.snapshot()[after:]):
                if line in text.split("\n"):
                    return after + i
            time.sleep(0.02)
        return None

    def times(self, line, since=0.0):
        return [t for t, _, text in self.snapshot() if t >= since and line in text.split("\n")]

    def statuses(self):
        return [l[len("STATUS="):] for _, _, text in self.snapshot() for l in text.split("\n")
                if l.startswith("STATUS=")]

    def close(self):
        self.running = False
        self.thread.join(timeout=2)
        self.sock.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class Notify(unittest.TestCase):
    def setUp(self):
        self.to_close = []

    def tearDown(self):
        for x in reversed(self.to_close):
            x()

    def start(self, listener, **kw):
        d = Daemon(env=listener.env(**kw.pop("env", {})), **kw)
        self.to_close.append(d.stop)
        return d

    def listener(self, **kw):
        n = NotifyListener(**kw)
        self.to_close.append(n.close)
        return n

    def test_ready_when_every_door_listens(self):
        """READY=1 comes after the arena and the collections, and at that
        moment the RESP port takes connections and the MI FIFO and datagram
        socket exist (a test that connects right when READY arrives)."""
        port = free_port()
        paths = tempfile.mkdtemp(prefix="perfcached-notify-doors-")
        self.to_close.append(lambda: shutil.rmtree(paths, ignore_errors=True))
        fifo, dgram = os.path.join(paths, "fifo"), os.path.join(paths, "mi.sock")
        seen = {}

        def at_ready(text):
            if "READY=1" not in text.split("\n") or "connect" in seen:
                return
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                seen["connect"] = True
            except OSError as e:
                seen["connect"] = e
            seen["fifo"] = os.path.exists(fifo) and stat.S_ISFIFO(os.stat(fifo).st_mode)
            seen["dgram"] = os.path.exists(dgram) and stat.S_ISSOCK(os.stat(dgram).st_mode)

        n = self.listener(on_message=at_ready)
        d = self.start(n, port=port, overrides=("mi.fifo_name=" + fifo, "mi.datagram=" + dgram))
        ready = n.wait_for("READY=1")
        self.assertIsNotNone(ready, n.snapshot())
        self.assertIs(seen.get("connect"), True, seen)
        self.assertTrue(seen["fifo"], "the MI FIFO did not exist at READY=1")
        self.assertTrue(seen["dgram"], "the MI datagram socket did not exist at READY=1")
        texts = [m[2] for m in n.snapshot()]
        before = "\n".join(texts[:ready])
        self.assertIn("STATUS=mapping the arena: 64 MiB", before)
        self.assertIn("STATUS=creating 16 collection(s)", before)
        self.assertRegex(texts[ready], r"STATUS=serving: 2 worker\(s\), 0 key\(s\) in 16 collection\(s\)")
        self.assertEqual(redis.Redis(port=port, socket_timeout=5).ping(), True)
        # Only the supervisor speaks (systemd's NotifyAccess=main).
        self.assertEqual({m[1] for m in n.snapshot()}, {d.pid})

    def test_abstract_socket_and_stopping(self):
        n = self.listener(abstract=True)
        d = self.start(n)
        ready = n.wait_for("READY=1")
        self.assertIsNotNone(ready)
        self.assertEqual(d.stop(), 0)
        stopping = n.wait_for("STOPPING=1", timeout=5, after=ready)
        self.assertIsNotNone(stopping, n.snapshot())
        self.assertIsNotNone(n.wait_for("STATUS=stopped", timeout=5, after=stopping))
        self.assertEqual({m[1] for m in n.snapshot()}, {d.pid})

    def test_watchdog_fed_only_while_every_worker_beats(self):
        n = self.listener()
        d = self.start(n, env={"WATCHDOG_USEC": "1000000"})
        self.assertIsNotNone(n.wait_for("READY=1"))
        t0 = time.time()
        time.sleep(2.2)
        self.assertGreaterEqual(len(n.times("WATCHDOG=1", since=t0)), 3)  # every 0.5 s
        worker = d.worker_pids()[0]
        os.kill(worker, signal.SIGSTOP)
        try:
            # A worker without a heartbeat for 3 s is stalled: no more pings.
            self.assertTrue(d.wait_log("systemd watchdog: no longer fed: worker rank", timeout=10), d.read_log())
            t1 = time.time()
            time.sleep(2.5)
            self.assertEqual(n.times("WATCHDOG=1", since=t1 + 0.2), [])
            self.assertTrue(any(s.startswith("degraded: worker rank") and "the watchdog is not fed" in s
                                for s in n.statuses()), n.statuses())
        finally:
            os.kill(worker, signal.SIGCONT)
        t2 = time.time()
        deadline = t2 + 5
        while not n.times("WATCHDOG=1", since=t2) and time.time() < deadline:
            time.sleep(0.05)
        self.assertTrue(n.times("WATCHDOG=1", since=t2), "pings did not come back after SIGCONT")
        self.assertTrue(d.wait_log("systemd watchdog: fed again"))
        self.assertEqual({m[1] for m in n.snapshot()}, {d.pid})

    def test_watchdog_pid_of_another_process(self):
        n = self.listener()
        d = self.start(n, env={"WATCHDOG_USEC": "1000000", "WATCHDOG_PID": "1"})
        self.assertIsNotNone(n.wait_for("READY=1"))
        time.sleep(1.5)
        self.assertEqual(n.times("WATCHDOG=1"), [])
        self.assertIn("WATCHDOG_PID=1 is not this process", d.read_log())


def config(**kw):
    """An INI file for the reload tests; kw: section__key=value or a list of values."""
    sections = {}
    for k, v in kw.items():
        sec, key = k.split("__")
        for one in (v if isinstance(v, list) else [v]):
            sections.setdefault(sec, []).append("%s = %s" % (key, one))
    return "".join("[%s]\n%s\n" % (s, "\n".join(lines)) for s, lines in sections.items())


class Reload(unittest.TestCase):
    """SIGHUP: the file is read again; what reloads is applied in every
    process, a bad file changes nothing, what needs a restart is said."""

    def setUp(self):
        self.n = NotifyListener()
        self.d = None

    def tearDown(self):
        if self.d:
            self.d.stop()
        self.n.close()

    def start(self, **kw):
        self.kw = kw
        self.d = Daemon(config=config(**kw), env=self.n.env(), **self.daemon_args)
        self.assertIsNotNone(self.n.wait_for("READY=1"))
        return self.d

    daemon_args = {}

    def reload(self, expect_refused=False, **kw):
        """Rewrite the file (when kw), SIGHUP, wait for RELOADING=1 then READY=1."""
        if kw:
            with open(self.d.config_path, "w") as f:
                f.write(config(**kw))
        mark = len(self.n.snapshot())
        os.kill(self.d.pid, signal.SIGHUP)
        r = self.n.wait_for("RELOADING=1", after=mark)
        self.assertIsNotNone(r, self.n.snapshot()[mark:])
        ready = self.n.wait_for("READY=1", after=r)
        self.assertIsNotNone(ready, self.d.read_log())
        text = self.n.snapshot()[ready][2]
        self.assertEqual("refused" in text, expect_refused, text)
        return text

    def client(self, password=None):
        return redis.Redis(port=self.d.port, password=password, socket_timeout=5)

    def assertAuth(self, password, ok):
        if ok:
            self.assertTrue(self.client(password).ping())
        else:
            with self.assertRaises(redis.RedisError) as cm:
                self.client(password).ping()
            self.assertIn("WRONGPASS", str(cm.exception))

    def test_rotate_the_resp_password(self):
        old, new = "pw-old-7f3a", "pw-new-91c2"
        self.start(secrets__resp=old)
        self.assertAuth(old, True)
        held = self.client(old)
        held.ping()
        self.reload(secrets__resp=[old, new])  # both, while clients move over
        self.assertAuth(old, True)
        self.assertAuth(new, True)
        self.reload(secrets__resp=new)
        self.assertAuth(old, False)
        self.assertAuth(new, True)
        self.assertTrue(held.ping())  # an open connection keeps its AUTH
        log = self.d.read_log()
        self.assertIn("reload: secrets.resp: 1 set -> 2 set", log)
        self.assertIn("reload: secrets.resp: 2 set -> 1 set", log)
        self.assertNotIn(old, log)
        self.assertNotIn(new, log)

    def test_log_level_reaches_every_process(self):
        self.start(daemon__log_level="notice")
        self.reload(daemon__log_level="info")
        log = self.d.read_log()
        for role in ("worker 1", "worker 2", "timer", "MI"):
            self.assertIn("%s info: configuration reload 1 applied" % role, log)
        self.assertEqual(self.client().config_get("loglevel")["loglevel"], "info")
        self.reload(daemon__log_level="notice")
        self.assertTrue(self.d.wait_log("configuration reload 2 from"))
        self.assertNotIn("configuration reload 2 applied", self.d.read_log())
        self.assertEqual(self.client().config_get("loglevel")["loglevel"], "notice")

    def test_bad_file_is_refused_and_nothing_changes(self):
        self.start(secrets__resp="old", listen__timeout="0")
        self.reload(expect_refused=True, secrets__resp="new", listen__timeout="soon")
        self.assertIn("reload refused, nothing changed: %s:4: expected an integer" % self.d.config_path,
                      self.d.read_log())
        self.assertAuth("old", True)
        self.assertAuth("new", False)
        os.unlink(self.d.config_path)  # a missing file: refused too
        self.reload(expect_refused=True)
        self.assertIn("cannot open", self.d.read_log())
        self.assertAuth("old", True)

    def test_settings_that_need_a_restart_are_named(self):
        self.daemon_args = {"workers": None}
        self.start(daemon__workers="2", secrets__resp="pw")
        self.reload(daemon__workers="3", secrets__resp="pw", memory__max_value_mb="16")
        log = self.d.read_log()
        self.assertIn("reload: daemon.workers: 2 -> 3 needs a restart: not applied, 2 stays", log)
        self.assertIn("reload: memory.max_value_mb: 512 -> 16 needs a restart", log)
        self.assertIn("0 setting(s) applied, 2 need a restart", log)
        self.assertEqual(len(self.d.worker_pids()), 2)
        # A collection: made in the arena at start, never by a reload.
        self.reload(daemon__workers="2", secrets__resp="pw", **{"collection extra__buckets": "64"})
        self.assertIn("reload: collection extra: (none) -> buckets 64", self.d.read_log())

    def test_timeout_reloads_and_config_set_stays_until_the_file_changes(self):
        self.start(listen__timeout="0", daemon__log_level="notice")
        c = self.client()
        c.config_set("timeout", "7")
        self.reload(listen__timeout="0", daemon__log_level="info")  # timeout unchanged in the file
        self.assertEqual(c.config_get("timeout")["timeout"], "7")
        self.reload(listen__timeout="1", daemon__log_level="info")
        self.assertEqual(c.config_get("timeout")["timeout"], "1")
        idle = socket.create_connection(("127.0.0.1", self.d.port), timeout=6)
        t0 = time.time()
        self.assertEqual(idle.recv(16), b"")  # closed by the daemon
        self.assertLess(time.time() - t0, 5)
        idle.close()

    def test_http_token_rotation_reaches_the_mi_process(self):
        hport = free_port()
        self.daemon_args = {"overrides": ("listen.http=127.0.0.1:%d" % hport,)}
        self.start(secrets__http="t-old")
        auth = lambda tok: http_request(hport, "GET", "/health", headers={"Authorization": "Bearer " + tok})[0]
        self.assertEqual(auth("t-old"), 200)
        self.reload(secrets__http="t-new", listen__http_hosts="cache.example")
        self.assertEqual(auth("t-old"), 401)
        self.assertEqual(auth("t-new"), 200)
        self.assertEqual(http_request(hport, "GET", "/health", headers={"Authorization": "Bearer t-new"},
                                      host="cache.example:%d" % hport)[0], 200)

    @unittest.skipUnless(have_netns(), "needs:root and iproute2 (network namespace)")
    def test_resp_allow_from_a_network_namespace(self):
        host, peer = "198.18.8.1", "198.18.8.2"
        ns = NetNs("s", host, peer)
        try:
            why = ns.up()
            if why:
                self.skipTest(why)
            self.daemon_args = {"host": host}
            self.start(listen__resp_allow=host + "/32")
            self.assertNotEqual(ns.redis_ping(self.d.port), "PONG")
            self.reload(listen__resp_allow=[host + "/32", peer + "/32"])
            self.assertEqual(ns.redis_ping(self.d.port), "PONG")
            self.reload(listen__resp_allow=host + "/32")
            self.assertNotEqual(ns.redis_ping(self.d.port), "PONG")
            self.assertIn("reload: listen.resp_allow: %s/32 -> %s/32, %s/32" % (host, host, peer), self.d.read_log())
        finally:
            ns.down()

    def test_embedded_default_reapplies_the_overrides(self):
        self.d = Daemon(env=self.n.env(), overrides=("secrets.resp=pw",))
        self.assertIsNotNone(self.n.wait_for("READY=1"))
        self.reload()
        self.assertTrue(self.d.wait_log("configuration reload 1 from (embedded default): 0 setting(s) applied, "
                                         "0 need a restart"), self.d.read_log())
        self.assertAuth("pw", True)
        self.assertAuth("other", False)


def unit_entries():
    """(section, key, value) of contrib/perfcached.service, in order (a key may repeat)."""
    out, section = [], None
    with open(UNIT) as f:
        for line in f:
            line = line.strip()
            if not line or line[0] in "#;":
                continue
            if line.startswith("["):
                section = line.strip("[]")
                continue
            k, _, v = line.partition("=")
            out.append((section, k.strip(), v.strip()))
    return out


def unit_value(key, section="Service"):
    vals = [v for s, k, v in unit_entries() if s == section and k == key]
    return vals


class Unit(unittest.TestCase):
    def test_systemd_analyze_verify(self):
        if not shutil.which("systemd-analyze"):
            self.skipTest("systemd-analyze is not installed")
        d = tempfile.mkdtemp(prefix="perfcached-unit-")
        try:
            # The unit names the installed binary; verify checks it exists.
            with open(UNIT) as f:
                text = f.read().replace("/usr/sbin/perfcached", BIN)
            path = os.path.join(d, "perfcached.service")
            with open(path, "w") as f:
                f.write(text)
            # and runs man(1) on each Documentation=man: page: the tree's
            # man/, laid out as an installed man directory
            for page in os.listdir(os.path.join(ROOT, "man")):
                section = os.path.join(d, "man", "man" + page.rsplit(".", 1)[1])
                os.makedirs(section, exist_ok=True)
                shutil.copy(os.path.join(ROOT, "man", page), section)
            p = subprocess.run(["systemd-analyze", "verify", path], capture_output=True, text=True, timeout=60,
                               env=dict(os.environ, MANPATH=os.path.join(d, "man")))
            self.assertEqual((p.returncode, p.stderr.strip()), (0, ""), p.stderr)
        finally:
            shutil.rmtree(d, ignore_errors=True)

    def test_what_the_unit_promises(self):
        v = lambda k: unit_value(k)
        self.assertEqual(v("Type"), ["notify"])
        self.assertEqual(unit_value("Documentation", "Unit"), ["man:perfcached(8) man:perfcached.conf(5)"])
        self.assertEqual(v("NotifyAccess"), ["main"])
        self.assertEqual(v("User"), ["perfcached"])
        self.assertEqual(v("Group"), ["perfcached"])
        self.assertEqual(v("RuntimeDirectory"), ["perfcached"])
        self.assertEqual(v("KillMode"), ["mixed"])
        self.assertEqual(v("ExecReload")[-1], "/bin/kill -HUP $MAINPID")
        self.assertIn(" -D ", v("ExecStart")[0] + " ")
        self.assertEqual(v("LimitMEMLOCK"), ["infinity"])
        # maxclients (default 10000) + 64 per worker + 64 for 64 workers.
        self.assertGreaterEqual(int(v("LimitNOFILE")[0]), 10000 + 64 * 64 + 64)
        self.assertTrue(v("WatchdogSec"))
        for k, want in (("ProtectSystem", "strict"), ("ProtectHome", "yes"), ("NoNewPrivileges", "yes"),
                        ("ProtectKernelTunables", "yes"), ("ProtectControlGroups", "yes"),
                        ("RestrictAddressFamilies", "AF_UNIX AF_INET AF_INET6"),
                        ("MemoryDenyWriteExecute", "yes"), ("LockPersonality", "yes"),
                        ("RestrictRealtime", "yes"), ("SystemCallArchitectures", "native")):
            self.assertEqual(v(k), [want], k)
        # A private /tmp; MI replies go to the RuntimeDirectory instead,
        # which group perfcached may write (sticky: not remove the daemon's).
        self.assertEqual(v("PrivateTmp"), ["yes"])
        self.assertEqual(v("RuntimeDirectoryMode"), ["1770"])
        p = subprocess.run([BIN, "-E", "-f", os.path.join(ROOT, "contrib", "perfcached.conf.example")],
                           capture_output=True, text=True, timeout=20)
        self.assertRegex(p.stdout, r"(?m)^reply_dir = /run/perfcached/$")

    def test_private_tmp_hides_nothing_perfcli_needs(self):
        """PrivateTmp=yes as systemd makes it: the daemon in its own mount
        namespace with an empty tmpfs on /tmp, its doors and reply_dir in
        a runtime directory (here under /run, as the packaged config has
        them). perfcli, in the host's namespace and without --reply-dir,
        is answered over the FIFO and the datagram socket; told to use
        /tmp/ it is not (the control: the private /tmp really hides it)."""
        if not shutil.which("unshare") or os.geteuid() != 0:
            self.skipTest("needs root and unshare(1) for a mount namespace")
        run = tempfile.mkdtemp(prefix="perfcached-privtmp-", dir="/run")
        try:
            os.chmod(run, 0o1770)
            port = free_port()
            fifo, dgram = run + "/fifo", run + "/mi.sock"
            # A tree under /tmp (a worktree) would vanish with it: it is
            # held aside and mounted back at its path over the new /tmp.
            hold = ""
            if os.path.realpath(ROOT).startswith("/tmp/"):
                hold = run + "/tree"
                os.mkdir(hold)
            script = ('set -e; if [ -n "$HOLD" ]; then mount --bind "$TREE" "$HOLD"; fi; '
                      'mount -t tmpfs -o mode=1777 private-tmp /tmp; '
                      'if [ -n "$HOLD" ]; then mkdir -p "$TREE"; mount --bind "$HOLD" "$TREE"; fi; exec "$@"')
            argv = ["unshare", "--mount", "--propagation", "private", "--", "env", "HOLD=" + hold,
                    "TREE=" + os.path.realpath(ROOT), "sh", "-c", script, "sh",
                    BIN, "-D", "-o", "listen.resp=127.0.0.1:%d" % port, "-o", "mi.fifo_name=" + fifo,
                    "-o", "mi.datagram=" + dgram, "-o", "mi.reply_dir=%s/" % run,
                    "-o", "daemon.pid_file=%s/pid" % run, "-o", "daemon.workers=1",
                    "-o", "memory.arena_mb=32", "-o", "memory.hugepages=off"]
            log = open(run + "/log", "w")
            proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
            try:
                if not wait_port(port):
                    with open(run + "/log") as f:
                        self.fail(f.read())
                # the daemon's /tmp is not ours
                self.assertNotEqual(os.stat("/proc/%d/root/tmp" % proc.pid).st_dev, os.stat("/tmp").st_dev)
                cli = os.path.join(ROOT, "bin", "perfcli")
                for door in (["--fifo", fifo], ["--datagram", dgram]):
                    p = subprocess.run([cli, *door, "mi", "uptime"], capture_output=True, text=True, timeout=20)
                    self.assertEqual(p.returncode, 0, (door, p.stderr))
                    self.assertIn("Up time", p.stdout)
                p = subprocess.run([cli, "--fifo", fifo, "--reply-dir", "/tmp/", "-t", "1", "mi", "uptime"],
                                   capture_output=True, text=True, timeout=20)
                self.assertEqual(p.returncode, 2, p.stdout)
                self.assertIn("no reply", p.stderr)
                # and none of perfcli's reply FIFOs or sockets is left behind
                self.assertEqual([f for f in os.listdir(run) if f.startswith("perfcli")], [])
            finally:
                proc.send_signal(signal.SIGTERM)
                self.assertEqual(proc.wait(timeout=30), 0)
                log.close()
        finally:
            shutil.rmtree(run, ignore_errors=True)

    def test_embedded_paths_live_in_the_runtime_directory(self):
        p = subprocess.run([BIN, "-E"], capture_output=True, text=True, timeout=20)
        self.assertEqual(p.returncode, 0, p.stderr)
        for key in ("pid_file", "fifo_name", "datagram"):
            m = re.search(r"^%s = (.*)$" % key, p.stdout, re.M)
            self.assertTrue(m and m.group(1).startswith("/run/perfcached/"), (key, m and m.group(1)))

    def test_execstart_as_systemd_runs_it(self):
        """The unit's own ExecStart= and ExecReload= lines (binary and config
        path replaced), with NOTIFY_SOCKET and a JOURNAL_STREAM that is the
        daemon's stderr, as systemd gives them."""
        port = free_port()
        work = tempfile.mkdtemp(prefix="perfcached-unit-run-")
        conf = os.path.join(work, "perfcached.conf")
        with open(conf, "w") as f:
            f.write(config(daemon__workers="1", memory__arena_mb="32", memory__hugepages="off",
                           listen__resp="127.0.0.1:%d" % port, mi__fifo_name=work + "/fifo",
                           mi__datagram=work + "/mi.sock", mi__reply_dir=work + "/", daemon__pid_file=work + "/pid"))

        def cmdline(line):
            args = shlex.split(line)
            args[0] = BIN if args[0] == "/usr/sbin/perfcached" else args[0]
            return [conf if a == "/etc/perfcached/perfcached.conf" else a for a in args]

        start = cmdline(unit_value("ExecStart")[0])
        self.assertEqual(start[:2], [BIN, "-D"])
        n = NotifyListener()
        log_path = os.path.join(work, "journal")
        log = open(log_path, "w")
        st = os.fstat(log.fileno())
        proc = subprocess.Popen(start, stdout=log, stderr=log,
                                env=n.env(JOURNAL_STREAM="%d:%d" % (st.st_dev, st.st_ino), WATCHDOG_USEC="2000000"))
        try:
            ready = n.wait_for("READY=1")
            self.assertIsNotNone(ready, proc.args)
            self.assertTrue(wait_port(port))
            self.assertTrue(n.wait_for("WATCHDOG=1", timeout=3))
            for line in unit_value("ExecReload"):
                args = [str(proc.pid) if a == "$MAINPID" else a for a in cmdline(line)]
                r = subprocess.run(args, capture_output=True, text=True, timeout=20)
                self.assertEqual(r.returncode, 0, (args, r.stdout, r.stderr))
            r = n.wait_for("RELOADING=1", after=ready)
            self.assertIsNotNone(r)
            self.assertRegex(n.snapshot()[r][2], r"MONOTONIC_USEC=\d+")
            self.assertIsNotNone(n.wait_for("READY=1", after=r))
            proc.send_signal(signal.SIGTERM)
            self.assertEqual(proc.wait(timeout=15), 0)
            self.assertIsNotNone(n.wait_for("STOPPING=1", after=r))
            # The journal dates each line; the "<N>" prefix is its priority.
            with open(log_path) as f:
                text = f.read()
            self.assertRegex(text, r"(?m)^<5>\d+ supervisor notice: perfcached ready")
            self.assertNotRegex(text, r"(?m)^\d{4}-\d\d-\d\d ")
            self.assertEqual({m[1] for m in n.snapshot()}, {proc.pid})
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=5)
            log.close()
            n.close()
            shutil.rmtree(work, ignore_errors=True)

    def test_readme_lists_exactly_the_settings_that_reload(self):
        p = subprocess.run([BIN, "-h"], capture_output=True, text=True, timeout=20)
        rows, section, key = set(), None, None
        for line in p.stdout.splitlines():
            m = re.match(r"^  \[(\w+)\]$", line)
            if m:
                section = m.group(1)
            m = re.match(r"^    (\w+) = ", line)
            if m:
                key = m.group(1)
            if line.startswith("        ") and line.endswith("(reloads on SIGHUP)"):
                rows.add("[%s] %s" % (section, key))
        self.assertGreaterEqual(len(rows), 10)
        with open(os.path.join(ROOT, "README.md")) as f:
            readme = f.read()
        part = readme.split("<!-- reloadable settings -->")[1]
        listed = set()
        for line in part.strip().splitlines():
            m = re.match(r"^\* `\[(\w+)\]` (.*)$", line)
            if not m:
                break
            listed |= {"[%s] %s" % (m.group(1), k) for k in re.findall(r"`(\w+)`", m.group(2))}
        self.assertEqual(listed, rows)


if __name__ == "__main__":
    unittest.main()
