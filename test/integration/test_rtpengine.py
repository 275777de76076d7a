# perfcached — Debian's rtpengine (userspace) keeps its calls in perfcached and restores them.
# Copyright (c) 2026 the perfcached authors.
"""rtpengine (rtpengine-daemon, --table=-1: no kernel module) runs in the
foreground on loopback with --redis/--redis-write pointing at the backend.
The test speaks rtpengine's ng control protocol itself (cookie + bencoded
dictionary over UDP): offer and answer of a call with real SDP, checks that
the call's JSON lands in the backend with an expiry, restarts rtpengine and
checks it restored the call from the backend, then deletes the call and
checks the keys go. Each class runs against perfcached; the ...AgainstRedis
twin runs the same steps against Debian's redis-server, so the test is
proven right by the real thing."""
import json
import os
import random
import shutil
import signal
import socket
import tempfile
import time
import unittest

from harness import free_port
from telco import Backend, Proc, bdecode, bencode, need_binary

DB = 3  # not 0: rtpengine must SELECT the database named in --redis

OFFER_SDP = (
    "v=0\r\n"
    "o=alice 2890844526 2890844526 IN IP4 127.0.0.1\r\n"
    "s=-\r\n"
    "c=IN IP4 127.0.0.1\r\n"
    "t=0 0\r\n"
    "m=audio 49170 RTP/AVP 0 8 101\r\n"
    "a=rtpmap:0 PCMU/8000\r\n"
    "a=rtpmap:8 PCMA/8000\r\n"
    "a=rtpmap:101 telephone-event/8000\r\n"
    "a=fmtp:101 0-16\r\n"
    "a=ptime:20\r\n"
    "a=sendrecv\r\n")

ANSWER_SDP = (
    "v=0\r\n"
    "o=bob 2808844564 2808844564 IN IP4 127.0.0.1\r\n"
    "s=-\r\n"
    "c=IN IP4 127.0.0.1\r\n"
    "t=0 0\r\n"
    "m=audio 49180 RTP/AVP 0 101\r\n"
    "a=rtpmap:0 PCMU/8000\r\n"
    "a=rtpmap:101 telephone-event/8000\r\n"
    "a=fmtp:101 0-16\r\n"
    "a=ptime:20\r\n"
    "a=sendrecv\r\n")


