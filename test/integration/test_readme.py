# perfcached — the README's examples, run as written against `make run`'s configuration.
# Copyright (c) 2026 the perfcached authors.
"""Every ```sh block of README.md that talks to a daemon (redis-cli,
bin/perfcli, curl) is run line by line against a daemon on the embedded
default configuration (what `make run` starts), plus the RUN_ARGS the README
names just before the block. Only what a test cannot share is changed: the
ports 6379, 8080 and 8001 become free loopback ports, /run/perfcached paths
and every /tmp/perfcached-* path (the backup, the SQLite file, the WAL
directory) go into a temp dir of the test's own, removed after it: no run
loads what an earlier one left. Every line must exit 0; a line ending in '&' runs in the background
and must print what the README says it prints."""
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

from harness import BIN, ROOT, Daemon, free_port

README = os.environ.get("PERFCACHED_README", os.path.join(ROOT, "README.md"))
PERFCLI = os.environ.get("PERFCLI_BIN", os.path.join(ROOT, "bin", "perfcli"))
TALKS = ("redis-cli", "bin/perfcli", "bin/perfcached --", "curl", "python3")


def readme_blocks(path=README):
    """[(run_args, [command lines])] for every sh block that talks to a
    daemon; run_args come from a `make run RUN_ARGS="..."` in the prose or
    block just before it."""
    with open(path) as f:
        text = f.read()
    out, run_args, pos = [], "", 0
    for m in re.finditer(r"```sh\n(.*?)```", text, re.S):
        before = text[pos:m.start()]
        pos = m.end()
        found = re.findall(r'make run RUN_ARGS="([^"]*)"', before)
        run_args = found[-1] if found else ""
        lines = []
        for line in m.group(1).splitlines():
            line = re.sub(r"\s+#\s.*$", "", line).strip()
            if line.startswith(TALKS):
                lines.append(line)
        if lines:
            out.append((run_args, lines))
    return out


class ReadmeExamples(unittest.TestCase):
    def test_blocks_found(self):
        # A test that would pass on a README without examples proves nothing.
        blocks = readme_blocks()
        self.assertGreaterEqual(len(blocks), 4)
        self.assertIn("bin/perfcli mi which", [l for _, ls in blocks for l in ls])

    def test_examples_work_as_written(self):
        for run_args, lines in readme_blocks():
            with self.subTest(run_args=run_args or "(make run)", first=lines[0]):
                self.run_block(run_args, lines)

    def run_block(self, run_args, lines):
        http_port, xmlrpc_port = free_port(), free_port()
        ports = (("127.0.0.1:8080", "127.0.0.1:%d" % http_port), ("127.0.0.1:8001", "127.0.0.1:%d" % xmlrpc_port))

        paths = tempfile.mkdtemp(prefix="perfcached-test-readme-")
        self.addCleanup(shutil.rmtree, paths, True)

        def own_ports(text):
            for theirs, ours in ports:
                text = text.replace(theirs, ours)
            # /tmp/perfcached-cache.db, /tmp/perfcached-data, ...: the test's own
            return re.sub(r"/tmp/perfcached-([\w.-]+)", lambda m: os.path.join(paths, m.group(1)), text)
        overrides = [own_ports(o) for o in shlex.split(run_args) if o != "-o"]
        # The embedded default (no -f): only ports and paths are the test's own.
        d = Daemon(workers=None, arena_mb=256, overrides=overrides)
        bg = []
        try:
            sock = os.path.join(d.workdir, "mi.sock")
            for line in lines:
                line = line.replace("-p 6379", "-p %d" % d.port).replace("--port 6379", "--port %d" % d.port)
                line = own_ports(line)
                line = line.replace("/run/perfcached/perfcached_mi.sock", sock)
                background = line.endswith("&")
                argv = shlex.split(line.rstrip("&"))
                if argv[0] == "python3":
                    argv[0] = sys.executable  # Debian's, as every test runs
                if argv[0] == "bin/perfcached":
                    argv[0] = BIN
                if argv[0] == "bin/perfcli":
                    argv[0] = PERFCLI
                    if "--datagram" not in argv and "--http" not in argv:
                        argv[1:1] = ["--fifo", d.fifo, "--reply-dir", d.workdir + "/"]
                if background:
                    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
                    bg.append((line, p))
                    time.sleep(0.5)  # subscribed before the next line runs
                    continue
                p = subprocess.run(argv, capture_output=True, text=True, timeout=20)
                self.assertEqual(p.returncode, 0, "%s\n%s%s" % (line, p.stdout, p.stderr))
                self.assertNotIn("ERR", p.stdout, line)
            for line, p in bg:
                if "expired" in line:
                    # The sweep runs every second: the key set with PX 100 comes out.
                    deadline, out = time.time() + 8, b""
                    os.set_blocking(p.stdout.fileno(), False)
                    while time.time() < deadline and b"short-lived" not in out:
                        chunk = p.stdout.read()
                        if chunk:
                            out += chunk
                        time.sleep(0.1)
                    self.assertIn(b"short-lived", out, line)
        finally:
            for _, p in bg:
                p.kill()
                p.wait(timeout=5)
                p.stdout.close()
            rc = d.stop()
        self.assertEqual(rc, 0, d.read_log())


class StatisticsNames(unittest.TestCase):
    """perfcli sends statistics:get's array; reset_statistics takes the
    "group:name" that get_statistics prints."""

    def test_group_name_round_trip(self):
        import json
        import redis
        d = Daemon(workers=1)
        try:
            def cli(*args):
                p = subprocess.run([PERFCLI, "-r", "--fifo", d.fifo, "--reply-dir", d.workdir + "/", "mi", *args],
                                   capture_output=True, text=True, timeout=20)
                return p.returncode, p.stdout, p.stderr
            c = redis.Redis(host="127.0.0.1", port=d.port, socket_timeout=5)
            for i in range(50):
                c.set("k%d" % i, "v")
            rc, out, err = cli("statistics:get", "resp:commands")
            self.assertEqual(rc, 0, err)
            self.assertGreaterEqual(json.loads(out)["result"]["resp:commands"], 50)
            rc, out, err = cli("reset_statistics", "resp:commands")
            self.assertEqual(rc, 0, err)
            rc, out, err = cli("get_statistics", "resp:commands")
            self.assertLess(json.loads(out)["result"]["resp:commands"], 50)
            rc, out, err = cli("reset_statistics", "nosuch:commands")  # a group it does not have
            self.assertEqual(rc, 1, out)
            self.assertIn("Statistics Not Found", err)
        finally:
            self.assertEqual(d.stop(), 0)


if __name__ == "__main__":
    unittest.main()
