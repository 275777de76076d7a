"""SQL persistence (issue 11 part 1): perf_save / perf_load / perf_sync and
db mode 1 / 2, against real SQLite files (checked with the sqlite3 CLI)
and a real PostgreSQL server the test starts itself (checked with psql).

Every value type the daemon serves round-trips with its type and TTL:
strings, counters, hashes and sets (both encodings of each)."""
import json
import os
import re
import pwd
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import unittest

import redis

from harness import BIN, Daemon, children, fill_numbered, free_port, mi_fifo_raw, numbered_wrong


def mi(d, method, params=None, timeout=60):
    req = {"jsonrpc": "2.0", "method": method, "id": 1}
    if params is not None:
        req["params"] = params
    raw = mi_fifo_raw(d.fifo, d.workdir, json.dumps(req).encode(), timeout=timeout)
    return json.loads(raw)


def mi_pid(d):
    for k in children(d.pid):
        try:
            with open("/proc/%d/comm" % k) as f:
                if f.read().strip() == "pc-mi":
                    return k
        except OSError:
            pass
    return None


def fill_types(r, n, prefix="k", ttl=None, value="v1"):
    """n keys in four types: strings (some with a TTL), counters, hashes and
    sets (small and large, so both encodings of each are saved)."""
    p = r.pipeline(transaction=False)
    for i in range(n):
        kind = i % 4
        key = "%s%d" % (prefix, i)
        if kind == 0:
            p.set(key, "%s-%d" % (value, i), ex=ttl)
        elif kind == 1:
            p.incrby(key, i)
        elif kind == 2:
            p.hset(key, mapping={"f": value, "g": str(i)})
        else:
            p.sadd(key, "a", "b", str(i))
        if i % 1000 == 999:
            p.execute()
    p.execute()
    # Tree-encoded aggregates and an intset: the large encodings.
    r.hset(prefix + "bighash", mapping={"field%d" % j: "val%d" % j for j in range(600)})
    r.sadd(prefix + "bigset", *["m%d" % j for j in range(600)])
    r.sadd(prefix + "intset", *range(50))
    r.set(prefix + "bigvalue", "b" * 300000)  # above the scan's copy cap: read by key
    return n + 4


def snapshot(r, keys):
    """What each key holds, by type, and its TTL (seconds, -1 none)."""
    out = {}
    for k in keys:
        t = r.type(k).decode()
        if t == "string":
            v = r.get(k)
        elif t == "hash":
            v = sorted(r.hgetall(k).items())
        elif t == "set":
            v = sorted(r.smembers(k))
        else:
            v = None
        out[k] = (t, v, r.ttl(k))
    return out


class SqlBackend:
    """What each backend's tests need: a url and a way to read the table
    with the database's own client."""
    def url(self):
        raise NotImplementedError

    def count(self, collection="0"):
        raise NotImplementedError

    def value_of(self, key, collection="0"):
        raise NotImplementedError


class SqliteFile(SqlBackend):
    def __init__(self, workdir):
        self.path = os.path.join(workdir, "cache.db")

    def url(self):
        return "sqlite://" + self.path

    def sql(self, q):
        return subprocess.run(["sqlite3", self.path, q], capture_output=True, text=True, timeout=60,
                              check=True).stdout.strip()

    def count(self, collection="0"):
        return int(self.sql("SELECT count(*) FROM perfcached WHERE collection = '%s'" % collection))

    def value_of(self, key, collection="0"):
        return self.sql("SELECT pvalue FROM perfcached WHERE collection = '%s' AND pkey = '%s'" % (collection, key))


PG_BIN = "/usr/lib/postgresql/15/bin"


class PostgresServer(SqlBackend):
    """A throwaway PostgreSQL cluster: initdb as the postgres user in a temp
    dir, listening only on a UNIX socket in that dir; stopped by PID."""
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="perfcached-pg-")
        pw = pwd.getpwnam("postgres")
        os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        self.port = free_port()
        data = os.path.join(self.dir, "data")
        run = ["runuser", "-u", "postgres", "--"] if os.getuid() == 0 else []
        subprocess.run(run + [PG_BIN + "/initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8"],
                       check=True, capture_output=True, timeout=120)
        self.log = os.path.join(self.dir, "pg.log")
        subprocess.run(run + [PG_BIN + "/pg_ctl", "-D", data, "-l", self.log, "-w", "-t", "60", "-o",
                              "-k %s -c listen_addresses='' -p %d -c fsync=off" % (self.dir, self.port),
                              "start"], check=True, capture_output=True, timeout=90)
        with open(os.path.join(data, "postmaster.pid")) as f:
            self.pid = int(f.readline())

    def stop(self):
        try:
            os.kill(self.pid, signal.SIGINT)  # fast shutdown
            for _ in range(200):
                os.kill(self.pid, 0)
                time.sleep(0.05)
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        shutil.rmtree(self.dir, ignore_errors=True)

    def url(self):
        return "postgresql://postgres@/postgres?host=%s&port=%d" % (self.dir, self.port)

    def sql(self, q):
        return subprocess.run(["psql", "-h", self.dir, "-p", str(self.port), "-U", "postgres", "-d", "postgres",
                               "-tAc", q], capture_output=True, text=True, timeout=60, check=True).stdout.strip()

    def count(self, collection="0"):
        return int(self.sql("SELECT count(*) FROM perfcached WHERE collection = '%s'" % collection))

    def value_of(self, key, collection="0"):
        return self.sql("SELECT convert_from(pvalue, 'UTF8') FROM perfcached WHERE collection = '%s' AND "
                        "pkey = convert_to('%s', 'UTF8')" % (collection, key))


