# perfcached — MI over the FIFO, as opensips-cli drives it (mi_fifo framing).
# Copyright (c) 2026 the perfcached authors.
import json
import os
import shutil
import subprocess
import tempfile
import time
import unittest

import redis

from harness import ROOT, Daemon, mi_datagram_raw, mi_fifo_raw, wait_for_path

PERFCLI = os.path.join(ROOT, "bin", "perfcli")


class MiFifo(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon(workers=1)
        wait_for_path(cls.d.fifo)

    @classmethod
    def tearDownClass(cls):
        rc = cls.d.stop()
        assert rc == 0, rc
        assert not os.path.exists(cls.d.fifo), "FIFO left behind"

    def raw(self, payload, reply=True, timeout=5.0):
        return mi_fifo_raw(self.d.fifo, self.d.workdir, payload, reply, timeout)

    def call(self, method, params=None):
        req = {"jsonrpc": "2.0", "id": "266", "method": method, "params": params if params is not None else {}}
        line = self.raw(json.dumps(req).encode())
        self.assertNotIn(b"\n", line)  # one compact line: what opensips-cli's readline() needs
        return json.loads(line)

    def test_perf_maxmemory_shows_and_sets(self):
        cur = self.call("perf_maxmemory")["result"]
        self.assertEqual((cur["maxmemory"], cur["policy"], cur["samples"]), (0, "noeviction", 5))
        new = self.call("perf_maxmemory", {"maxmemory": "512mb", "policy": "volatile-ttl"})["result"]
        self.assertEqual((new["maxmemory"], new["policy"]), (512 << 20, "volatile-ttl"))
        self.assertEqual(self.call("perf_maxmemory")["result"]["policy"], "volatile-ttl")
        self.assertEqual(self.call("perf_maxmemory", {"policy": "allkeys-lfu"})["result"]["policy"], "allkeys-lfu")
        err = self.call("perf_maxmemory", {"policy": "lru"})["error"]
        self.assertIn("Bad policy (noeviction, allkeys-lru", err["data"])
        err = self.call("perf_maxmemory", {"maxmemory": "lots"})["error"]
        self.assertIn("Bad maxmemory", err["data"])
        self.assertEqual(self.call("perf_maxmemory", {"maxmemory": "0", "policy": "noeviction"})["result"]["maxmemory"], 0)
        # samples: set through MI, seen by CONFIG GET on the RESP door (one setting)
        rep = self.call("perf_maxmemory", {"maxmemory": "64mb", "policy": "allkeys-lru", "samples": 7})["result"]
        self.assertEqual((rep["maxmemory"], rep["policy"], rep["samples"]), (64 << 20, "allkeys-lru", 7))
        r = redis.Redis(port=self.d.port, socket_timeout=10)
        self.assertEqual(r.config_get("maxmemory*"), {"maxmemory": str(64 << 20), "maxmemory-policy": "allkeys-lru",
                                                      "maxmemory-samples": "7", "maxmemory-clients": "0",
                                                      "maxmemory-eviction-tenacity": "10"})
        self.assertTrue(r.config_set("maxmemory-samples", 3))
        self.assertEqual(self.call("perf_maxmemory")["result"]["samples"], 3)
        for bad in (0, -1, "many"):
            err = self.call("perf_maxmemory", {"samples": bad})["error"]
            self.assertIn("Bad samples", err["data"])
        self.assertEqual(self.call("perf_maxmemory", {"samples": 5})["result"]["samples"], 5)
        r.close()
        self.call("perf_maxmemory", {"maxmemory": "0", "policy": "noeviction"})

    def test_which_lists_bare_and_qualified(self):
        names = self.call("which")["result"]
        for n in ("perf_keys", "perfcached:perf_keys", "uptime", "core:uptime", "perf_stats",
                  "get_statistics", "core:get_statistics", "statistics:get", "mem:shm_dump"):
            self.assertIn(n, names)
        self.assertIn(["glob", "collection", "limit"], self.call("which", {"command": "perf_keys"})["result"])

    def test_perf_get_and_dump_show_types(self):
        # Regression: perf_get / perf_dump returned a hash's or set's internal
        # encoding (a trie's root offset) and a counter's 8 raw bytes.
        r = redis.Redis(port=self.d.port, socket_timeout=5)
        r.hset("ty:h", mapping={"a": "1", "b": "2"})
        r.hset("ty:big", mapping={"f%d" % i: "v%d" % i for i in range(600)})  # a trie
        r.sadd("ty:s", "x", "y")
        r.sadd("ty:i", 1, 2, 3)  # an intset
        r.set("ty:n", 41)
        r.incr("ty:n")
        got = self.call("perf_get", {"key": "ty:h"})["result"]
        self.assertEqual((got["type"], got["value"], got["size"]), ("hash", {"a": "1", "b": "2"}, 2))
        got = self.call("perf_get", ["ty:big"])["result"]
        self.assertEqual((got["type"], got["size"], got["value"]["f599"]), ("hash", 600, "v599"))
        got = self.call("perf_get", ["ty:s"])["result"]
        self.assertEqual((got["type"], sorted(got["value"]), got["size"]), ("set", ["x", "y"], 2))
        got = self.call("perf_get", ["ty:i"])["result"]
        self.assertEqual(sorted(got["value"]), ["1", "2", "3"])
        got = self.call("perf_get", ["ty:n"])["result"]
        self.assertEqual((got["type"], got["value"]), ("string", "42"))
        dump = {k["key"]: k for k in self.call("perf_dump", ["ty:*"])["result"]["keys"]}
        self.assertEqual(dump["ty:h"]["value"], {"a": "1", "b": "2"})
        self.assertEqual(len(dump["ty:big"]["value"]), 600)
        self.assertEqual(sorted(dump["ty:s"]["value"]), ["x", "y"])
        self.assertEqual((dump["ty:n"]["type"], dump["ty:n"]["value"]), ("string", "42"))
        self.assertEqual(self.call("perf_probe", ["ty:s"])["result"]["type"], "set")
        self.assertEqual(self.call("perf_del", ["ty:*"])["result"]["deleted"], 5)

    def test_perf_commands_over_fifo(self):
        r = redis.Redis(port=self.d.port, socket_timeout=5)
        r.set("sess-a", "A", ex=100)
        r.set("sess-b", "B")
        self.assertEqual(self.call("perf_set", ["k1", "v1", "60"])["result"], "OK")
        self.assertEqual(r.get("k1"), b"v1")
        got = self.call("perf_get", {"key": "k1"})["result"]
        self.assertEqual((got["value"], got["size"]), ("v1", 2))
        self.assertTrue(0 < got["ttl"] <= 60)
        keys = self.call("perf_keys", ["sess-*"])["result"]
        self.assertEqual(sorted(k["key"] for k in keys["keys"]), ["sess-a", "sess-b"])
        keys = self.call("perf_keys", ["sess-*", "0", "1"])["result"]
        self.assertEqual(keys["returned"], 1)
        self.assertIn("note", keys)
        self.assertEqual(self.call("perf_ttl", ["sess-*", "0"])["result"]["updated"], 1)
        self.assertEqual(r.ttl("sess-a"), -1)
        self.assertEqual(self.call("perf_del", ["sess-*"])["result"]["deleted"], 2)
        self.assertIsNone(r.get("sess-a"))
        err = self.call("perf_get", {"key": "nope"})["error"]
        self.assertEqual((err["code"], err["message"]), (404, "key not found"))
        err = self.call("perf_get", {"key": "k1", "collection": "nosuch"})["error"]
        self.assertEqual((err["code"], err["message"]), (404, "no such collection"))
        stats = self.call("perfcached:perf_stats", ["0"])["result"]
        self.assertEqual(stats["collections"][0]["name"], "0")
        self.assertIn("tier", stats["arena"])
        self.assertGreaterEqual(len(self.call("ps")["result"]["Processes"]), 4)
        self.assertIn("Up time", self.call("core:uptime")["result"])

    def test_malformed_requests_get_answers_and_daemon_keeps_serving(self):
        self.assertEqual(json.loads(self.raw(b"{not json"))["error"]["code"], -32700)
        self.assertEqual(self.call("nosuch")["error"]["code"], -32601)
        err = self.call("perf_set", ["only-key"])["error"]
        self.assertEqual((err["code"], err["data"]), (-32602, "Too few or too many parameters"))
        err = self.call("perf_keys", {"pattern": "x"})["error"]
        self.assertEqual(err["data"], "Named parameters do not match")
        line = self.raw(b'{"jsonrpc":"1.0","id":1,"method":"which"}')
        self.assertEqual(json.loads(line)["error"]["code"], -32600)
        # A forbidden reply name: no reply, request dropped, and the next one works.
        with open(self.d.fifo, "wb", buffering=0) as f:
            f.write(b':../../etc/x:{"jsonrpc":"2.0","id":1,"method":"which"}')
        # A client that never opens its reply FIFO: the daemon gives up and carries on.
        with open(self.d.fifo, "wb", buffering=0) as f:
            f.write(b':nobody_reads_this:{"jsonrpc":"2.0","id":1,"method":"which"}')
        # An oversize request (> 4096 bytes) is dropped.
        with open(self.d.fifo, "wb", buffering=0) as f:
            f.write(b':big:{"jsonrpc":"2.0","id":1,"method":"perf_set","params":["k","' + b"x" * 9000 + b'"]}')
        self.assertIn("perf_keys", self.call("which")["result"])
        self.assertIn("which: the MI kept serving", "which: the MI kept serving")
        self.assertIn("forbidden reply name", self.d.read_log())


class FifoOwner(unittest.TestCase):
    @unittest.skipUnless(os.geteuid() == 0, "needs:root (chown)")
    def test_fifo_user_and_group(self):
        d = Daemon(workers=1, overrides=("mi.fifo_user=nobody", "mi.fifo_group=0", "mi.fifo_mode=0640"))
        try:
            wait_for_path(d.fifo)
            time.sleep(0.1)
            st = os.stat(d.fifo)
            self.assertEqual((st.st_uid, st.st_gid), (65534, 0))
            self.assertEqual(st.st_mode & 0o777, 0o640)
        finally:
            self.assertEqual(d.stop(), 0)


class MiDatagram(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon(workers=1)
        cls.sock_path = os.path.join(cls.d.workdir, "mi.sock")
        wait_for_path(cls.sock_path)

    @classmethod
    def tearDownClass(cls):
        assert cls.d.stop() == 0

    def dgram(self, payload):
        return mi_datagram_raw(self.sock_path, payload, self.d.workdir)

    def call(self, method, params=None):
        req = {"jsonrpc": "2.0", "id": 7, "method": method}
        if params is not None:
            req["params"] = params
        return json.loads(self.dgram(json.dumps(req).encode()))

    def test_commands_and_errors(self):
        self.assertIn("perf_get", self.call("which")["result"])
        self.assertEqual(self.call("perf_set", {"key": "dg", "value": "gram"})["result"], "OK")
        self.assertEqual(self.call("perf_get", ["dg"])["result"]["value"], "gram")
        self.assertEqual(json.loads(self.dgram(b"{oops"))["error"]["code"], -32700)
        self.assertEqual(self.call("nosuch")["error"]["code"], -32601)
        err = self.call("perf_keys", ["a", "b", "c", "d"])["error"]
        self.assertEqual(err["data"], "Too few or too many parameters")
        self.assertIn("Up time", self.call("uptime")["result"])

    def test_statistics(self):
        r = redis.Redis(port=self.d.port, socket_timeout=5)
        for i in range(50):
            r.set("st:%d" % i, "v")
            r.get("st:%d" % i)
        r.get("st:missing")
        allstats = self.call("get_statistics", [["all"]])["result"]
        self.assertGreaterEqual(allstats["perfcached:entries"], 50)
        self.assertGreaterEqual(allstats["perfcached:hits"], 50)
        self.assertGreaterEqual(allstats["resp:commands"], 101)
        self.assertIn("arena:used_bytes", allstats)
        group = self.call("get_statistics", {"statistics": ["perfcached_0:"]})["result"]
        self.assertTrue(all(k.startswith("perfcached_0:") for k in group))
        one = self.call("get_statistics", [["misses"]])["result"]
        self.assertEqual(list(one), ["perfcached:misses"])
        err = self.call("get_statistics", [["no_such_stat"]])["error"]
        self.assertEqual((err["code"], err["message"]), (404, "Statistics Not Found"))
        err = self.call("get_statistics", ["hits"])["error"]  # must be an array
        self.assertEqual(err["data"], "Bad type for parameter 'statistics'")
        kinds = self.call("list_statistics")["result"]
        self.assertEqual(kinds["perfcached:hits"], "incremental")
        self.assertEqual(kinds["perfcached:entries"], "non-incremental")
        self.assertEqual(self.call("reset_statistics", [["hits"]])["result"], "OK")
        after = self.call("get_statistics", [["perfcached:hits", "perfcached:entries"]])["result"]
        self.assertLess(after["perfcached:hits"], 5)
        self.assertGreaterEqual(after["perfcached:entries"], 50)  # a gauge is never reset
        self.assertEqual(self.call("reset_all_statistics")["result"], "OK")

    def test_scan_dump_probe_shm(self):
        r = redis.Redis(port=self.d.port, socket_timeout=5)
        for i in range(300):
            r.set("sc:%d" % i, "v%d" % i)
        seen, cursor, steps = set(), 0, 0
        while True:
            res = self.call("perf_scan", [cursor, "sc:*", "7"])["result"]
            seen.update(k["key"] for k in res["keys"])
            cursor = res["cursor"]
            steps += 1
            if cursor == 0 or steps > 10000:
                break
        self.assertEqual(len(seen), 300)
        dump = self.call("perf_dump", ["sc:1?", "0", "100"])["result"]
        self.assertEqual({k["key"]: k["value"] for k in dump["keys"]}["sc:12"], "v12")
        probe = self.call("perf_probe", ["sc:5"])["result"]
        self.assertEqual(probe, {"key": "sc:5", "type": "string", "size": 2, "ttl": -1})
        shm = self.call("mem_shm_dump")["result"]
        self.assertIn("slab_classes", shm)
        self.assertGreater(shm["used_bytes"], 0)
        self.assertIn("-D", self.call("arg")["result"])
        err = self.call("perf_create", ["newcoll"])["error"]
        self.assertEqual(err["code"], 400)


class PerfCli(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon(workers=1)
        wait_for_path(cls.d.fifo)

    @classmethod
    def tearDownClass(cls):
        assert cls.d.stop() == 0

    def cli(self, *args, via_fifo=True):
        where = ["--fifo", self.d.fifo, "--reply-dir", self.d.workdir] if via_fifo else \
            ["--datagram", os.path.join(self.d.workdir, "mi.sock")]
        return subprocess.run([PERFCLI, *where, *args], capture_output=True, text=True, timeout=20)

    def test_cli(self):
        p = self.cli("mi", "perf_set", "key=cli", "value=x", "ttl=60")
        self.assertEqual((p.returncode, p.stdout.strip()), (0, "OK"))
        p = self.cli("mi", "perf_get", "cli")
        self.assertEqual(p.returncode, 0)
        self.assertEqual(json.loads(p.stdout)["value"], "x")
        p = self.cli("-r", "mi", "perf_keys", "cl*", "0", "10", via_fifo=False)
        self.assertEqual(p.returncode, 0)
        self.assertEqual(p.stdout.count("\n"), 1)  # raw: one line
        p = self.cli("mi", "get_statistics", "perfcached:entries")
        self.assertEqual(json.loads(p.stdout)["perfcached:entries"], 1)
        p = self.cli("mi", "perf_get", "nope")
        self.assertEqual(p.returncode, 1)
        self.assertIn("key not found", p.stderr)
        p = subprocess.run([PERFCLI, "--fifo", "/nonexistent/fifo", "mi", "uptime"],
                           capture_output=True, text=True, timeout=20)
        self.assertEqual(p.returncode, 2)
        self.assertIn("cannot open", p.stderr)


class PerfCliReplyDir(unittest.TestCase):
    """Without --reply-dir, perfcli is answered whether the daemon's
    reply_dir is /tmp/ (the embedded default, OpenSIPS's) or the MI FIFO's
    own directory (the packaged config), and says where it looked when the
    daemon's is neither."""

    def ask(self, d, *extra):
        return subprocess.run([PERFCLI, "--fifo", d.fifo, "-t", "2", *extra, "mi", "uptime"],
                              capture_output=True, text=True, timeout=20)

    def test_either_directory_answers(self):
        other = tempfile.mkdtemp(prefix="perfcached-elsewhere-")
        try:
            for reply_dir, answered in (("/tmp/", True), (None, True), (other + "/", False)):
                d = Daemon(workers=1, overrides=() if reply_dir is None else ("mi.reply_dir=" + reply_dir,))
                try:
                    wait_for_path(d.fifo)
                    p = self.ask(d)
                    self.assertEqual(p.returncode == 0, answered, (reply_dir, p.stderr))
                    if answered:
                        self.assertIn("Up time", p.stdout)
                    else:
                        self.assertIn("the reply FIFO was in %s/ and /tmp/" % d.workdir, p.stderr)
                    self.assertEqual([f for f in os.listdir(d.workdir) if f.startswith("perfcli_reply_")], [])
                finally:
                    assert d.stop() == 0
            # told where, it looks only there
            d = Daemon(workers=1, overrides=("mi.reply_dir=/tmp/",))
            try:
                wait_for_path(d.fifo)
                self.assertEqual(self.ask(d, "--reply-dir", d.workdir).returncode, 2)
                self.assertEqual(self.ask(d, "--reply-dir", "/tmp").returncode, 0)
            finally:
                assert d.stop() == 0
        finally:
            shutil.rmtree(other, ignore_errors=True)


class MiAdmin(unittest.TestCase):
    def test_create_resize_rename_drop(self):
        d = Daemon(workers=1, overrides=("daemon.allow_create=yes",))
        sock = os.path.join(d.workdir, "mi.sock")
        wait_for_path(sock)
        helper = MiDatagram("test_commands_and_errors")
        helper.d, helper.sock_path = d, sock
        try:
            self.assertEqual(helper.call("perf_create", ["sessions", "64"])["result"], "OK")
            self.assertEqual(helper.call("perf_create", ["sessions"])["error"]["message"], "collection exists")
            self.assertEqual(helper.call("perf_set", ["k", "v", "0", "sessions"])["result"], "OK")
            self.assertEqual(helper.call("perf_resize", ["sessions", "4096"])["result"], "OK")
            deadline = time.time() + 10
            while time.time() < deadline:
                cols = {c["name"]: c for c in helper.call("perf_collections")["result"]["collections"]}
                if cols["sessions"]["buckets"] >= 4096:
                    break
                time.sleep(0.2)
            self.assertGreaterEqual(cols["sessions"]["buckets"], 4096)  # the timer grew it
            self.assertEqual(helper.call("perf_rename", ["sessions", "s2"])["result"], "OK")
            self.assertEqual(helper.call("perf_get", ["k", "s2"])["result"]["value"], "v")
            self.assertEqual(helper.call("perf_drop", ["s2"])["result"], "OK")
            self.assertEqual(helper.call("perf_get", ["k", "s2"])["error"]["message"], "no such collection")
            self.assertEqual(helper.call("perf_drop", ["s2"])["error"]["code"], 404)
        finally:
            self.assertEqual(d.stop(), 0)


if __name__ == "__main__":
    unittest.main()
