# perfcached — every MI command through every transport (FIFO, datagram, HTTP), and perfcli on each.
# Copyright (c) 2026 the perfcached authors.
import http.client
import json
import shutil
import tempfile
import os
import subprocess
import unittest

from harness import ROOT, Daemon, free_port, mi_datagram_raw, mi_fifo_raw, wait_for_path

PERFCLI = os.path.join(ROOT, "bin", "perfcli")

# (method, params, check(result)) for every command `which` lists, except kill
# (tested last, on its own daemons). A command added without a row here fails
# test_table_covers_which.
CALLS = [
    ("which", [], lambda r: "perf_get" in r),
    ("help", ["perf_keys"], lambda r: r["Exported by"] == "perfcached"),
    ("version", [], lambda r: "perfcached" in r["Server"]),
    ("uptime", [], lambda r: "Up time" in r),
    ("ps", [], lambda r: len(r["Processes"]) >= 4),
    ("pwd", [], lambda r: "WD" in r),
    ("arg", [], lambda r: "-D" in r),
    ("log_level", [], lambda r: "Log level" in r),
    ("perf_maxmemory", [], lambda r: r["policy"] == "noeviction" and r["used_memory"] > 0),
    ("perf_save", [], lambda r: r["collections"] == 16 and r["saved"] >= 0 and r["ms"] >= 0),
    ("perf_load", [], lambda r: r["collections"] == 16 and r["loaded"] >= 0 and r["expired"] >= 0),
    ("perf_sync", [], lambda r: r["broadcast"] == 0 and "no cluster" in r["note"]),
    ("wal_status", [], lambda r: r["enabled"] == "no" and "memory only" in r["note"]),
    ("perf_automove", [], lambda r: r["enabled"] == "yes" and r["active"] in ("yes", "no") and r["passes"] >= 0),
    ("mem_shm_dump", [], lambda r: r["used_bytes"] > 0),
    ("get_statistics", [["perfcached:"]], lambda r: "perfcached:entries" in r),
    ("list_statistics", [], lambda r: r["perfcached:hits"] == "incremental"),
    ("reset_statistics", [["hits"]], lambda r: r == "OK"),
    ("reset_all_statistics", [], lambda r: r == "OK"),
    ("event_subscribe", ["E_PERF_GROWN", "unix:/tmp/perfcached-nobody.sock", "5"], lambda r: r == "OK"),
    ("events_list", [], lambda r: len(r["Events"]) == 5),
    ("subscribers_list", [], lambda r: "Subscribers" in r),
    ("perf_collections", [], lambda r: len(r["collections"]) >= 16),
    ("perf_stats", [], lambda r: "arena" in r),
    ("perf_stats_reset", ["0"], lambda r: r["collections_reset"] == 1),
    ("perf_set", ["all:k", "v", "60"], lambda r: r == "OK"),
    ("perf_get", ["all:k"], lambda r: r["value"] == "v"),
    ("perf_probe", ["all:k"], lambda r: r["size"] == 1),
    ("perf_keys", ["all:*"], lambda r: r["returned"] >= 1),
    ("perf_dump", ["all:*", "0", "10"], lambda r: r["keys"][0]["value"] == "v"),
    ("perf_scan", [0, "all:*", "1000"], lambda r: "cursor" in r),
    ("perf_check", [], lambda r: r["clean"] is True and r["error_count"] == 0),
    ("perf_ttl", ["all:*", "120"], lambda r: r["updated"] >= 1),
    ("perf_del", ["all:*"], lambda r: r["deleted"] >= 1),
    ("perf_create", ["tmpcoll", "64"], lambda r: r == "OK"),
    ("perf_resize", ["tmpcoll", "128"], lambda r: r == "OK"),
    ("perf_rename", ["tmpcoll", "tmpcoll2"], lambda r: r == "OK"),
    ("perf_drop", ["tmpcoll2"], lambda r: r == "OK"),
]


class Transport:
    def __init__(self, d, http_port):
        self.d, self.http_port = d, http_port
        self.n = 0

    def fifo(self, req):
        return mi_fifo_raw(self.d.fifo, self.d.workdir, req)

    def datagram(self, req):
        return mi_datagram_raw(os.path.join(self.d.workdir, "mi.sock"), req, self.d.workdir)

    def http(self, req):
        c = http.client.HTTPConnection("127.0.0.1", self.http_port, timeout=10)
        c.request("POST", "/mi", body=req, headers={"Content-Type": "application/json"})
        body = c.getresponse().read()
        c.close()
        return body