class Persistence:
    """The acceptance tests, run against each backend (the subclasses)."""
    backend = None

    def daemon(self, mode=0, extra=(), arena_mb=64, collections=("0",)):
        d = Daemon(arena_mb=arena_mb, overrides=["db.url=" + self.backend.url(), "db.mode=%d" % mode] +
                   ["db.persist_collections=" + c for c in collections] + list(extra))
        self.addCleanup(d.stop)
        return d

    def test_save_30000_entries_holds_exactly_the_live_rows(self):
        d = self.daemon()
        r = redis.Redis(port=d.port)
        n = fill_types(r, 30000 - 4)
        for i in range(50):
            r.set("gone%d" % i, "x", px=1)  # expired before the save: not saved
        time.sleep(0.05)
        self.assertEqual(r.dbsize(), n)
        t0 = time.time()
        rep = mi(d, "perf_save")["result"]
        took = time.time() - t0
        print("\n  %s: perf_save of %d entries: %d ms by the daemon, %.3f s by the client, %d rows/s" % (
            self.backend.__class__.__name__, rep["saved"], rep["ms"], took, rep["rows_per_s"]))
        self.assertEqual(rep["saved"], n)
        self.assertEqual(rep["collections"], 1)
        # Not a timing test: a per-row commit (the seeds' bug) takes minutes.
        self.assertLess(took, 30)
        self.assertEqual(self.backend.count(), n)
        self.assertEqual(self.backend.value_of("k4"), "v1-4")
        self.assertEqual(self.backend.value_of("k5"), "5")  # a counter: its decimal value
        self.assertEqual(self.backend.value_of("gone1"), "")
        # A second save replaces the snapshot: a deleted key goes.
        r.delete("k4")
        self.assertEqual(mi(d, "perf_save", ["0"])["result"]["saved"], n - 1)
        self.assertEqual(self.backend.count(), n - 1)
        self.assertEqual(self.backend.value_of("k4"), "")

    def test_a_start_up_load_larger_than_the_arena_says_what_it_evicted(self):
        # Under an evicting policy a full arena evicts during the load, as
        # when serving: the log says how many (it used to say nothing).
        d = self.daemon(arena_mb=128)
        r = redis.Redis(port=d.port)
        fill_numbered(r, 60000)
        self.assertEqual(mi(d, "perf_save")["result"]["saved"], 60000)
        self.assertEqual(d.stop(), 0)
        d2 = self.daemon(mode=1, extra=["memory.maxmemory_policy=allkeys-lru"], arena_mb=32)
        r2 = redis.Redis(port=d2.port)
        n = r2.dbsize()
        self.assertLess(n, 60000)
        m = re.search(r"start-up load: the arena was full: (\d+) key\(s\) evicted", d2.read_log())
        self.assertTrue(m, d2.read_log()[-2000:])
        self.assertGreaterEqual(int(m.group(1)), 60000 - n)
        self.assertEqual(numbered_wrong(r2), [])

    def test_mode2_round_trip_across_a_restart_with_ttls(self):
        d = self.daemon(mode=2)
        r = redis.Redis(port=d.port)
        fill_types(r, 400, ttl=100)
        r.expire("k2", 100)     # a hash with a TTL
        r.expire("kbigset", 100)
        r.set("plain", "no ttl")
        r.set("bin\x00ary", b"\xff\x00\x01")
        keys = [k.decode("latin-1") for k in r.keys("*")]
        before = snapshot(r, keys)
        self.assertEqual(d.stop(), 0)
        self.assertIn("final save", d.read_log())
        self.assertEqual(self.backend.count(), len(keys))
        time.sleep(2.1)
        d2 = self.daemon(mode=2)
        r2 = redis.Redis(port=d2.port)
        self.assertIn("start-up load", d2.read_log())
        after = snapshot(r2, keys)
        for k in keys:
            t, v, ttl = before[k]
            t2, v2, ttl2 = after[k]
            self.assertEqual((t, v), (t2, v2), k)
            if ttl == -1:
                self.assertEqual(ttl2, -1, k)
            else:
                self.assertTrue(ttl - 6 <= ttl2 <= ttl - 1, "%s: ttl %d then %d" % (k, ttl, ttl2))
        self.assertEqual(r2.object("encoding", "k1"), b"int")  # a counter stays a counter
        self.assertEqual(r2.incr("k1"), 2)
        self.assertEqual(r2.object("encoding", "kbighash"), b"hashtable")
        self.assertEqual(r2.object("encoding", "kintset"), b"intset")
        self.assertEqual(r2.dbsize(), len(keys))

    def test_killed_save_leaves_the_previous_snapshot(self):
        d = self.daemon(arena_mb=256)
        r = redis.Redis(port=d.port)
        p = r.pipeline(transaction=False)
        for i in range(20000):
            p.set("k%d" % i, "first-%d" % i)
            if i % 1000 == 999:
                p.execute()
        p.execute()
        self.assertEqual(mi(d, "perf_save")["result"]["saved"], 20000)
        # A second, much longer save: killed while it writes.
        for i in range(0, 300000, 1000):
            p = r.pipeline(transaction=False)
            for j in range(i, i + 1000):
                p.set("k%d" % j, "second-%d-%s" % (j, "x" * 200))
            p.execute()
        out = {}
        t = threading.Thread(target=lambda: out.update(rep=mi_fifo_raw(
            d.fifo, d.workdir, b'{"jsonrpc":"2.0","method":"perf_save","id":1}', timeout=15)))
        t.start()
        victim = mi_pid(d)
        self.assertIsNotNone(victim)
        self.wait_save_started()
        os.kill(victim, signal.SIGKILL)
        t.join()
        self.assertEqual(out.get("rep", b""), b"", "the save finished before the kill: make it longer")
        self.assertEqual(self.backend.count(), 20000)
        self.assertEqual(self.backend.value_of("k7"), "first-7")
        self.assertEqual(self.backend.value_of("k25000"), "")
        # The MI process comes back, takes over the dead save's claim, saves.
        deadline = time.time() + 20
        while time.time() < deadline and (mi_pid(d) in (None, victim)):
            time.sleep(0.1)
        rep = mi(d, "perf_save")
        self.assertIn("result", rep, rep)
        self.assertEqual(rep["result"]["saved"], 300000)
        self.assertEqual(self.backend.count(), 300000)

    def test_load_deletes_expired_rows_and_replaces_keys(self):
        d = self.daemon()
        r = redis.Redis(port=d.port)
        r.set("old", "x", px=1500)
        r.set("keep", "saved")
        r.hset("h", mapping={"a": "1"})
        mi(d, "perf_save")
        r.set("keep", "changed")
        r.set("only-in-cache", "stays")
        time.sleep(1.6)
        rep = mi(d, "perf_load")["result"]
        self.assertEqual((rep["loaded"], rep["expired"]), (2, 1), rep)
        self.assertEqual(self.backend.count(), 2)  # the expired row is gone from the table
        self.assertEqual(r.get("keep"), b"saved")
        self.assertEqual(r.get("only-in-cache"), b"stays")
        self.assertIsNone(r.get("old"))

    def test_save_and_load_every_collection_on_one_connection(self):
        # Regression (review, session 8): on PostgreSQL the second
        # collection's save prepared "put" again on the same connection
        # and failed.
        d = self.daemon(collections=())
        r = redis.Redis(port=d.port)
        for db in range(16):
            r.execute_command("SELECT", db)
            r.set("k", "db%d" % db)
        rep = mi(d, "perf_save")
        self.assertIn("result", rep, rep)
        self.assertEqual((rep["result"]["collections"], rep["result"]["saved"]), (16, 16))
        self.assertEqual(self.backend.count("15"), 1)
        self.assertEqual(self.backend.value_of("k", "15"), "db15")
        rep = mi(d, "perf_load")
        self.assertEqual((rep["result"]["collections"], rep["result"]["loaded"]), (16, 16), rep)

    def test_sync_saves_and_says_there_is_no_cluster(self):
        d = self.daemon()
        redis.Redis(port=d.port).set("a", "b")
        rep = mi(d, "perf_sync")["result"]
        self.assertEqual((rep["saved"], rep["broadcast"]), (1, 0))
        self.assertIn("no cluster", rep["note"])
        self.assertEqual(self.backend.count(), 1)
        st = mi(d, "get_statistics", [["db:"]])["result"]
        self.assertEqual(st["db:saves"], 1)
        self.assertEqual(st["db:rows_saved"], 1)