class RtpengineAgainstPerfcached(unittest.TestCase):
    backend_kind = "perfcached"

    @classmethod
    def setUpClass(cls):
        cls.binary = need_binary("rtpengine")
        cls.backend = Backend(cls.backend_kind)
        cls.workdir = tempfile.mkdtemp(prefix="perfcached-rtpengine-")
        cls.rtp = None

    @classmethod
    def tearDownClass(cls):
        if cls.rtp is not None:
            cls.rtp.stop()
        cls.backend.stop()
        shutil.rmtree(cls.workdir, ignore_errors=True)

    # --- rtpengine -----------------------------------------------------------

    def start_rtpengine(self):
        cls = type(self)
        self.ng_port = free_port_udp()
        base = media_port_base()
        redis = "127.0.0.1:%d/%d" % (self.backend.port, DB)
        args = [self.binary, "--config-file=none", "--foreground", "--log-stderr",
                "--no-log-timestamps", "--log-level=6", "--table=-1",
                "--interface=127.0.0.1", "--listen-ng=127.0.0.1:%d" % self.ng_port,
                "--redis=" + redis, "--redis-write=" + redis, "--redis-expires=3600",
                "--port-min=%d" % base, "--port-max=%d" % (base + 199),
                "--num-threads=2", "--delete-delay=0",
                "--pidfile=" + os.path.join(self.workdir, "rtpengine.pid")]
        cls.starts = getattr(cls, "starts", 0) + 1  # one log per start: no stale lines
        log = os.path.join(self.workdir, "rtpengine-%d.log" % cls.starts)
        cls.rtp = Proc(args, log, self.workdir)
        if not cls.rtp.wait_log("Startup complete", timeout=15):
            self.fail("rtpengine did not start:\n" + cls.rtp.read_log()[-3000:])
        # calls are restored after "Startup complete"; wait for the end of it
        if not cls.rtp.wait_log("Redis restore time", timeout=15):
            self.fail("rtpengine did not restore from Redis:\n" + cls.rtp.read_log()[-3000:])
        # rtpengine reads role: from INFO replication; no role:master there
        # and it refuses to start (or starts as a read-only slave).
        self.assertIn("Connected to Redis 127.0.0.1:%d in master mode" % self.backend.port,
                      cls.rtp.read_log())
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                if self.ng({"command": "ping"}, timeout=0.5).get("result") == b"pong":
                    return
            except OSError:  # socket.timeout included
                time.sleep(0.05)
        self.fail("rtpengine does not answer ng ping:\n" + cls.rtp.read_log()[-3000:])

    def stop_rtpengine(self, sig=signal.SIGTERM):
        cls = type(self)
        cls.rtp.stop(sig)
        cls.rtp = None

    def mark(self, what):
        print("  %.2f s %s" % (time.time() - self.t0, what))

    def ng(self, msg, timeout=5.0):
        cookie = "%d_%d" % (os.getpid(), random.randrange(1 << 30))
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.settimeout(timeout)
            s.sendto(cookie.encode() + b" " + bencode(msg), ("127.0.0.1", self.ng_port))
            data = s.recv(65536)
        head, _, body = data.partition(b" ")
        self.assertEqual(head, cookie.encode())
        return bdecode(body)

    def ok(self, msg):
        reply = self.ng(msg)
        self.assertEqual(reply.get("result"), b"ok", "%s -> %r" % (msg.get("command"), reply))
        return reply

    # --- backend -------------------------------------------------------------

    def keys(self):
        return sorted(self.backend.call("KEYS", "*", db=DB))

    def wait_keys(self, want_empty, timeout=10.0):
        deadline = time.time() + timeout
        keys = self.keys()
        while time.time() < deadline and (not keys) != want_empty:
            time.sleep(0.05)
            keys = self.keys()
        return keys

    # --- the call ------------------------------------------------------------

    def test_call_stored_restored_deleted(self):
        t0 = self.t0 = time.time()
        self.start_rtpengine()
        self.mark("started")
        self.assertEqual(self.keys(), [])
        call_id = "a84b4c76e66710@pc33.atlanta.example.com-%d" % random.randrange(1 << 30)
        offer = self.ok({"command": "offer", "call-id": call_id, "from-tag": "1928301774",
                         "sdp": OFFER_SDP, "replace": ["origin", "session-connection"],
                         "ICE": "remove"})
        sdp = offer["sdp"].decode()
        self.assertIn("c=IN IP4 127.0.0.1", sdp)
        self.assertRegex(sdp, r"m=audio \d+ RTP/AVP 0 8 101")
        self.assertNotIn("49170", sdp)  # rtpengine's own port, not the caller's
        answer = self.ok({"command": "answer", "call-id": call_id, "from-tag": "1928301774",
                          "to-tag": "a6c85cf", "sdp": ANSWER_SDP,
                          "replace": ["origin", "session-connection"]})
        self.assertRegex(answer["sdp"].decode(), r"m=audio \d+ RTP/AVP 0 101")

        # The call's state is in the backend (database DB) as a JSON string
        # under the call-id, with the expiry from --redis-expires.
        keys = self.wait_keys(want_empty=False)
        self.assertIn(call_id.encode(), keys, keys)
        raw = self.backend.call("GET", call_id, db=DB)
        self.assertIsInstance(raw, bytes)
        doc = json.loads(raw)
        self.assertEqual(doc["json"]["redis_hosted_db"], str(DB))
        self.assertEqual(doc["json"]["num_tags"], "2")
        self.assertEqual({doc["tag-0"]["tag"], doc["tag-1"]["tag"]}, {"1928301774", "a6c85cf"})
        self.assertEqual({doc["map-0"]["endpoint"], doc["map-1"]["endpoint"]},
                         {"127.0.0.1:49170", "127.0.0.1:49180"})
        ttl = self.backend.call("TTL", call_id, db=DB)
        self.assertTrue(0 < ttl <= 3600, ttl)
        self.assertEqual(self.backend.call("TYPE", call_id, db=DB), b"string")

        # A new rtpengine restores the call from the backend: it knows both
        # tags and answers a query for it.
        self.mark("stored")
        self.stop_rtpengine(signal.SIGKILL)  # a crash: nothing cleaned up
        self.mark("killed")
        self.assertIn(call_id.encode(), self.keys())
        self.start_rtpengine()
        self.mark("restarted")
        q = self.ok({"command": "query", "call-id": call_id})
        self.assertIn("1928301774", q["tags"])
        self.assertIn("a6c85cf", q["tags"])
        self.assertIn(call_id.encode(), self.keys())

        # delete removes the call and its keys
        self.ok({"command": "delete", "call-id": call_id, "from-tag": "1928301774"})
        keys = self.wait_keys(want_empty=True)
        self.assertEqual(keys, [])
        self.assertEqual(self.ng({"command": "query", "call-id": call_id}).get("result"), b"error")
        self.mark("deleted")
        self.stop_rtpengine()
        self.mark("stopped")
        print("\n%s: offer/answer/restart/query/delete in %.2f s"
              % (type(self).__name__, time.time() - t0))


class RtpengineAgainstRedis(RtpengineAgainstPerfcached):
    backend_kind = "redis"


def media_port_base():
    """200 media ports below the ephemeral range, where free_port() picks the
    ng, SIP and RESP ports of this and any concurrent test run."""
    lo = 32768
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            lo = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        pass
    return random.randrange(10000, max(10200, lo - 200), 200)


def free_port_udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


if __name__ == "__main__":
    unittest.main()
