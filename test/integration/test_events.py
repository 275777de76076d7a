# perfcached — events: event_subscribe over MI, delivery as JSON-RPC notification datagrams.
# Copyright (c) 2026 the perfcached authors.
import json
import os
import socket
import time
import unittest

import redis

from harness import Daemon, RawClient, mi_datagram_raw, wait_for_path


class Events(unittest.TestCase):
    def setUp(self):
        self.d = None
        self.sock = None

    def tearDown(self):
        if self.sock:
            self.sock.close()
        if self.d:
            self.assertEqual(self.d.stop(), 0)

    def start(self, config, overrides=()):
        self.d = Daemon(workers=1, config=config, overrides=overrides)
        self.mi_path = os.path.join(self.d.workdir, "mi.sock")
        wait_for_path(self.mi_path)
        self.listen_path = os.path.join(self.d.workdir, "events.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.listen_path)
        self.sock.settimeout(10)

    def mi(self, method, params):
        req = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
        return json.loads(mi_datagram_raw(self.mi_path, req, self.d.workdir))

    def subscribe(self, event, expire=60):
        rep = self.mi("event_subscribe", [event, "unix:" + self.listen_path, str(expire)])
        self.assertEqual(rep.get("result"), "OK", rep)

    def next_event(self, name, timeout=10):
        deadline = time.time() + timeout
        while time.time() < deadline:
            self.sock.settimeout(max(0.1, deadline - time.time()))
            try:
                ev = json.loads(self.sock.recv(65536))
            except socket.timeout:
                break
            if ev.get("method") == name:
                return ev
        self.fail("no %s event" % name)

    def test_expired_and_grown(self):
        self.start("[daemon]\nsweep_ms = 100\n[collection sess]\nbuckets = 16\nexpired_events = yes\n"
                   "[collection plain]\nbuckets = 16\n[listen]\nresp_collections = 0:sess, 1:plain\n")
        self.subscribe("E_PERF_EXPIRED")
        self.subscribe("E_PERF_GROWN")
        names = [s["event"] for s in self.mi("subscribers_list", [])["result"]["Subscribers"]]
        self.assertEqual(sorted(names), ["E_PERF_EXPIRED", "E_PERF_GROWN"])
        r0 = redis.Redis(port=self.d.port, db=0)
        r1 = redis.Redis(port=self.d.port, db=1)
        r1.set("no-events-here", "v", px=100)  # not opted in: no event
        r0.set("callid-42", "v", px=200)
        ev = self.next_event("E_PERF_EXPIRED")
        self.assertEqual(ev["params"], {"collection": "sess", "key": "callid-42"})
        self.assertEqual(ev["jsonrpc"], "2.0")
        p = r0.pipeline(transaction=False)
        for i in range(5000):
            p.set("g:%d" % i, "v")
        p.execute()
        ev = self.next_event("E_PERF_GROWN")
        self.assertEqual(ev["params"]["collection"], "sess")
        self.assertGreater(ev["params"]["buckets"], ev["params"]["prev_buckets"])

    def test_nomem_and_subscription_expiry(self):
        self.start(None, overrides=("memory.arena_mb=16",))
        self.subscribe("E_PERF_NOMEM")
        r = redis.Redis(port=self.d.port, socket_timeout=10)
        big = b"x" * 300000
        got_oom = False
        for i in range(200):
            try:
                r.set("big:%d" % i, big)
            except redis.ResponseError as e:
                self.assertIn("OOM", str(e))
                got_oom = True
                break
        self.assertTrue(got_oom)
        ev = self.next_event("E_PERF_NOMEM")
        self.assertEqual(ev["params"]["collection"], "0")
        self.assertTrue(ev["params"]["key"].startswith("big:"))
        self.assertEqual(ev["params"]["size"], 300000)
        self.subscribe("E_PERF_GROWN", expire=1)
        time.sleep(1.5)
        names = [s["event"] for s in self.mi("subscribers_list", [])["result"]["Subscribers"]]
        self.assertNotIn("E_PERF_GROWN", names)
        rep = self.mi("event_subscribe", ["E_NOPE", "unix:/tmp/x"])
        self.assertEqual(rep["error"]["message"], "unknown event")
        rep = self.mi("event_subscribe", ["E_PERF_NOMEM", "udp:1.2.3.4:5"])
        self.assertEqual(rep["error"]["code"], 400)

    def test_mem_degraded_is_one_shot(self):
        self.start(None, overrides=("memory.hugepages=auto",))
        tier = self.mi("perf_stats", [])["result"]["arena"]["tier"]
        if tier == "hugetlb":
            self.skipTest("this machine gave the arena huge pages")
        self.subscribe("E_PERF_MEM_DEGRADED")
        ev = self.next_event("E_PERF_MEM_DEGRADED")
        self.assertEqual(ev["params"]["tier"], tier)
        self.assertIn("nr_overcommit_hugepages", ev["params"]["note"])
        self.assertNotIn("Bad address", ev["params"]["note"])  # in words (proc/tier_words.h)
        self.sock.settimeout(1.0)
        with self.assertRaises(socket.timeout):
            while True:
                ev = json.loads(self.sock.recv(65536))
                if ev["method"] == "E_PERF_MEM_DEGRADED":
                    break


if __name__ == "__main__":
    unittest.main()


class RespPubSub(unittest.TestCase):
    def test_keyspace_notifications_over_resp(self):
        d = Daemon(workers=2, config="[daemon]\nsweep_ms = 100\n[collection 0]\nexpired_events = yes\n"
                                     "[collection 1]\nbuckets = 16\n")
        try:
            r = redis.Redis(port=d.port, socket_timeout=10)
            ps = r.pubsub()
            ps.subscribe("__keyevent@0__:expired")
            ps.psubscribe("__keyspace@0__:*", "__perfcached__:*")
            for _ in range(3):  # the three subscribe confirmations
                self.assertIsNotNone(ps.get_message(timeout=5))
            # Subscribed mode: only (P)SUBSCRIBE / (P)UNSUBSCRIBE / PING / QUIT (raw bytes, as Redis).
            raw = RawClient(d.port)
            self.assertEqual(raw.call("SUBSCRIBE", "a", "b"),
                             b"*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n")
            self.assertEqual(raw.read_reply(), b"*3\r\n$9\r\nsubscribe\r\n$1\r\nb\r\n:2\r\n")
            self.assertEqual(raw.call("GET", "x"),
                             b"-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / "
                             b"QUIT / RESET are allowed in this context\r\n")
            self.assertEqual(raw.call("PING"), b"*2\r\n$4\r\npong\r\n$0\r\n\r\n")
            self.assertEqual(raw.call("UNSUBSCRIBE", "a"), b"*3\r\n$11\r\nunsubscribe\r\n$1\r\na\r\n:1\r\n")
            self.assertEqual(raw.call("UNSUBSCRIBE"), b"*3\r\n$11\r\nunsubscribe\r\n$1\r\nb\r\n:0\r\n")
            self.assertEqual(raw.call("GET", "x"), b"$-1\r\n")  # back to normal mode
            raw.close()
            w = redis.Redis(port=d.port, socket_timeout=10)
            w.set("call:1", "v", px=150)
            got, order = {}, []
            deadline = time.time() + 10
            while time.time() < deadline and len(got) < 2:
                m = ps.get_message(timeout=1)
                if m and m["type"] in ("message", "pmessage") and m["channel"].startswith(b"__key"):
                    got[m["channel"]] = m["data"]
                    order.append(m["channel"])
            self.assertEqual(got.get(b"__keyevent@0__:expired"), b"call:1")
            self.assertEqual(got.get(b"__keyspace@0__:call:1"), b"expired")
            # Redis's order: the keyspace channel first (it was the other
            # way round until session 22).
            self.assertEqual(order, [b"__keyspace@0__:call:1", b"__keyevent@0__:expired"])
            # Growth events go out on __perfcached__:E_PERF_GROWN with JSON params.
            w1 = redis.Redis(port=d.port, db=1, socket_timeout=10)
            p = w1.pipeline(transaction=False)
            for i in range(3000):
                p.set("g:%d" % i, "v")
            p.execute()
            deadline = time.time() + 10
            grown = None
            while time.time() < deadline and grown is None:
                m = ps.get_message(timeout=1)
                if m and m["type"] == "pmessage" and m["channel"] == b"__perfcached__:E_PERF_GROWN":
                    grown = json.loads(m["data"])
            self.assertIsNotNone(grown)
            self.assertEqual(grown["collection"], "1")
            ps.unsubscribe()
            ps.punsubscribe()
            ps.close()
            # With nobody subscribed, no worker is registered for events.
            deadline = time.time() + 5
            while time.time() < deadline:
                subs = [s for s in self.subscribers(d) if s.startswith("unix:@")]
                if not subs:
                    break
                time.sleep(0.2)
            self.assertEqual(subs, [])
        finally:
            self.assertEqual(d.stop(), 0)

    def subscribers(self, d):
        rep = json.loads(mi_datagram_raw(os.path.join(d.workdir, "mi.sock"),
                                         b'{"jsonrpc":"2.0","id":1,"method":"subscribers_list"}', d.workdir))
        return [x["socket"] for x in rep["result"]["Subscribers"]]
