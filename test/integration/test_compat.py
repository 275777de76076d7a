# perfcached — differential test: the same commands to redis-server and perfcached, same bytes back.
# Copyright (c) 2026 the perfcached authors.
import os
import unittest

import redis


from harness import Daemon, RawClient, RedisServer

# Each case runs on an empty keyspace (FLUSHALL before it) on both servers;
# every reply must be byte-identical. Only deterministic commands here
# (no TIME, INFO, CLIENT ID, PTTL...).
CASES = [
    # strings
    [("SET", "k", "v"), ("GET", "k"), ("GET", "nokey"), ("STRLEN", "k"), ("STRLEN", "nokey")],
    [("SET", "k", "v", "NX"), ("SET", "k", "w", "NX"), ("SET", "k", "x", "XX"), ("SET", "z", "x", "XX"),
     ("GET", "k"), ("GET", "z")],
    [("SET", "k", "v", "GET"), ("SET", "k", "w", "GET"), ("SET", "k", "w2", "NX", "GET"),
     ("SET", "k", "w3", "XX", "GET")],
    [("SET", "k", "v", "EX", "100"), ("TTL", "k"), ("SET", "k", "v", "KEEPTTL"), ("TTL", "k"),
     ("SET", "k", "v"), ("TTL", "k")],
    [("SET", "k", "v", "EX", "0"), ("SET", "k", "v", "EX", "-5"), ("SET", "k", "v", "PX", "abc"),
     ("SET", "k", "v", "EX"), ("SET", "k", "v", "NX", "XX"), ("SET", "k", "v", "EX", "10", "PX", "10"),
     ("SET", "k", "v", "KEEPTTL", "EX", "10"), ("SET", "k", "v", "FOO"), ("SET", "k"),
     ("SET", "k", "v", "EX", "9223372036854775807")],
    [("SETNX", "a", "1"), ("SETNX", "a", "2"), ("GET", "a")],
    [("SETEX", "a", "100", "v"), ("TTL", "a"), ("SETEX", "a", "0", "v"), ("SETEX", "a", "x", "v"),
     ("PSETEX", "b", "100000", "v"), ("TTL", "b"), ("PSETEX", "b", "-1", "v")],
    [("GETSET", "a", "1"), ("GETSET", "a", "2"), ("GETDEL", "a"), ("GETDEL", "a"), ("EXISTS", "a")],
    [("SET", "a", "v"), ("GETEX", "a", "EX", "100"), ("TTL", "a"), ("GETEX", "a", "PERSIST"),
     ("TTL", "a"), ("GETEX", "nokey"), ("GETEX", "a", "EX", "0"), ("GETEX", "a", "FOO")],
    [("MSET", "a", "1", "b", "2"), ("MGET", "a", "b", "c"), ("MSET", "a"), ("MSET", "a", "1", "b"),
     ("MSETNX", "c", "3", "a", "9"), ("MGET", "a", "c"), ("MSETNX", "c", "3", "d", "4"),
     ("DEL", "x1"), ("MSETNX", "x1", "xxx", "x1", "yyy"), ("GET", "x1"),  # issue 7 defect 12
     ("MSETNX", "x1", "zzz", "x1", "www"), ("GET", "x1"),
     ("SET", "px", "v", "PX", "10000"), ("GETEX", "px", "PX", "5000"),
     ("MGET", "c", "d")],
    [("APPEND", "a", "hello"), ("APPEND", "a", " world"), ("GET", "a"), ("STRLEN", "a")],
    [("SET", "s", "Hello World"), ("GETRANGE", "s", "0", "4"), ("GETRANGE", "s", "-5", "-1"),
     ("GETRANGE", "s", "5", "2"), ("GETRANGE", "s", "0", "100"), ("GETRANGE", "s", "-100", "-50"),
     ("GETRANGE", "s", "-1", "-5"), ("GETRANGE", "nokey", "0", "1"), ("SUBSTR", "s", "1", "3"),
     ("GETRANGE", "s", "a", "1")],
    [("SETRANGE", "r", "5", "abc"), ("GET", "r"), ("SETRANGE", "r", "0", "XY"), ("GET", "r"),
     ("SETRANGE", "r", "-1", "a"), ("SETRANGE", "e", "3", ""), ("EXISTS", "e"),
     ("SETRANGE", "r", "1", ""), ("SETRANGE", "r", "x", "a")],
    # counters
    [("INCR", "n"), ("INCRBY", "n", "10"), ("DECR", "n"), ("DECRBY", "n", "5"), ("GET", "n"),
     ("INCRBY", "n", "abc"), ("SET", "s", "x"), ("INCR", "s"), ("SET", "big", "9223372036854775807"),
     ("INCR", "big"), ("SET", "small", "-9223372036854775808"), ("DECR", "small"),
     ("DECRBY", "n", "-9223372036854775808"), ("SET", "sp", " 12"), ("INCR", "sp"),
     ("SET", "lz", "012"), ("INCR", "lz"), ("SET", "pl", "+1"), ("INCR", "pl"),
     ("APPEND", "n", "0"), ("INCR", "n"), ("STRLEN", "n")],
    [("INCRBYFLOAT", "f", "1.5"), ("INCRBYFLOAT", "f", "10"), ("INCRBYFLOAT", "f", "-1.5"),
     ("INCRBYFLOAT", "f", "abc"), ("SET", "s", "x"), ("INCRBYFLOAT", "s", "1"),
     ("INCRBYFLOAT", "g", "3.0e3"), ("INCRBYFLOAT", "h", "0.1"), ("INCRBYFLOAT", "h", "0.2"),
     ("INCRBYFLOAT", "i", "5"), ("INCRBYFLOAT", "i", "-5")],
    # the Ops' error texts and edges (issue 9)
    [("INCRBYFLOAT", "y", "inf"), ("INCRBYFLOAT", "y", "-inf"), ("INCRBYFLOAT", "y", "1e5000"),
     ("EXISTS", "y"), ("GETDEL", "nokey"), ("SET", "g", "v"), ("GETDEL", "g"), ("GETDEL", "g"),
     ("GETSET", "g", "1"), ("GETSET", "g", "2"), ("INCR", "g"), ("GETSET", "g", "x"),
     ("MSET", "m1", "a", "m2"), ("MGET", "m1", "g", "nokey"), ("GETRANGE", "g", "0", "-1"),
     ("SUBSTR", "g", "-1", "-1"), ("APPEND", "new", "abc"), ("SETRANGE", "new", "5", "z"),
     ("GET", "new"), ("SETEX", "s", "9223372036854775807", "v"),
     ("PSETEX", "s", "9223372036854775807", "v"), ("GETEX", "g", "EXAT", "9223372036854775807"),
     ("GETEX", "g", "PX", "9223372036854775807"), ("EXPIREAT", "g", "-9223372036854775808"),
     ("RENAME", "nokey", "x"), ("RENAMENX", "nokey", "x"), ("DECRBY", "cnt", "5"), ("DECR", "cnt")],
    # keys
    [("SET", "a", "1"), ("SET", "b", "2"), ("DEL", "a", "b", "c"), ("UNLINK", "a"), ("EXISTS", "a", "a"),
     ("SET", "x", "1"), ("EXISTS", "x", "x", "y"), ("TYPE", "x"), ("TYPE", "nokey"), ("TOUCH", "x", "y")],
    [("SET", "k", "v"), ("EXPIRE", "k", "100"), ("TTL", "k"), ("EXPIRE", "k", "50", "NX"),
     ("EXPIRE", "k", "50", "XX"), ("TTL", "k"), ("EXPIRE", "k", "10", "GT"), ("EXPIRE", "k", "200", "GT"),
     ("TTL", "k"), ("EXPIRE", "k", "300", "LT"), ("EXPIRE", "k", "100", "LT"), ("TTL", "k"),
     ("PERSIST", "k"), ("PERSIST", "k"), ("TTL", "k"), ("EXPIRE", "k", "10", "GT"),
     ("EXPIRE", "k", "10", "LT"), ("TTL", "k"), ("EXPIRE", "nokey", "10"), ("TTL", "nokey"),
     ("PTTL", "nokey"), ("EXPIRETIME", "nokey"), ("PERSIST", "nokey")],
    [("SET", "k", "v"), ("EXPIRE", "k", "10", "NX", "XX"), ("EXPIRE", "k", "10", "GT", "LT"),
     ("EXPIRE", "k", "10", "FOO"), ("EXPIRE", "k", "abc"), ("EXPIRE", "k", "9223372036854775807"),
     ("PEXPIRE", "k", "9223372036854775807"), ("EXPIRETIME", "k"), ("PEXPIRETIME", "k"),
     ("EXPIRE", "k", "-1"), ("EXISTS", "k")],
    [("SET", "k", "v"), ("EXPIREAT", "k", "4102444800"), ("EXPIRETIME", "k"),
     ("PEXPIREAT", "k", "4102444800123"), ("PEXPIRETIME", "k"), ("EXPIRETIME", "k"),
     ("EXPIREAT", "k", "1"), ("EXISTS", "k")],
    [("SET", "a", "1"), ("RENAME", "a", "b"), ("GET", "b"), ("EXISTS", "a"), ("RENAME", "a", "c"),
     ("SET", "c", "3"), ("RENAMENX", "b", "c"), ("RENAMENX", "b", "d"), ("GET", "d"),
     ("RENAME", "d", "d"), ("RENAMENX", "d", "d"), ("SET", "t", "v", "EX", "100"),
     ("RENAME", "t", "u"), ("TTL", "u")],
    [("SET", "a", "1"), ("COPY", "a", "b"), ("COPY", "a", "b"), ("COPY", "a", "b", "REPLACE"),
     ("GET", "b"), ("COPY", "nokey", "x"), ("COPY", "a", "c", "DB", "1"), ("COPY", "a", "c", "DB", "99"),
     ("COPY", "a", "c", "FOO")],
    [("MSET", "user:1", "a", "user:2", "b", "sess:1", "c"), ("KEYS", "sess:*"), ("KEYS", "nomatch*"),
     ("KEYS", "sess:1"), ("KEYS", "user:[1]"), ("DBSIZE",), ("FLUSHDB",), ("DBSIZE",),
     ("FLUSHDB", "ASYNC"), ("FLUSHDB", "FOO")],
    [("SCAN", "abc"), ("SCAN", "0", "COUNT", "0"), ("SCAN", "0", "COUNT"), ("SCAN", "0", "FOO", "1"),
     ("SCAN", "0", "COUNT", "x")],
    [("RANDOMKEY",), ("SET", "only", "1"), ("RANDOMKEY",)],
    # connection / server
    [("PING",), ("PING", "hello"), ("PING", "a", "b"), ("ECHO", "x"), ("ECHO",)],
    [("SELECT", "1"), ("SET", "a", "db1"), ("SELECT", "0"), ("GET", "a"), ("SELECT", "1"),
     ("GET", "a"), ("SELECT", "16"), ("SELECT", "-1"), ("SELECT", "abc"), ("SELECT", "0")],
    [("AUTH", "x"), ("AUTH", "a", "b"), ("AUTH", "default", "any"), ("HELLO", "abc"),
     ("CLIENT", "GETNAME"),
     ("CLIENT", "SETNAME", "my name"), ("CLIENT", "SETNAME", "n1"), ("CLIENT", "GETNAME"),
     ("CLIENT", "FOO"), ("CONFIG", "FOO"), ("COMMAND", "FOO"), ("CLIENT", "SETNAME"),
     ("CONFIG", "GET"), ("CLIENT", "GETNAME", "x")],
    [("CONFIG", "SET", "nosuch", "1"), ("CONFIG", "SET", "timeout", "abc"), ("CONFIG", "SET", "timeout", "0"),
     ("CONFIG", "GET", "timeout")],
    # pub/sub: subscribed mode and its replies
    [("UNSUBSCRIBE",), ("PUNSUBSCRIBE",), ("SUBSCRIBE", "a"), ("GET", "x"), ("PING",), ("PING", "hi"),
     ("PSUBSCRIBE", "p*"), ("SET", "k", "v"), ("UNSUBSCRIBE", "a"), ("PUNSUBSCRIBE", "p*"), ("GET", "x"),
     ("SUBSCRIBE",)],
    # unknown commands and arity
    [("NOSUCHCMD",), ("nosuchcmd", "a", "b" * 200), ("GET",), ("GET", "a", "b"), ("SETNX", "a"),
     ("GETRANGE", "a", "1"), ("INCR",), ("DEL",), ("TTL",), ("KEYS",), ("DBSIZE", "x"),
     ("RENAME", "a")],
    # wrong types are covered once aggregates exist; binary safety:
    [("SET", "bin\x00key", "val\r\nue\x00"), ("GET", "bin\x00key"), ("STRLEN", "bin\x00key"),
     ("APPEND", "bin\x00key", "\xff"), ("GET", "bin\x00key")],
]