class EveryCommandEveryTransport(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.http_port = free_port()
        cls.dbdir = tempfile.mkdtemp(prefix="perfcached-mi-db-")
        cls.d = Daemon(workers=1, overrides=("listen.http=127.0.0.1:%d" % cls.http_port,
                                             "daemon.allow_create=yes",
                                             "db.url=sqlite://%s/mi.db" % cls.dbdir))
        wait_for_path(cls.d.fifo)
        wait_for_path(os.path.join(cls.d.workdir, "mi.sock"))
        cls.t = Transport(cls.d, cls.http_port)

    @classmethod
    def tearDownClass(cls):
        assert cls.d.stop() == 0
        shutil.rmtree(cls.dbdir, ignore_errors=True)

    def call(self, transport, method, params):
        req = json.dumps({"jsonrpc": "2.0", "id": "1", "method": method, "params": params}).encode()
        raw = getattr(self.t, transport)(req)
        self.assertNotIn(b"\n", raw)
        return json.loads(raw)

    def test_table_covers_which(self):
        names = self.call("datagram", "which", [])["result"]
        bare = {n for n in names if ":" not in n}
        self.assertEqual(sorted(bare - {c[0] for c in CALLS} - {"kill"}), [])

    def test_every_command(self):
        for transport in ("fifo", "datagram", "http"):
            for method, params, check in CALLS:
                with self.subTest(transport=transport, method=method):
                    rep = self.call(transport, method, params)
                    self.assertIn("result", rep, rep)
                    self.assertTrue(check(rep["result"]), rep)
                    # The qualified name answers too.
                    q = "%s:%s" % ("perfcached" if method.startswith("perf_") else
                                   "evi" if method.startswith(("event", "subscri")) else "core", method)
                    if method in ("which", "uptime", "perf_get", "perf_stats", "get_statistics"):
                        self.assertIn("result", self.call(transport, q, params))

    def test_malformed_on_every_transport(self):
        for transport in ("fifo", "datagram", "http"):
            with self.subTest(transport=transport):
                self.assertEqual(json.loads(getattr(self.t, transport)(b"{oops"))["error"]["code"], -32700)
                self.assertEqual(self.call(transport, "nosuch", [])["error"]["code"], -32601)
                self.assertEqual(self.call(transport, "perf_get", [1, 2, 3])["error"]["code"], -32602)
                rep = json.loads(getattr(self.t, transport)(b'{"jsonrpc":"2.0","id":1}'))
                self.assertEqual(rep["error"]["code"], -32600)

    def test_perfcli_on_every_transport(self):
        where = {"fifo": ["--fifo", self.d.fifo, "--reply-dir", self.d.workdir],
                 "datagram": ["--datagram", os.path.join(self.d.workdir, "mi.sock")],
                 "http": ["--http", "http://127.0.0.1:%d" % self.http_port]}
        for transport, args in where.items():
            with self.subTest(transport=transport):
                p = subprocess.run([PERFCLI, *args, "mi", "perf_set", "cli:" + transport, "x"],
                                   capture_output=True, text=True, timeout=20)
                self.assertEqual((p.returncode, p.stdout.strip()), (0, "OK"), p.stderr)
                p = subprocess.run([PERFCLI, *args, "-r", "mi", "perf_get", "cli:" + transport],
                                   capture_output=True, text=True, timeout=20)
                self.assertEqual(json.loads(p.stdout)["result"]["value"], "x")
                p = subprocess.run([PERFCLI, *args, "mi", "perf_get", "nope"],
                                   capture_output=True, text=True, timeout=20)
                self.assertEqual(p.returncode, 1)


class KillOverEachTransport(unittest.TestCase):
    def test_kill(self):
        for transport in ("fifo", "datagram", "http"):
            with self.subTest(transport=transport):
                hp = free_port()
                d = Daemon(workers=1, overrides=("listen.http=127.0.0.1:%d" % hp,))
                wait_for_path(d.fifo)
                wait_for_path(os.path.join(d.workdir, "mi.sock"))
                t = Transport(d, hp)
                req = b'{"jsonrpc":"2.0","id":1,"method":"kill","params":[]}'
                self.assertEqual(json.loads(getattr(t, transport)(req))["result"], "OK")
                self.assertEqual(d.proc.wait(timeout=15), 0)
                d.stop()


if __name__ == "__main__":
    unittest.main()