class Sqlite(Persistence, unittest.TestCase):
    def wait_save_started(self):
        """The save's transaction has written: SQLite's rollback journal exists."""
        journal = self.backend.path + "-journal"
        deadline = time.time() + 10
        while time.time() < deadline and not os.path.exists(journal):
            time.sleep(0.002)
        self.assertTrue(os.path.exists(journal), "the save never started writing")
        time.sleep(0.05)

    def setUp(self):
        self.workdir = tempfile.mkdtemp(prefix="perfcached-db-")
        self.addCleanup(shutil.rmtree, self.workdir, True)
        self.backend = SqliteFile(self.workdir)

    def test_integrity_after_a_killed_save(self):
        self.test_killed_save_leaves_the_previous_snapshot()
        self.assertEqual(self.backend.sql("PRAGMA integrity_check"), "ok")

    def test_bad_rows_are_skipped_and_reported(self):
        d = self.daemon()
        mi(d, "perf_save")  # creates the table
        self.backend.sql("INSERT INTO perfcached VALUES ('0', 'good', 'yes', 0, 'string'),"
                         " ('0', 'weird', 'x', 0, 'bogus'), ('0', 'badhash', X'05616263', 0, 'hash'),"
                         " ('0', 'badnum', 'twelve', 0, 'counter')")
        rep = mi(d, "perf_load")["result"]
        self.assertEqual((rep["loaded"], rep["skipped"]), (1, 3), rep)
        self.assertIn("key '", rep["first_error"])
        r = redis.Redis(port=d.port)
        self.assertEqual(r.get("good"), b"yes")
        self.assertEqual(r.exists("weird", "badhash", "badnum"), 0)

    def test_errors_are_clear(self):
        d = Daemon()
        self.addCleanup(d.stop)
        rep = mi(d, "perf_save")
        self.assertIn("no database", rep["error"]["message"])
        d2 = self.daemon()
        rep = mi(d2, "perf_save", ["nosuch"])
        self.assertIn("no such collection", rep["error"]["message"])
        bad = subprocess.run([BIN, "-C", "-o", "db.url=mysql://x"], capture_output=True, text=True)
        self.assertNotEqual(bad.returncode, 0)
        self.assertIn("[db] url", bad.stderr)
        bad = subprocess.run([BIN, "-C", "-o", "db.mode=1"], capture_output=True, text=True)
        self.assertIn("needs [db] url", bad.stderr)
        bad = subprocess.run([BIN, "-C", "-o", "db.url=sqlite:///x.db", "-o", "db.persist_collections=nope"],
                             capture_output=True, text=True)
        self.assertIn("no collection 'nope'", bad.stderr)
        bad = subprocess.run([BIN, "-C", "-o", "db.table=x;drop"], capture_output=True, text=True)
        self.assertIn("[db] table", bad.stderr)
        bad = subprocess.run([BIN, "-C", "-o", "db.url=sqlite:///x.db", "-o", "db.mode=1", "-o", "wal.dir=/tmp/x"],
                             capture_output=True, text=True)
        self.assertIn("both load at start", bad.stderr)
        # A start-up load that cannot happen is fatal, with the reason.
        p = subprocess.run([BIN, "-D", "-o", "listen.resp=127.0.0.1:%d" % free_port(), "-o", "mi.fifo_name=",
                            "-o", "mi.datagram=", "-o", "memory.arena_mb=32",
                            "-o", "db.url=sqlite:///nonexistent-dir/x.db", "-o", "db.mode=1"],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 1)
        self.assertIn("start-up load", p.stderr)
        self.assertIn("unable to open", p.stderr)


class Postgres(Persistence, unittest.TestCase):
    server = None

    def wait_save_started(self):
        """The save's transaction has deleted the old rows (it holds locks)."""
        deadline = time.time() + 10
        while time.time() < deadline:
            if self.server.sql("SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation "
                               "WHERE c.relname = 'perfcached' AND l.mode = 'RowExclusiveLock'") != "0":
                break
            time.sleep(0.01)
        time.sleep(0.2)

    @classmethod
    def setUpClass(cls):
        if not os.path.exists(PG_BIN + "/initdb") or shutil.which("psql") is None:
            raise unittest.SkipTest("*** PostgreSQL is not installed (scripts/install-deps.sh installs it): "
                                    "the PostgreSQL backend is NOT tested ***")
        cls.server = PostgresServer()

    @classmethod
    def tearDownClass(cls):
        if cls.server:
            cls.server.stop()

    def setUp(self):
        self.backend = self.server
        self.server.sql("DROP TABLE IF EXISTS perfcached")


if __name__ == "__main__":
    unittest.main()