class Compat(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.redis = RedisServer()
        cls.perf = Daemon(workers=1)

    @classmethod
    def tearDownClass(cls):
        cls.redis.stop()
        cls.assert_stop = cls.perf.stop()

    def run_case(self, cmds):
        r, p = RawClient(self.redis.port), RawClient(self.perf.port)
        try:
            r.call("FLUSHALL")
            p.call("FLUSHALL")
            for cmd in cmds:
                want = r.call(*cmd)
                got = p.call(*cmd)
                self.assertEqual(want, got, "command %r" % (cmd,))
        finally:
            r.close()
            p.close()

    def test_cases(self):
        for i, case in enumerate(CASES):
            with self.subTest(case=i, first=case[0]):
                self.run_case(case)

    def test_inline_and_pipelined(self):
        payload = (b"PING\r\nSET  a  'x y'\r\nGET a\r\n\r\nECHO \"q\\x41\\n\"\r\n"
                   + b"*2\r\n$4\r\nECHO\r\n$3\r\nabc\r\n*0\r\n*-1\r\nGET a\r\n")
        replies = []
        for port in (self.redis.port, self.perf.port):
            c = RawClient(port)
            c.call("FLUSHALL")
            c.send_raw(payload)
            replies.append([c.read_reply() for _ in range(6)])
            c.close()
        self.assertEqual(replies[0], replies[1])

    def test_pipeline_of_replies_over_the_output_pause(self):
        """30 GETs of 100 KB in one pipeline: 3 MB of replies, past the
        1 MiB at which the door pauses a client. Each reply batch is sent
        at once, and the commands still buffered must then run without
        more input (regression: they waited for input that never came)."""
        for port in (self.redis.port, self.perf.port):
            c = redis.Redis(port=port, socket_timeout=10)
            c.flushall()
            value = os.urandom(100000)
            for i in range(30):
                c.set("big:%d" % i, value)
            p = c.pipeline(transaction=False)
            for _ in range(3):
                for i in range(30):
                    p.get("big:%d" % i)
            got = p.execute()
            self.assertEqual(len(got), 90)
            self.assertTrue(all(g == value for g in got), port)
            c.close()

    def test_protocol_errors_close_like_redis(self):
        bad = [b"*abc\r\n", b"*2\r\n$3\r\nGET\r\n:1\r\n", b"*1\r\n$-5\r\n",
               b"*1\r\n$99999999999\r\n", b"*3000000\r\n", b"SET a \"unbalanced\r\n",
               b"*1\r\n$abc\r\n", b"x" * 70000]
        for data in bad:
            with self.subTest(data=data[:30]):
                out = []
                for port in (self.redis.port, self.perf.port):
                    c = RawClient(port)
                    c.send_raw(data)
                    c.sock.settimeout(2.0)
                    try:
                        reply = c.read_reply()
                    except ConnectionError:
                        reply = b"<closed>"
                    except OSError:
                        reply = b"<no reply>"
                    out.append((reply, c.closed(timeout=1.0)))
                    c.close()
                self.assertEqual(out[0], out[1])

    def info_fields(self, port, section):
        c = RawClient(port)
        try:
            raw = c.call("INFO", section) if section else c.call("INFO")
        finally:
            c.close()
        self.assertTrue(raw.startswith(b"$"), raw[:40])
        body = raw.split(b"\r\n", 1)[1].decode()
        out, cur = {}, None
        for line in body.split("\r\n"):
            if line.startswith("# "):
                cur = line[2:]
            elif ":" in line and cur == "Replication":
                k, v = line.split(":", 1)
                out[k] = v
        return out

    def test_info_replication_and_role_like_redis(self):
        # rtpengine refuses a Redis whose INFO has no role:master; clients
        # read these fields by name, so names, order and the fixed values
        # of a standalone master must match redis-server's.
        import re
        for section in ("replication", None, "all", "everything"):
            with self.subTest(section=section):
                want = self.info_fields(self.redis.port, section)
                got = self.info_fields(self.perf.port, section)
                self.assertEqual(list(want), list(got))
                for k in want:
                    if k != "master_replid":
                        self.assertEqual(want[k], got[k], k)
                self.assertRegex(got["master_replid"], re.compile(r"^[0-9a-f]{40}$"))
                self.assertEqual(got["role"], "master")
        # one id per start, the same from every worker; a new start, a new id
        other = Daemon(workers=2)
        try:
            ids = {self.info_fields(other.port, "replication")["master_replid"] for _ in range(8)}
        finally:
            other.stop()
        self.assertEqual(len(ids), 1, ids)
        self.assertNotEqual(ids.pop(), self.info_fields(self.perf.port, "replication")["master_replid"])
        r, p = RawClient(self.redis.port), RawClient(self.perf.port)
        try:
            self.assertEqual(r.call("ROLE"), p.call("ROLE"))
            self.assertEqual(p.call("ROLE"), b"*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n")
            self.assertEqual(r.call("ROLE", "x"), p.call("ROLE", "x"))
        finally:
            r.close()
            p.close()


if __name__ == "__main__":
    unittest.main()
