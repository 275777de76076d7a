# perfcached — the HTTP door: /metrics scraped with a Prometheus parser, /stats, /health, /mi.
# Copyright (c) 2026 the perfcached authors.
import http.client
import json
import os
import signal
import subprocess
import time
import unittest

import redis
from prometheus_client.parser import text_string_to_metric_families  # python3-prometheus-client

from harness import BIN, ROOT, Daemon, free_port


class HttpDoor(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.http_port = free_port()
        cls.d = Daemon(workers=1, overrides=("listen.http=127.0.0.1:%d" % cls.http_port,))
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                if cls.get("/health")[0] == 200:
                    break
            except OSError:
                time.sleep(0.05)

    @classmethod
    def tearDownClass(cls):
        assert cls.d.stop() == 0

    @classmethod
    def request(cls, method, path, body=None):
        c = http.client.HTTPConnection("127.0.0.1", cls.http_port, timeout=10)
        headers = {"Content-Type": "application/json"} if method == "POST" else {}
        c.request(method, path, body=body, headers=headers)
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, data

    @classmethod
    def get(cls, path):
        return cls.request("GET", path)

    def metrics(self):
        status, body = self.get("/metrics")
        self.assertEqual(status, 200)
        out = {}
        for fam in text_string_to_metric_families(body.decode()):
            for s in fam.samples:
                out[(s.name, tuple(sorted(s.labels.items())))] = s.value
        return out

    def test_metrics_parse_and_counters_move(self):
        before = self.metrics()
        r = redis.Redis(port=self.d.port, socket_timeout=5)
        for i in range(20):
            r.set("m:%d" % i, "v")
            r.get("m:%d" % i)
        after = self.metrics()
        key = ("perfcached_hits_total", (("collection", "0"),))
        self.assertGreaterEqual(after[key] - before.get(key, 0), 20)
        self.assertGreater(after[("perfcached_resp_commands_total", ())],
                           before[("perfcached_resp_commands_total", ())])
        self.assertGreaterEqual(after[("perfcached_entries", (("collection", "0"),))], 20)
        # memory (issue 10): one name per meaning, per cell size for the slab
        self.assertGreater(after[("perfcached_used_memory_bytes", ())], 0)
        cells = {lab: v for (n, lab), v in after.items() if n == "perfcached_slab_used_cells"}
        self.assertTrue(cells, "no per-class slab gauge")
        self.assertTrue(all(dict(lab)["cell"].isdigit() for lab in cells))
        self.assertGreaterEqual(sum(cells.values()), 20)
        for lab in cells:
            self.assertGreaterEqual(after[("perfcached_slab_cells", lab)], cells[lab])
        # A reset re-baselines what MI shows, never what Prometheus scrapes.
        self.assertEqual(self.request("POST", "/reset-stats")[0], 200)
        again = self.metrics()
        self.assertGreaterEqual(again[key], after[key])

    def test_metrics_build_health_one_name_per_meaning(self):
        m = self.metrics()
        builds = [dict(lab) for (n, lab), v in m.items() if n == "perfcached_build_info" and v == 1]
        self.assertEqual(len(builds), 1)
        self.assertRegex(builds[0]["version"], r"^\d+\.\d+\.\d+$")
        self.assertEqual(m[("perfcached_healthy", ())], 1)
        ups = {dict(lab)["rank"]: v for (n, lab), v in m.items() if n == "perfcached_worker_up"}
        self.assertEqual(sorted(ups), ["1"])  # workers=1
        self.assertTrue(all(v == 1 for v in ups.values()))
        for (n, lab), v in m.items():
            if n == "perfcached_worker_heartbeat_age_seconds":
                self.assertLess(v, 3)
        for n in ("perfcached_arena_cap_bytes", "perfcached_arena_committed_bytes", "perfcached_arena_used_bytes",
                  "perfcached_large_objects", "perfcached_large_object_bytes"):
            self.assertIn((n, ()), m)
        self.assertGreaterEqual(m[("perfcached_arena_cap_bytes", ())], m[("perfcached_arena_committed_bytes", ())])
        # No family mixes meanings under a label (cap + committed + used summed is nothing).
        self.assertEqual([k for k in m if "kind" in dict(k[1])], [])

    def test_grafana_dashboard_uses_real_metrics(self):
        import re
        with open(os.path.join(ROOT, "contrib", "grafana-perfcached.json")) as f:
            dash = json.load(f)
        names = {n for (n, _labels) in self.metrics()}
        used = set()
        for p in dash["panels"]:
            for t in p["targets"]:
                used.update(re.findall(r"perfcached_[a-z_]+", t["expr"]))
        self.assertTrue(used)
        self.assertEqual(sorted(used - names), [])

    def test_stats_health_and_errors(self):
        status, body = self.get("/stats")
        self.assertEqual(status, 200)
        stats = json.loads(body)
        self.assertIn("perfcached:entries", stats)
        self.assertIn("resp:commands", stats)
        self.assertEqual(self.get("/health")[0], 200)
        self.assertEqual(self.get("/nope")[0], 404)
        self.assertEqual(self.get("/reset-stats")[0], 405)
        self.assertEqual(self.request("POST", "/metrics")[0], 405)
        self.assertEqual(self.request("POST", "/mi", body=b"x" * 100000)[0], 413)
        c = http.client.HTTPConnection("127.0.0.1", self.http_port, timeout=10)
        c.putrequest("GET", "/metrics")
        c.putheader("X-Big", "y" * 20000)  # oversize headers: refused, no crash
        c.endheaders()
        self.assertGreaterEqual(c.getresponse().status, 400)
        c.close()
        self.assertEqual(self.get("/health")[0], 200)

    def test_mi_over_http(self):
        def mi(payload):
            status, body = self.request("POST", "/mi", body=payload)
            return status, (json.loads(body) if body else None)
        st, rep = mi(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "perf_set", "params": ["h", "v"]}))
        self.assertEqual((st, rep["result"]), (200, "OK"))
        st, rep = mi(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "perf_get", "params": {"key": "h"}}))
        self.assertEqual(rep["result"]["value"], "v")
        self.assertEqual(mi(b"{nope")[1]["error"]["code"], -32700)
        self.assertEqual(mi(b'{"jsonrpc":"1","id":1,"method":"which"}')[1]["error"]["code"], -32600)
        self.assertEqual(mi(b'{"jsonrpc":"2.0","id":1,"method":"zzz"}')[1]["error"]["code"], -32601)
        self.assertEqual(mi(b'{"jsonrpc":"2.0","id":1,"method":"perf_get","params":[1,2,3]}')[1]["error"]["code"], -32602)
        self.assertEqual(mi(b'{"jsonrpc":"2.0","method":"which"}')[0], 204)  # a notification

    def test_health_503_when_a_worker_stalls(self):
        w = self.d.worker_pids()[0]
        os.kill(w, signal.SIGSTOP)
        try:
            deadline = time.time() + 10
            status = 200
            while time.time() < deadline and status == 200:
                time.sleep(0.5)
                status, body = self.get("/health")
            self.assertEqual(status, 503)
            self.assertIn(b"has not beaten", body)
        finally:
            os.kill(w, signal.SIGCONT)
        deadline = time.time() + 10
        while time.time() < deadline and self.get("/health")[0] != 200:
            time.sleep(0.2)
        self.assertEqual(self.get("/health")[0], 200)


class HttpConfig(unittest.TestCase):
    def test_off_loopback_needs_a_token(self):
        p = subprocess.run([BIN, "-C", "-o", "listen.http=0.0.0.0:8080"], capture_output=True,
                           text=True, timeout=20)
        self.assertEqual(p.returncode, 1)
        self.assertIn("[secrets] http", p.stderr)
        p = subprocess.run([BIN, "-C", "-o", "listen.http=0.0.0.0:8080", "-o", "secrets.http=tok"],
                           capture_output=True, text=True, timeout=20)
        self.assertEqual(p.returncode, 0, p.stderr)


if __name__ == "__main__":
    unittest.main()
