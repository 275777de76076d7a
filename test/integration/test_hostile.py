# perfcached — the hostile-client suite: every door tried as an attacker would (issue 8).
# Copyright (c) 2026 the perfcached authors.
"""One test per attack. Each asserts that the attacker is refused or closed,
that the workers' memory (VmRSS from /proc) stays bounded, and that another
client is served throughout. Every server is stopped by PID; every wait is
bounded; everything talks to loopback only."""
import json
import os
import socket
import stat
import subprocess
import threading
import time
import unittest
import urllib.error
import urllib.request

from harness import (BIN, Daemon, RawClient, encode, free_port, http_request, mi_datagram_raw, mi_fifo_raw,
                     wait_for_path, wait_tcp)

RSS_BOUND_KB = 256 * 1024  # a worker above 256 MiB RSS has been made to hold an attacker's input
if "asan" in BIN:  # check-asan: the sanitizer's shadow memory and quarantine come on top
    RSS_BOUND_KB *= 2


def rss_kb(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class Hostile(unittest.TestCase):
    """Base: one daemon per test, a bystander client that must be served."""

    workers = 1
    overrides = ()
    config = None

    def setUp(self):
        self.d = Daemon(workers=self.workers, overrides=self.overrides, config=self.config)
        self.clients = []

    def tearDown(self):
        for c in self.clients:
            try:
                c.close()
            except OSError:
                pass
        self.assertEqual(self.d.stop(), 0)

    def client(self, auth=None):
        c = RawClient(self.d.port)
        self.clients.append(c)
        if auth:
            self.assertEqual(c.call("AUTH", auth), b"+OK\r\n")
        return c

    def served(self, auth=None):
        """A fresh, well-behaved client gets its reply."""
        c = RawClient(self.d.port, timeout=5)
        try:
            if auth:
                self.assertEqual(c.call("AUTH", auth), b"+OK\r\n")
            self.assertEqual(c.call("PING"), b"+PONG\r\n")
        finally:
            c.close()

    def bounded(self):
        for p in self.d.worker_pids():
            self.assertLess(rss_kb(p), RSS_BOUND_KB, "worker %d RSS" % p)

    def mi(self, method, params=None):
        req = {"jsonrpc": "2.0", "id": 1, "method": method}
        if params is not None:
            req["params"] = params
        path = os.path.join(self.d.workdir, "mi.sock")
        wait_for_path(path)
        return json.loads(mi_datagram_raw(path, json.dumps(req).encode(), self.d.workdir))


# ---- 1. the workers' event sockets --------------------------------------------------------

class EventSockets(Hostile):
    config = ("[daemon]\nsweep_ms = 100\n[collection sess]\nbuckets = 16\nexpired_events = yes\n"
              "[listen]\nresp_collections = 0:sess\n")

    def abstract_names(self):
        # Any abstract name of this daemon: the worker event sockets of old
        # ("@perfcached.PID.RANK") and the door claims of issue 12's first
        # version ("@perfcached:tcp:127.0.0.1:PORT", "@perfcached:path:...")
        # -- the namespace has no permissions. Other daemons on the host are
        # not this test's business: only names with our pid, port or paths.
        marks = (str(self.d.pid), str(self.d.port), self.d.workdir)
        with open("/proc/net/unix") as f:
            names = [line.split()[-1] for line in f if "@perfcached" in line]
        return [n for n in names if any(m in n for m in marks)]

    def forge(self, payload):
        """Send a datagram to every abstract name a worker used to bind."""
        sent = 0
        for rank in range(1, 4):
            name = b"\0perfcached.%d.%d" % (self.d.pid, rank)
            s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            try:
                s.sendto(payload, name)
                sent += 1
            except OSError:
                pass
            finally:
                s.close()
        return sent

    def test_no_abstract_socket_and_no_crash(self):
        sub = self.client()
        sub.call("SUBSCRIBE", "__keyevent@0__:expired")
        before = self.d.worker_pids()
        self.assertEqual(self.abstract_names(), [], "abstract socket names: reachable and bindable by anyone")
        bad = json.dumps({"jsonrpc": "2.0", "method": "E_PERF_EXPIRED",
                          "params": {"collection": 0, "key": [1]}}).encode()
        for _ in range(3):
            self.forge(bad)
            self.forge(b"\xff" * 100)
        time.sleep(0.5)
        self.assertEqual(self.d.worker_pids(), before, "a worker died on a forged datagram")
        self.served()

    def test_forged_expired_not_delivered_real_one_is(self):
        sub = self.client()
        sub.call("SUBSCRIBE", "__keyevent@0__:expired")
        forged = json.dumps({"jsonrpc": "2.0", "method": "E_PERF_EXPIRED",
                             "params": {"collection": "sess", "key": "forged"}}).encode()
        self.forge(forged)
        c = self.client()
        self.assertEqual(c.call("SET", "real", "v", "PX", "50"), b"+OK\r\n")
        msg = sub.read_reply()  # the first message must be the real expiry
        self.assertIn(b"real", msg)
        self.assertNotIn(b"forged", msg)
        self.served()


# ---- 2. limits before AUTH, query buffer and bulk limits after ----------------------------

class AuthLimits(Hostile):
    overrides = ("secrets.resp=pw",)

    def test_unauthenticated_bulk(self):
        c = self.client()
        c.send_raw(b"*2\r\n$3\r\nSET\r\n$300000000\r\n" + b"x" * 65536)
        self.assertEqual(c.read_reply(), b"-ERR Protocol error: unauthenticated bulk length\r\n")
        self.assertTrue(c.closed())
        self.bounded()
        self.served("pw")

    def test_unauthenticated_multibulk(self):
        c = self.client()
        c.send_raw(b"*2000000000\r\n" + b"$0\r\n\r\n" * 1000)
        self.assertEqual(c.read_reply(), b"-ERR Protocol error: unauthenticated multibulk length\r\n")
        self.assertTrue(c.closed())
        self.served("pw")

    def test_small_commands_before_auth_still_answered(self):
        c = self.client()
        self.assertTrue(c.call("GET", "k").startswith(b"-NOAUTH"))
        self.assertEqual(c.call("AUTH", "pw"), b"+OK\r\n")
        big = b"v" * 100000
        self.assertEqual(c.call("SET", "k", big), b"+OK\r\n")
        self.assertEqual(c.call("STRLEN", "k"), b":100000\r\n")

    def test_argument_table_counts_against_query_buffer_limit(self):
        c = self.client("pw")
        self.assertEqual(c.call("CONFIG", "SET", "client-query-buffer-limit", "1mb"), b"+OK\r\n")
        self.assertEqual(c.call("CONFIG", "GET", "client-query-buffer-limit"),
                         encode("client-query-buffer-limit", "1048576"))
        time.sleep(0.3)  # workers apply live settings on their next tick
        # 600 KB of input, but 150,000 arguments: the table is what costs.
        try:
            c.send_raw(b"*300000\r\n" + b"$0\r\n\r\n" * 150000)
        except OSError:
            pass
        self.assertTrue(c.closed())
        self.served("pw")

    def test_proto_max_bulk_len(self):
        c = self.client("pw")
        self.assertEqual(c.call("CONFIG", "SET", "proto-max-bulk-len", "1mb"), b"+OK\r\n")
        self.assertEqual(c.call("CONFIG", "GET", "proto-max-bulk-len"),
                         encode("proto-max-bulk-len", "1048576"))
        time.sleep(0.3)
        c.send_raw(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2000000\r\n")
        self.assertEqual(c.read_reply(), b"-ERR Protocol error: invalid bulk length\r\n")
        self.assertTrue(c.closed())
        self.served("pw")


class LimitsFromConfig(Hostile):
    config = "[listen]\nproto_max_bulk_len = 1mb\nclient_query_buffer_limit = 2mb\n"

    def test_config_rows(self):
        c = self.client()
        self.assertEqual(c.call("CONFIG", "GET", "proto-max-bulk-len"),
                         encode("proto-max-bulk-len", "1048576"))
        self.assertEqual(c.call("CONFIG", "GET", "client-query-buffer-limit"),
                         encode("client-query-buffer-limit", "2097152"))
        c.send_raw(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1048577\r\n")
        self.assertEqual(c.read_reply(), b"-ERR Protocol error: invalid bulk length\r\n")


# ---- 3. HTTP sent to the RESP port ----------------------------------------------------------

class CrossProtocol(Hostile):
    def attack(self, data):
        c = self.client()
        c.send_raw(data)
        self.assertTrue(c.closed())
        self.assertNotIn(b"+OK", c.buf)

    def test_post_is_refused(self):
        body = b"SET pwned byweb\r\n"
        self.attack(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\n"
                    b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        self.assertEqual(self.client().call("EXISTS", "pwned"), b":0\r\n")
        self.assertIn("Possible SECURITY ATTACK detected", self.d.read_log())
        self.served()

    def test_host_header_is_refused(self):
        self.attack(b"Host: 127.0.0.1\r\nSET pwned2 byweb\r\n")
        self.assertEqual(self.client().call("EXISTS", "pwned2"), b":0\r\n")
        self.served()

    def test_curl_data_binary(self):
        r = subprocess.run(["curl", "-s", "-m", "5", "--data-binary", "SET pwned3 byweb\r\n",
                            "http://127.0.0.1:%d/" % self.d.port], capture_output=True, timeout=20)
        self.assertNotIn(b"+OK", r.stdout)
        self.assertEqual(self.client().call("EXISTS", "pwned3"), b":0\r\n")
        self.served()


# ---- 4. the HTTP door: token on loopback too, JSON only, Host checked, secrets masked --------

TOKEN = "tok-3f9a1c77"
PASSWORD = "pw-81d2e0aa"


class HttpDoor(Hostile):
    def setUp(self):
        self.http_port = free_port()
        self.overrides = ("listen.http=127.0.0.1:%d" % self.http_port,
                          "secrets.http=" + TOKEN, "secrets.resp=" + PASSWORD)
        super().setUp()
        wait_tcp(self.http_port)

    def http(self, method, path, body=None, headers=None, host=None):
        return http_request(self.http_port, method, path, body, headers, host)[:2]

    def mi_body(self, method, params=None):
        req = {"jsonrpc": "2.0", "id": 1, "method": method}
        if params is not None:
            req["params"] = params
        return json.dumps(req).encode()

    def auth(self, extra=None):
        h = {"Authorization": "Bearer " + TOKEN}
        h.update(extra or {})
        return h

    def test_token_required_on_loopback(self):
        self.assertEqual(self.http("GET", "/metrics")[0], 401)
        self.assertEqual(self.http("GET", "/metrics", headers={"Authorization": "Bearer nope"})[0], 401)
        self.assertEqual(self.http("GET", "/metrics", headers=self.auth())[0], 200)
        self.assertEqual(self.http("POST", "/mi", self.mi_body("perf_set", ["k1", "v"]),
                                   {"Content-Type": "application/json"})[0], 401)
        self.served(PASSWORD)

    def test_post_mi_needs_json(self):
        for ct in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data"):
            st, _ = self.http("POST", "/mi", self.mi_body("perf_set", ["xsite", "v"]),
                              self.auth({"Content-Type": ct}))
            self.assertEqual(st, 415, ct)
        st, _ = self.http("POST", "/mi", self.mi_body("perf_set", ["xsite", "v"]), self.auth())
        self.assertEqual(st, 415)  # no Content-Type at all
        self.assertEqual(self.client(PASSWORD).call("EXISTS", "xsite"), b":0\r\n")
        st, _ = self.http("POST", "/mi", self.mi_body("perf_set", ["ok", "v"]),
                          self.auth({"Content-Type": "application/json; charset=utf-8"}))
        self.assertEqual(st, 200)
        self.assertEqual(self.client(PASSWORD).call("EXISTS", "ok"), b":1\r\n")

    def test_host_checked_against_listener(self):
        for bad in ("evil.example:%d" % self.http_port, "evil.example", "127.0.0.1:1"):
            self.assertEqual(self.http("GET", "/metrics", headers=self.auth(), host=bad)[0], 421, bad)
        for good in ("127.0.0.1:%d" % self.http_port, "localhost:%d" % self.http_port):
            self.assertEqual(self.http("GET", "/metrics", headers=self.auth(), host=good)[0], 200, good)

    def test_secrets_masked_everywhere(self):
        st, body = self.http("POST", "/mi", self.mi_body("arg"), self.auth({"Content-Type": "application/json"}))
        self.assertEqual(st, 200)
        self.assertNotIn(TOKEN.encode(), body)
        self.assertNotIn(PASSWORD.encode(), body)
        self.assertIn(b"secrets.http=********", body)
        for pid in [self.d.pid] + [int(x) for x in os.listdir("/proc") if x.isdigit() and
                                   self._parent(int(x)) == self.d.pid]:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                cmd = f.read()
            self.assertNotIn(TOKEN.encode(), cmd, pid)
            self.assertNotIn(PASSWORD.encode(), cmd, pid)
        self.assertNotIn(TOKEN, self.d.read_log())
        self.assertNotIn(PASSWORD, self.d.read_log())
        p = subprocess.run([BIN, "-E", "-o", "secrets.resp=" + PASSWORD], capture_output=True, text=True,
                           timeout=10)
        self.assertNotIn(PASSWORD, p.stdout)
        p = subprocess.run([BIN, "-C", "-o", "secrets.resp=#" + PASSWORD], capture_output=True, text=True,
                           timeout=10)
        self.assertEqual(p.returncode, 1)
        self.assertNotIn(PASSWORD, p.stderr)

    def _parent(self, pid):
        try:
            with open("/proc/%d/stat" % pid) as f:
                return int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return -1


class HttpNoToken(unittest.TestCase):
    def test_loopback_without_token_still_checks_host_and_type(self):
        port = free_port()
        d = Daemon(workers=1, overrides=("listen.http=127.0.0.1:%d" % port,))
        try:
            import http.client
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            c.request("POST", "/mi", body=b'{"jsonrpc":"2.0","id":1,"method":"kill"}',
                      headers={"Content-Type": "text/plain"})
            self.assertEqual(c.getresponse().status, 415)
            c.close()
            self.assertEqual(RawClient(d.port).call("PING"), b"+PONG\r\n")
        finally:
            self.assertEqual(d.stop(), 0)


# ---- 5. client-output-buffer-limit, checked while a reply is built -------------------------

class OutputLimits(Hostile):
    overrides = ("memory.arena_mb=128",)

    def fill(self, n=20, size=1 << 20):
        c = self.client()
        for i in range(n):
            self.assertEqual(c.call("SET", "big%d" % i, b"x" * size), b"+OK\r\n")
        return ["big%d" % i for i in range(n)]

    def never_reads(self, keys):
        s = socket.create_connection(("127.0.0.1", self.d.port), timeout=10)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.sendall(encode("MGET", *keys))
        return s

    def closed_soon(self, s, timeout=10):
        """The server closed s: reading everything it sent ends in EOF/RST."""
        s.settimeout(timeout)
        try:
            while s.recv(1 << 20):
                pass
            return True
        except ConnectionResetError:
            return True
        except socket.timeout:
            return False
        finally:
            s.close()

    def stat(self, name):
        info = self.client().call("INFO", "stats").decode()
        for line in info.split("\r\n"):
            if line.startswith(name + ":"):
                return int(line.split(":")[1])
        return None

    def test_default_limit_bounds_a_huge_mget(self):
        keys = self.fill()
        s = self.never_reads(keys * 20)  # a 400 MiB reply
        time.sleep(2)
        self.bounded()
        self.served()
        self.assertTrue(self.closed_soon(s))
        self.assertEqual(self.stat("client_output_buffer_limit_disconnections"), 1)

    def test_config_set_hard_limit(self):
        c = self.client()
        self.assertEqual(c.call("CONFIG", "SET", "client-output-buffer-limit", "normal 4mb 0 0"),
                         b"+OK\r\n")
        self.assertEqual(c.call("CONFIG", "GET", "client-output-buffer-limit"),
                         encode("client-output-buffer-limit", "normal 4194304 0 0 pubsub 33554432 8388608 60"))
        time.sleep(0.3)
        keys = self.fill(8)
        two = []
        for _ in range(2):
            two.append(self.never_reads(keys * 4))  # 32 MiB each
        time.sleep(1)
        for p in self.d.worker_pids():
            self.assertLess(rss_kb(p), 96 * 1024)
        for s in two:
            self.assertTrue(self.closed_soon(s))
        self.assertEqual(self.stat("client_output_buffer_limit_disconnections"), 2)
        st = self.mi("get_statistics", [["resp:"]])["result"]
        self.assertEqual(st.get("resp:output_limit_disconnections"), 2, st)
        # A reply under the limit is still served whole.
        self.assertEqual(len(self.client().call("MGET", *keys[:3])), 3 * ((1 << 20) + 12) + 4)
        self.served()

    def test_keys_reply_counts_while_collected(self):
        c = self.client()
        self.assertEqual(c.call("CONFIG", "SET", "client-output-buffer-limit", "normal 1mb 0 0"),
                         b"+OK\r\n")
        time.sleep(0.3)
        for i in range(0, 40000, 2000):
            c.send_raw(b"".join(encode("SET", "k" * 40 + str(j), "v") for j in range(i, i + 2000)))
            for _ in range(2000):
                c.read_reply()
        k = self.client()
        k.send_raw(encode("KEYS", "*"))  # about 2.3 MB of reply
        self.assertTrue(k.closed())
        self.assertEqual(self.stat("client_output_buffer_limit_disconnections"), 1)
        self.served()

    def test_soft_limit_with_seconds(self):
        c = self.client()
        self.assertEqual(c.call("CONFIG", "SET", "client-output-buffer-limit", "normal 0 2mb 1"),
                         b"+OK\r\n")
        time.sleep(0.3)
        keys = self.fill(8)
        s = self.never_reads(keys)  # 8 MiB, above the soft limit, never drained
        time.sleep(2.5)
        self.assertTrue(self.closed_soon(s, timeout=5))
        self.assertEqual(self.stat("client_output_buffer_limit_disconnections"), 1)
        self.served()


class OutputLimitsConfig(unittest.TestCase):
    def test_bad_values_refused(self):
        for bad in ("normal 1mb", "bogus 1 2 3", "normal x 0 0"):
            p = subprocess.run([BIN, "-C", "-o", "listen.client_output_buffer_limit=" + bad],
                               capture_output=True, text=True, timeout=10)
            self.assertEqual(p.returncode, 1, bad)
            self.assertIn("client_output_buffer_limit", p.stderr)


# ---- 6. maxclients: exact across workers ----------------------------------------------------

class MaxClients(unittest.TestCase):
    def count(self, workers, maxclients, attempts):
        d = Daemon(workers=workers, overrides=("listen.maxclients=%d" % maxclients,))
        socks = []
        try:
            ok = refused = 0
            for _ in range(attempts):
                s = socket.create_connection(("127.0.0.1", d.port), timeout=5)
                socks.append(s)
                s.sendall(b"PING\r\n")
                data = b""
                while not data.endswith(b"\r\n"):
                    chunk = s.recv(256)
                    if not chunk:
                        break
                    data += chunk
                if data.startswith(b"+PONG"):
                    ok += 1
                elif data.startswith(b"-ERR max number of clients reached"):
                    refused += 1
            return ok, refused
        finally:
            for s in socks:
                s.close()
            self.assertEqual(d.stop(), 0)

    def test_one_worker_100(self):
        self.assertEqual(self.count(1, 100, 110), (100, 10))

    def test_two_workers_exact(self):
        self.assertEqual(self.count(2, 60, 80), (60, 20))

    def test_closed_connections_are_given_back(self):
        d = Daemon(workers=2, overrides=("listen.maxclients=10",))
        try:
            for _ in range(3):
                cs = [RawClient(d.port) for _ in range(10)]
                self.assertEqual([c.call("PING") for c in cs], [b"+PONG\r\n"] * 10)
                extra = RawClient(d.port)
                extra.send_raw(b"PING\r\n")
                self.assertTrue(extra.read_reply().startswith(b"-ERR max number of clients"))
                extra.close()
                for c in cs:
                    c.close()
                time.sleep(0.3)
        finally:
            self.assertEqual(d.stop(), 0)


# ---- 7. the MI FIFO after a truncated request -------------------------------------------------

class MiFifo(Hostile):
    def reply_fifo(self, name):
        path = os.path.join(self.d.workdir, name)
        os.mkfifo(path, 0o600)
        return path, os.open(path, os.O_RDONLY | os.O_NONBLOCK)

    def read_reply(self, fd, timeout):
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
                break
            else:
                time.sleep(0.01)
        return data

    def two_requests(self, first, second_name="second"):
        wait_for_path(self.d.fifo)
        p1, fd1 = self.reply_fifo("first")
        p2, fd2 = self.reply_fifo(second_name)
        try:
            with open(self.d.fifo, "wb", buffering=0) as f:
                f.write(first)
            time.sleep(0.1)
            with open(self.d.fifo, "wb", buffering=0) as f:
                f.write(b":" + second_name.encode() +
                        b':{"jsonrpc":"2.0","id":"2","method":"version"}')
            r2 = self.read_reply(fd2, 5)
            r1 = self.read_reply(fd1, 5)
            return r1, r2
        finally:
            os.close(fd1)
            os.close(fd2)
            os.unlink(p1)
            os.unlink(p2)

    def test_truncated_request_then_next(self):
        r1, r2 = self.two_requests(b':first:{"jsonrpc": "2.0", "id": "1", "method": ')
        self.assertIn(b'"id":"2"', r2)
        self.assertIn(b"-32700", r1)

    def test_truncated_inside_string_then_next(self):
        r1, r2 = self.two_requests(b':first:{"jsonrpc": "2.0", "id": "1", "method": "ver')
        self.assertIn(b'"id":"2"', r2)
        self.assertIn(b"-32700", r1)

    def test_held_request_times_out(self):
        wait_for_path(self.d.fifo)
        p1, fd1 = self.reply_fifo("first")
        try:
            with open(self.d.fifo, "wb", buffering=0) as f:
                f.write(b':first:{"jsonrpc": "2.0", "id": "1"')
            self.assertIn(b"-32700", self.read_reply(fd1, 6))
        finally:
            os.close(fd1)
            os.unlink(p1)
        rep = mi_fifo_raw(self.d.fifo, self.d.workdir, b'{"jsonrpc":"2.0","id":"3","method":"version"}')
        self.assertIn(b'"id":"3"', rep)

    def test_oversize_tail_with_colons(self):
        wait_for_path(self.d.fifo)
        # Dropped at 4096 bytes; its tail ': 1}}' looks like the start of a frame.
        big = (b':x:{"jsonrpc":"2.0","id":"9","method":"perf_set","params":{"key":"k","value":"'
               + b"a" * 5000 + b'","n": 1}}')
        with open(self.d.fifo, "wb", buffering=0) as f:
            f.write(big)
        time.sleep(0.2)
        rep = mi_fifo_raw(self.d.fifo, self.d.workdir, b'{"jsonrpc":"2.0","id":"4","method":"version"}')
        self.assertIn(b'"id":"4"', rep)
        self.served()


# ---- 8. config holes, MI expiry overflow -------------------------------------------------

class ConfigHoles(unittest.TestCase):
    def check(self, conf=None, overrides=()):
        args = [BIN, "-C"]
        tmp = None
        if conf is not None:
            import tempfile
            fd, tmp = tempfile.mkstemp(prefix="perfcached-hostile-", suffix=".conf")
            with os.fdopen(fd, "w") as f:
                f.write(conf)
            args += ["-f", tmp]
        for o in overrides:
            args += ["-o", o]
        try:
            p = subprocess.run(args, capture_output=True, text=True, timeout=20)
            return p.returncode, p.stderr.replace(tmp or "\0", "CONF")
        finally:
            if tmp:
                os.unlink(tmp)

    def test_post_load_errors_name_file_and_line(self):
        cases = [("[daemon]\nworkers = 1\n[memory]\nhugepages = on\n", "CONF:4:"),
                 ("[daemon]\nlog_level = loud\n", "CONF:2:"),
                 ("[listen]\n\nresp = nowhere\n", "CONF:3:"),
                 ("[listen]\nresp_collections = 0:nosuch\n", "CONF:2:"),
                 ("[memory]\narena_mb = 64\narena_cap_mb = 32\n", "CONF:3:")]
        for conf, where in cases:
            rc, err = self.check(conf)
            self.assertEqual(rc, 1, conf)
            self.assertIn(where, err, conf)

    def test_fifo_mode(self):
        for bad in ("0999", "7777", "4600", "0666", "600x", ""):
            rc, err = self.check(overrides=("mi.fifo_mode=" + bad,))
            self.assertEqual(rc, 1, bad)
            self.assertIn("fifo_mode", err)
        self.assertEqual(self.check(overrides=("mi.fifo_mode=0640",))[0], 0)

    def test_resp_allow_refused_by_check(self):
        for bad in ("10.0.0.0/33", "bogus", "::1/129", "10.0.0.0/"):
            rc, err = self.check("[listen]\nresp = 0.0.0.0:6379\nresp_allow = " + bad + "\n")
            self.assertEqual(rc, 1, bad)
            self.assertIn("CONF:3:", err)

    def test_overlong_numeric_fifo_user(self):
        rc, err = self.check(overrides=("mi.fifo_user=99999999999999999999999",))
        self.assertEqual(rc, 1)
        self.assertIn("fifo_user", err)


class ReplyDirWithoutSlash(unittest.TestCase):
    def test_reply_lands_in_the_directory(self):
        d = Daemon(workers=1)
        d.stop()
        # Start again with reply_dir lacking its trailing slash.
        d2 = Daemon(workers=1, overrides=("mi.reply_dir=" + d.workdir,))
        try:
            wait_for_path(d2.fifo)
            rep = mi_fifo_raw(d2.fifo, d.workdir, b'{"jsonrpc":"2.0","id":"7","method":"version"}')
            self.assertIn(b'"id":"7"', rep)
        finally:
            self.assertEqual(d2.stop(), 0)


class MiExpiryOverflow(Hostile):
    def test_ttl_and_expire_overflow_refused(self):
        rep = self.mi("perf_set", ["k", "v", "9223372036854775"])
        self.assertIn("error", rep)
        self.assertEqual(self.client().call("EXISTS", "k"), b":0\r\n")
        rep = self.mi("perf_ttl", ["*", "9223372036854775"])
        self.assertIn("error", rep)
        sock = os.path.join(self.d.workdir, "ev.sock")
        rep = self.mi("event_subscribe", ["E_PERF_GROWN", "unix:" + sock, "9223372036854775807"])
        self.assertIn("error", rep)
        self.assertEqual(self.mi("subscribers_list")["result"]["Subscribers"], [])
        self.assertEqual(self.mi("perf_set", ["k2", "v", "60"]).get("result"), "OK")
        self.served()


# ---- attacks that already held before issue 8, kept under the same three checks ----------

class AlreadyHeld(Hostile):
    overrides = ("secrets.resp=" + PASSWORD, "memory.arena_mb=64")

    def test_resp_parser_errors(self):
        cases = [(b"*1\r\n$-5\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
                 (b"*abc\r\n", b"-ERR Protocol error: invalid multibulk length\r\n"),
                 (b"*1\r\nx\r\n", b"-ERR Protocol error: expected '$', got 'x'\r\n"),
                 (b'GET "unbalanced\r\n', b"-ERR Protocol error: unbalanced quotes in request\r\n"),
                 (b"x" * 70000, b"-ERR Protocol error: too big inline request\r\n")]
        for data, want in cases:
            c = self.client()
            c.send_raw(data)
            self.assertEqual(c.read_reply(), want)
            self.assertTrue(c.closed())
        self.bounded()
        self.served(PASSWORD)

    def test_wrong_passwords(self):
        c = self.client()
        for i in range(200):
            self.assertTrue(c.call("AUTH", "guess%d" % i).startswith(b"-WRONGPASS"))
        self.assertTrue(c.call("SET", "k", "v").startswith(b"-NOAUTH"))
        self.served(PASSWORD)

    def test_keys_glob_does_not_stall_others(self):
        c = self.client(PASSWORD)
        for i in range(0, 20000, 1000):
            c.send_raw(b"".join(encode("SET", "a" * 40 + str(j), "v") for j in range(i, i + 1000)))
            for _ in range(1000):
                c.read_reply()
        slow = self.client(PASSWORD)
        slow.send_raw(encode("KEYS", "*a*a*a*a*a*a*a*a*a*a*a*a*b"))
        t = time.time()
        self.served(PASSWORD)
        self.assertLess(time.time() - t, 5)
        self.assertEqual(slow.read_reply(), b"*0\r\n")
        self.bounded()

    def test_client_that_never_reads(self):
        c = self.client(PASSWORD)
        self.assertEqual(c.call("SET", "big", b"x" * (1 << 20)), b"+OK\r\n")
        s = socket.create_connection(("127.0.0.1", self.d.port), timeout=10)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.sendall(encode("AUTH", PASSWORD) + encode("GET", "big") * 200)  # 200 MiB of replies
        time.sleep(1.5)
        self.bounded()
        self.served(PASSWORD)
        s.close()

    def test_many_idle_connections(self):
        socks = [socket.create_connection(("127.0.0.1", self.d.port), timeout=10) for _ in range(2000)]
        try:
            self.served(PASSWORD)
            self.bounded()
        finally:
            for s in socks:
                s.close()

    def test_full_arena(self):
        c = self.client(PASSWORD)
        oom = False
        for i in range(200):
            r = c.call("SET", "fill%d" % i, b"x" * (1 << 20))
            if r.startswith(b"-OOM"):
                oom = True
                break
        self.assertTrue(oom, "a 64 MiB arena took 200 MiB")
        self.assertEqual(c.call("STRLEN", "fill0"), b":1048576\r\n")
        self.assertEqual(c.call("DEL", "fill0"), b":1\r\n")
        self.bounded()
        self.served(PASSWORD)

    def test_worker_killed_under_load(self):
        stop = threading.Event()
        errors = []

        def load():
            while not stop.is_set():
                try:
                    w = RawClient(self.d.port, timeout=5)
                    w.call("AUTH", PASSWORD)
                    for i in range(500):
                        if stop.is_set():
                            break
                        w.call("SET", "load%d" % i, "v")
                    w.close()
                except (OSError, ConnectionError) as e:
                    errors.append(e)
                    time.sleep(0.05)

        t = threading.Thread(target=load)
        t.start()
        try:
            time.sleep(0.5)
            before = self.d.worker_pids()
            os.kill(before[0], 9)
            deadline = time.time() + 10
            while time.time() < deadline and (not self.d.worker_pids() or
                                               self.d.worker_pids() == before):
                time.sleep(0.1)
            self.assertNotEqual(self.d.worker_pids(), before)
            time.sleep(0.5)
            self.served(PASSWORD)
        finally:
            stop.set()
            t.join(timeout=20)
        self.bounded()


class KilledWorkerGivesBackItsClients(unittest.TestCase):
    def test_maxclients_after_kill(self):
        d = Daemon(workers=1, overrides=("listen.maxclients=10",))
        try:
            held = [RawClient(d.port) for _ in range(10)]
            self.assertEqual([c.call("PING") for c in held], [b"+PONG\r\n"] * 10)
            before = d.worker_pids()
            os.kill(before[0], 9)
            deadline = time.time() + 10
            while time.time() < deadline and (not d.worker_pids() or d.worker_pids() == before):
                time.sleep(0.1)
            time.sleep(0.3)
            for c in held:
                c.close()
            again = [RawClient(d.port) for _ in range(10)]
            self.assertEqual([c.call("PING") for c in again], [b"+PONG\r\n"] * 10)
            for c in again:
                c.close()
        finally:
            self.assertEqual(d.stop(), 0)


class SlowHttpClients(Hostile):
    def setUp(self):
        self.http_port = free_port()
        self.overrides = ("listen.http=127.0.0.1:%d" % self.http_port,)
        super().setUp()

    def test_slowloris_does_not_block_the_door(self):
        wait_tcp(self.http_port)
        slow = []
        for _ in range(50):
            s = socket.create_connection(("127.0.0.1", self.http_port), timeout=5)
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-a: ")
            slow.append(s)
        try:
            import http.client
            t = time.time()
            c = http.client.HTTPConnection("127.0.0.1", self.http_port, timeout=5)
            c.request("GET", "/metrics")
            self.assertEqual(c.getresponse().status, 200)
            c.close()
            self.assertLess(time.time() - t, 3)
            self.served()
        finally:
            for s in slow:
                s.close()


try:
    import test_process  # not "from ... import": the loader would run AllowList twice

    class RespAllowFromNamespace(test_process.AllowList):
        """resp_allow from a network namespace the test creates (refused peer closed, others served)."""
        test_http_token_off_loopback = None
        test_allowed_and_refused = None

        def test_refused_peer_and_bystander(self):
            d = Daemon(workers=1, host=self.HOST, overrides=("listen.resp_allow=%s/32" % self.HOST,))
            try:
                self.assertNotEqual(self.ping_from_ns(d.port), "PONG")  # the peer is refused
                r = subprocess.run(["redis-cli", "-h", self.HOST, "-p", str(d.port), "PING"],
                                   capture_output=True, text=True, timeout=15)
                self.assertEqual(r.stdout.strip(), "PONG")  # an allowed client is served
                for p in d.worker_pids():
                    self.assertLess(rss_kb(p), RSS_BOUND_KB)
            finally:
                self.assertEqual(d.stop(), 0)
except ImportError:  # pragma: no cover
    pass


if __name__ == "__main__":
    unittest.main()
