# perfcached — process-model tests: daemonize + pid file, crash-loop back-off, resp_allow in a netns.
# Copyright (c) 2026 the perfcached authors.
import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

import redis

from harness import BIN, ROOT, Daemon, NetNs, free_port, have_netns, wait_port


class Daemonize(unittest.TestCase):
    def test_background_mode_writes_pid_file_and_stops_on_sigterm(self):
        d = tempfile.mkdtemp(prefix="perfcached-bg-")
        pidf = os.path.join(d, "perfcached.pid")
        port = free_port()
        p = subprocess.run([BIN, "-o", "listen.resp=127.0.0.1:%d" % port, "-o", "daemon.pid_file=" + pidf,
                            "-o", "daemon.workers=1", "-o", "memory.arena_mb=32",
                            "-o", "memory.hugepages=off",
                            # its own MI paths: the default /run/perfcached ones may be served
                            # by another daemon on this host, and a second one is refused
                            "-o", "mi.fifo_name=%s/fifo" % d, "-o", "mi.datagram=%s/mi.sock" % d,
                            "-o", "mi.reply_dir=%s/" % d], timeout=20)
        self.assertEqual(p.returncode, 0)  # the launcher returns once it has forked
        self.assertTrue(wait_port(port))
        deadline = time.time() + 10
        while not os.path.exists(pidf) and time.time() < deadline:
            time.sleep(0.05)
        pid = int(open(pidf).read())
        self.assertTrue(os.path.exists("/proc/%d" % pid))
        self.assertTrue(redis.Redis(port=port, socket_timeout=5).ping())
        os.kill(pid, signal.SIGTERM)
        deadline = time.time() + 15
        while os.path.exists("/proc/%d" % pid) and time.time() < deadline:
            time.sleep(0.05)
        self.assertFalse(os.path.exists("/proc/%d" % pid))
        self.assertFalse(os.path.exists(pidf))
        shutil.rmtree(d, ignore_errors=True)


class CrashLoop(unittest.TestCase):
    def test_backoff_is_loud(self):
        d = Daemon(workers=1)
        try:
            for _ in range(7):
                deadline = time.time() + 5
                w = []
                while not w and time.time() < deadline:
                    w = d.worker_pids()
                    time.sleep(0.02)
                if not w:
                    break
                os.kill(w[0], signal.SIGKILL)
                time.sleep(0.15)
            deadline = time.time() + 5
            while "crash-looping" not in d.read_log() and time.time() < deadline:
                time.sleep(0.1)
            self.assertIn("crash-looping", d.read_log())
            # It still comes back (after the back-off) and serves.
            deadline = time.time() + 20
            ok = False
            while time.time() < deadline and not ok:
                try:
                    ok = redis.Redis(port=d.port, socket_timeout=2).ping()
                except redis.RedisError:
                    time.sleep(0.2)
            self.assertTrue(ok)
        finally:
            self.assertEqual(d.stop(), 0)


@unittest.skipUnless(have_netns(), "needs:root and iproute2 (network namespace)")
class AllowList(unittest.TestCase):
    """A client in a network namespace this test creates (198.18.0.0/15, the
    benchmarking range) reaches the daemon over a veth pair, off loopback."""
    HOST, PEER = "198.18.7.1", "198.18.7.2"

    @classmethod
    def setUpClass(cls):
        cls.ns = NetNs("", cls.HOST, cls.PEER)
        why = cls.ns.up()
        if why:
            cls.ns.down()
            raise unittest.SkipTest(why)

    @classmethod
    def tearDownClass(cls):
        cls.ns.down()

    def ping_from_ns(self, port):
        return self.ns.redis_ping(port)

    def test_allowed_and_refused(self):
        ok = Daemon(workers=1, host=self.HOST,
                    overrides=("listen.resp_allow=%s/32, %s/32" % (self.PEER, self.HOST),))
        try:
            self.assertEqual(self.ping_from_ns(ok.port), "PONG")
        finally:
            ok.stop()
        port = free_port()
        no = subprocess.Popen([BIN, "-D", "-o", "listen.resp=%s:%d" % (self.HOST, port),
                               "-o", "listen.resp_allow=198.18.9.0/24", "-o", "daemon.workers=1",
                               "-o", "memory.arena_mb=32", "-o", "memory.hugepages=off"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(1.0)
            self.assertNotEqual(self.ping_from_ns(port), "PONG")
        finally:
            no.send_signal(signal.SIGTERM)
            self.assertEqual(no.wait(timeout=15), 0)


    def http_from_ns(self, port, token=None):
        code = ("import http.client,sys\n"
                "c=http.client.HTTPConnection(sys.argv[1],int(sys.argv[2]),timeout=5)\n"
                "h={'Authorization':'Bearer '+sys.argv[3]} if len(sys.argv)>3 else {}\n"
                "c.request('GET','/metrics',headers=h)\n"
                "print(c.getresponse().status)\n")
        args = ["/usr/bin/python3", "-c", code, self.HOST, str(port)]
        if token:
            args.append(token)
        return self.ns.run(args, timeout=20).stdout.strip()

    def test_http_token_off_loopback(self):
        hport = free_port()
        d = Daemon(workers=1, host=self.HOST,
                   overrides=("listen.resp_allow=%s/32, %s/32" % (self.PEER, self.HOST),
                              "listen.http=%s:%d" % (self.HOST, hport), "secrets.http=s3cr3t"))
        try:
            deadline = time.time() + 10
            status = ""
            while time.time() < deadline and status not in ("200", "401"):
                status = self.http_from_ns(hport, "s3cr3t")
                time.sleep(0.1)
            self.assertEqual(status, "200")
            self.assertEqual(self.http_from_ns(hport), "401")
            self.assertEqual(self.http_from_ns(hport, "wrong"), "401")
        finally:
            self.assertEqual(d.stop(), 0)


class ExampleConfig(unittest.TestCase):
    def test_contrib_example_validates(self):
        p = subprocess.run([BIN, "-f", os.path.join(ROOT, "contrib", "perfcached.conf.example"), "-C"],
                           capture_output=True, text=True, timeout=20)
        self.assertEqual(p.returncode, 0, p.stderr)


if __name__ == "__main__":
    unittest.main()
