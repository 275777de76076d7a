"""The WAL (issue 11 parts 2 and 4): with [wal] fsync = always every
acknowledged write survives kill -9 of the whole daemon, of a worker and of
the WAL process; a full disk refuses writes with an error and loses no
acknowledged one; everysec loses at most about a second; deletes, flushes
and evictions stay done after a restart; a torn tail is cut and reported;
snapshots drop the segments they cover; `perfcached -W` verifies segments.
Real files, real processes, real Redis clients.

PERFCACHED_WAL_ROUNDS sets the crash rounds (3 here, 20 in make soak)."""
import glob
import os
import random
import re
import shutil
import signal
import struct
import subprocess
import tempfile
import threading
import time
import unittest

import redis

from harness import BIN, Daemon, children, key_state, wal_fields_records
from test_snapshot import kill9_all

ROUNDS = int(os.environ.get("PERFCACHED_WAL_ROUNDS", "3"))


def comm_of(pid):
    try:
        with open("/proc/%d/comm" % pid) as f:
            return f.read().strip()
    except OSError:
        return ""


def pids_named(d, prefix):
    return [k for k in children(d.pid) if comm_of(k).startswith(prefix)]


class Writers:
    """Client threads writing numbered keys; each records what was
    acknowledged: SETs, DELs of earlier keys, INCRs of its counter, HSETs,
    SADDs to one set all threads share (with small listpack limits the
    hashes and the set are trees soon: their writes are fields records,
    the shared set's from every worker)."""

    def __init__(self, port, threads=4):
        self.port = port
        self.stop = threading.Event()
        self.acked = [dict() for _ in range(threads)]      # key -> value (None: deleted)
        self.incr_acked = [0] * threads
        self.incr_sent = [0] * threads
        self.fields = [dict() for _ in range(threads)]
        self.members = [set() for _ in range(threads)]
        self.unsure = [set() for _ in range(threads)]
        self.errors = [[] for _ in range(threads)]
        self.threads = [threading.Thread(target=self.run, args=(i,), daemon=True) for i in range(threads)]

    def start(self):
        for t in self.threads:
            t.start()

    def run(self, t):
        r = None
        i = 0
        while not self.stop.is_set():
            try:
                if r is None:
                    r = redis.Redis(port=self.port, socket_timeout=20)
                key = "k:%d:%d" % (t, i)
                val = "v%d-%d" % (i, random.randrange(1 << 30))
                r.set(key, val)
                self.acked[t][key] = val
                if i % 7 == 3:
                    victim = "k:%d:%d" % (t, i - 3)
                    # Sent but not answered when the crash came: it may or
                    # may not have happened (both states are right).
                    self.unsure[t].add(victim)
                    r.delete(victim)
                    self.acked[t][victim] = None
                    self.unsure[t].discard(victim)
                if i % 5 == 0:
                    self.incr_sent[t] += 1
                    r.incr("counter:%d" % t)
                    self.incr_acked[t] += 1
                if i % 11 == 0:
                    r.hset("hash:%d" % t, "f%d" % i, val)
                    self.fields[t]["f%d" % i] = val
                if i % 13 == 0:
                    m = "m:%d:%d" % (t, i)
                    r.sadd("set:shared", m)
                    self.members[t].add(m)
                i += 1
            except (redis.ConnectionError, redis.TimeoutError) as e:
                self.errors[t].append(str(e))
                r = None
                time.sleep(0.05)
            except redis.ResponseError as e:
                self.errors[t].append(str(e))
                time.sleep(0.01)

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join(timeout=30)

    def total(self):
        return sum(len(a) for a in self.acked)

    def verify(self, tc, r):
        missing = []
        for t, acked in enumerate(self.acked):
            keys = list(acked)
            for start in range(0, len(keys), 500):
                chunk = keys[start:start + 500]
                got = r.mget(chunk)
                for k, v in zip(chunk, got):
                    want = acked[k]
                    if k in self.unsure[t] and v is None:
                        continue  # its DEL was in flight
                    if want is None:
                        if v is not None:
                            missing.append("%s: deleted (acknowledged) but back as %r" % (k, v))
                    elif v is None or v.decode() != want:
                        missing.append("%s: want %s, got %r" % (k, want, v))
            c = int(r.get("counter:%d" % t) or 0)
            if not (self.incr_acked[t] <= c <= self.incr_sent[t]):
                missing.append("counter:%d = %d, acknowledged %d, sent %d" % (t, c, self.incr_acked[t],
                                                                               self.incr_sent[t]))
            h = {k.decode(): v.decode() for k, v in r.hgetall("hash:%d" % t).items()}
            for f, v in self.fields[t].items():
                if h.get(f) != v:
                    missing.append("hash:%d %s: want %s, got %r" % (t, f, v, h.get(f)))
            shared = {m.decode() for m in r.smembers("set:shared")}
            missing += ["set:shared lost %s" % m for m in sorted(self.members[t] - shared)]
        tc.assertEqual(missing[:20], [], "%d acknowledged write(s) lost" % len(missing))


class Wal(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="perfcached-wal-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def daemon(self, fsync="always", extra=(), data=None, arena_mb=128):
        d = Daemon(arena_mb=arena_mb, overrides=["wal.dir=%s" % (data or self.dir + "/data"), 'wal.save=""',
                                                 "wal.fsync=" + fsync] + list(extra))
        self.addCleanup(d.stop)
        return d

    def test_always_kill9_whole_daemon_loses_no_acknowledged_write(self):
        rng = random.Random(os.getpid())
        total = fields = 0
        for rnd in range(ROUNDS):
            # Both committers: workers as group-commit leaders (the
            # default), and the WAL process alone (every third round).
            commit = "wal" if rnd % 3 == 1 else "worker"
            d = self.daemon(extra=["wal.commit=" + commit])
            cfg = redis.Redis(port=d.port)
            for name in ("hash-max-listpack-entries", "set-max-listpack-entries", "set-max-intset-entries"):
                cfg.config_set(name, 8)
            w = Writers(d.port)
            w.start()
            time.sleep(0.3 + rng.random())
            # Between whole-daemon crashes: a worker, then the WAL process,
            # killed mid-write; the supervisor restarts them, writes go on.
            if rnd % 2 == 0:
                os.kill(rng.choice(d.worker_pids()), signal.SIGKILL)
            else:
                wal = pids_named(d, "pc-wal")
                self.assertEqual(len(wal), 1, "one WAL process")
                os.kill(wal[0], signal.SIGKILL)
            time.sleep(0.3 + rng.random())
            led = redis.Redis(port=d.port).info("persistence")["wal_worker_commits"]
            if commit == "wal":
                self.assertEqual(led, 0, "a worker committed under [wal] commit = wal")
            else:
                self.assertGreater(led, 0, "no worker committed under [wal] commit = worker")
            kill9_all(d)
            w.finish()
            total += w.total()
            fields += wal_fields_records(self.dir + "/data")
            d2 = self.daemon()
            r = redis.Redis(port=d2.port)
            w.verify(self, r)
            self.assertIn("WAL replay:", d2.read_log())
            # The next round starts from this state: clear it, and stop cleanly.
            r.flushall()
            self.assertEqual(d2.stop(), 0)
        self.assertGreater(total, 200 * ROUNDS, "the writers wrote too little to mean anything")
        self.assertGreater(fields, 0, "no fields record was written")

    def test_a_leader_killed_at_each_step_of_its_commit_loses_no_acknowledged_write(self):
        """[wal] commit = worker: a worker commits its round's records itself,
        under the robust commit lock. Killed at each step of its turn (the
        test hook PERFCACHED_TEST_LEADER_DIES: after the drain, the write,
        written_pos, the ring tails, the fdatasync, one ring's publish), the next committer
        takes the lock from the dead one, fsyncs what it wrote and goes on:
        writes go on being acknowledged (no reply hangs), and after a crash
        of the whole daemon every acknowledged one is there."""
        for step in range(1, 7):
            env = dict(os.environ, PERFCACHED_TEST_LEADER_DIES="%d:40" % step)
            d = Daemon(arena_mb=128, env=env, overrides=["wal.dir=%s/data" % self.dir, 'wal.save=""',
                                                         "wal.fsync=always"])
            self.addCleanup(d.stop)
            w = Writers(d.port)
            w.start()
            died = d.wait_log("a committer died during its turn", timeout=30)
            self.assertTrue(died, "step %d: no leader died holding the commit lock" % step)
            before = w.total()
            time.sleep(1.0)
            self.assertGreater(w.total(), before + 20, "step %d: writes stopped after a leader died" % step)
            kill9_all(d)
            w.finish()
            d2 = self.daemon()
            r = redis.Redis(port=d2.port)
            w.verify(self, r)
            r.flushall()
            self.assertEqual(d2.stop(), 0)

    def state(self, r, db=0):
        """Every key of a db with its value (strings) and whether it has a TTL."""
        return key_state(r.connection_pool.connection_kwargs["port"], db)

    def test_restart_reproduces_memory_under_racing_flushes_and_evictions(self):
        # Writers race FLUSHDB (it clears bucket by bucket while others
        # write), DEL, EXPIRE and evictions (maxmemory). Once they stop, a
        # crash and a restart must give back exactly what memory held.
        extra = ["memory.maxmemory=20mb", "memory.maxmemory_policy=allkeys-lru"]
        d = self.daemon(extra=extra, arena_mb=64)
        stop = threading.Event()
        errors = []

        def writer(n):
            r = redis.Redis(port=d.port)
            rng = random.Random(n)
            i = 0
            while not stop.is_set():
                k = "w%d:%d" % (n, rng.randrange(20000))
                op = rng.random()
                try:
                    if op < 0.6:
                        r.set(k, "v%d" % i + "x" * rng.randrange(400))
                    elif op < 0.75:
                        r.delete(k)
                    elif op < 0.85:
                        r.expire(k, 1000)
                    elif op < 0.92:
                        r.hset("h%d:%d" % (n, rng.randrange(50)), "f%d" % rng.randrange(20), i)
                    elif op < 0.9995:
                        r.incr("c%d" % n)
                    else:
                        r.flushdb()
                except redis.ResponseError as e:
                    errors.append(str(e))
                i += 1

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(3)]
        for t in threads:
            t.start()
        time.sleep(4)
        stop.set()
        for t in threads:
            t.join(timeout=30)
        r = redis.Redis(port=d.port)
        # A FLUSHDB near the end of the race can leave few keys: a state
        # after it, written without the race, so the crash has one to keep
        # (the check ran into 41 keys once).
        for i in range(200):
            r.set("after:%d" % i, i)
        before = self.state(r)
        self.assertGreater(len(before), 100)
        kill9_all(d)
        d2 = self.daemon(extra=extra, arena_mb=64)
        after = self.state(redis.Redis(port=d2.port))
        missing = [k for k in before if k not in after]
        extra_keys = [k for k in after if k not in before]
        changed = [k for k in before if k in after and before[k] != after[k]]
        self.assertEqual((missing[:5], extra_keys[:5], changed[:5]), ([], [], []),
                         "%d missing, %d back from the dead, %d changed of %d" %
                         (len(missing), len(extra_keys), len(changed), len(before)))

    def test_everysec_loses_at_most_about_a_second_and_reports_replay(self):
        d = self.daemon(fsync="everysec")
        r = redis.Redis(port=d.port)
        p = r.pipeline(transaction=False)
        for i in range(20000):
            p.set("e:%d" % i, i)
        p.execute()
        time.sleep(2.5)  # two fsyncs since
        stamp = time.time()
        last = 0
        while time.time() - stamp < 1.5:
            last += 1
            r.set("late:%d" % last, last)
        written_until = time.time()
        kill9_all(d)
        d2 = self.daemon(fsync="everysec")
        r2 = redis.Redis(port=d2.port)
        self.assertEqual(r2.get("e:19999"), b"19999")
        self.assertEqual(len(r2.keys("e:*")), 20000)
        survived = len(r2.keys("late:*"))
        # Writes older than ~1 s (plus a tick) before the crash are on disk.
        per_s = last / (written_until - stamp)
        self.assertGreaterEqual(survived, last - int(per_s * 1.3) - 1,
                                "lost %d of %d late writes (%.0f/s)" % (last - survived, last, per_s))
        info = r2.info("persistence")
        self.assertGreaterEqual(info["wal_replayed_records"], 20000)
        self.assertEqual(info["aof_enabled"], 1)

    def test_deletes_flushes_and_overwrites_stay_after_restart(self):
        d = self.daemon()
        r = redis.Redis(port=d.port)
        r.set("stays", "1")
        r.set("deleted", "x")
        r.delete("deleted")
        r.set("over", "old")
        r.set("over", "new")
        r.set("moved", "m")
        r.move("moved", 1)
        r.select = None
        r1 = redis.Redis(port=d.port, db=2)
        r1.set("in-db2", "gone after flushdb")
        r1.flushdb()
        r1.set("after-flush", "kept")
        r.set("ttl", "t", px=300)
        r.rename("stays", "renamed")
        r.hset("h", mapping={"a": "1", "b": "2"})
        r.hdel("h", "a")
        r.sadd("s", "x", "y")
        r.srem("s", "x")
        r.set("n", 10)
        r.incrby("n", 5)
        time.sleep(0.4)  # "ttl" expires
        kill9_all(d)
        d2 = self.daemon()
        r = redis.Redis(port=d2.port)
        self.assertIsNone(r.get("deleted"))
        self.assertIsNone(r.get("stays"))
        self.assertEqual(r.get("renamed"), b"1")
        self.assertEqual(r.get("over"), b"new")
        self.assertIsNone(r.get("moved"))
        self.assertEqual(redis.Redis(port=d2.port, db=1).get("moved"), b"m")
        r2 = redis.Redis(port=d2.port, db=2)
        self.assertIsNone(r2.get("in-db2"))
        self.assertEqual(r2.get("after-flush"), b"kept")
        self.assertIsNone(r.get("ttl"))
        self.assertEqual(r.hgetall("h"), {b"b": b"2"})
        self.assertEqual(r.smembers("s"), {b"y"})
        self.assertEqual(r.get("n"), b"15")
        self.assertEqual(r.object("encoding", "n"), b"int")
        # A write after the restart outranks everything in the log: a second
        # crash replays the old records and the new ones, and the new win.
        r.set("deleted", "again")
        r.delete("over")
        kill9_all(d2)
        d3 = self.daemon()
        r = redis.Redis(port=d3.port)
        self.assertEqual(r.get("deleted"), b"again")
        self.assertIsNone(r.get("over"))
        self.assertEqual(r.get("renamed"), b"1")

    def test_dropped_and_renamed_collections_stay_gone(self):
        """perf_drop and perf_rename at run time: after a crash the dropped
        collection and the old name do not come back (empty), the new name
        keeps its keys, and a configured collection dropped at run time
        comes back (the config makes it) without its keys."""
        from test_db import mi
        extra = ["daemon.allow_create=yes"]
        d = self.daemon(extra=extra)
        for name in ("gone", "old"):
            self.assertEqual(mi(d, "perf_create", [name]).get("result"), "OK")
            for i in range(50):
                self.assertEqual(mi(d, "perf_set", {"key": "k%d" % i, "value": "v", "ttl": "0", "collection": name})
                                 .get("result"), "OK")
        redis.Redis(port=d.port, db=3).set("configured", "x")
        self.assertEqual(mi(d, "perf_drop", ["gone"]).get("result"), "OK")
        self.assertEqual(mi(d, "perf_rename", ["old", "new"]).get("result"), "OK")
        self.assertEqual(mi(d, "perf_drop", ["3"]).get("result"), "OK")
        kill9_all(d)
        p = subprocess.run([BIN, "-W", self.dir + "/data"], capture_output=True, text=True, timeout=60)
        self.assertIn(", 3 drop, 0 fields, 0 expire)", p.stdout)
        d2 = self.daemon(extra=extra)
        names = mi(d2, "perf_collections")["result"]
        listed = {c["name"] for c in (names if isinstance(names, list) else names.get("collections", []))}
        self.assertNotIn("gone", listed)
        self.assertNotIn("old", listed)
        self.assertIn("new", listed)
        self.assertIn("3", listed)
        self.assertEqual(mi(d2, "perf_get", {"key": "k7", "collection": "new"})["result"]["value"], "v")
        self.assertIsNone(redis.Redis(port=d2.port, db=3).get("configured"))
        # made again after the drop: the new one's keys come back after a crash
        self.assertEqual(mi(d2, "perf_create", ["gone"]).get("result"), "OK")
        self.assertEqual(mi(d2, "perf_set", {"key": "again", "value": "2", "ttl": "0", "collection": "gone"})
                         .get("result"), "OK")
        kill9_all(d2)
        d3 = self.daemon(extra=extra)
        self.assertEqual(mi(d3, "perf_get", {"key": "again", "collection": "gone"})["result"]["value"], "2")
        self.assertIn("error", mi(d3, "perf_get", {"key": "k1", "collection": "gone"}))

    def test_a_collection_renamed_and_renamed_back_keeps_its_keys(self):
        """Regression (review, session 19): a rename keeps the keys'
        versions, so after perf_rename a b and perf_rename b a the puts
        logged under a lost to the first rename's tombstones under a, at the
        same versions: a crash lost every key of a."""
        from test_db import mi
        extra = ["daemon.allow_create=yes"]
        d = self.daemon(extra=extra)
        self.assertEqual(mi(d, "perf_create", ["ra"]).get("result"), "OK")
        for i in range(50):
            self.assertEqual(mi(d, "perf_set", {"key": "k%d" % i, "value": "v%d" % i, "ttl": "0",
                                                "collection": "ra"}).get("result"), "OK")
        self.assertEqual(mi(d, "perf_rename", ["ra", "rb"]).get("result"), "OK")
        self.assertEqual(mi(d, "perf_rename", ["rb", "ra"]).get("result"), "OK")
        self.assertEqual(mi(d, "perf_set", {"key": "after", "value": "x", "ttl": "0", "collection": "ra"})
                         .get("result"), "OK")
        kill9_all(d)
        d2 = self.daemon(extra=extra)
        names = mi(d2, "perf_collections")["result"]
        listed = {c["name"] for c in (names if isinstance(names, list) else names.get("collections", []))}
        self.assertIn("ra", listed)
        self.assertNotIn("rb", listed)
        for i in range(50):
            self.assertEqual(mi(d2, "perf_get", {"key": "k%d" % i, "collection": "ra"})["result"]["value"],
                             "v%d" % i)
        self.assertEqual(mi(d2, "perf_get", {"key": "after", "collection": "ra"})["result"]["value"], "x")

    def test_writes_to_a_renamed_db_are_logged_where_they_landed(self):
        """Regression (review, session 22): a worker's table ref survives
        perf_rename (the table is the same), so SELECT 0 writes after
        `perf_rename 0 archive` land in archive; they were logged under
        "0", so a crash put them back in "0" (and a write the rename's walk
        had passed was dropped with "0"). Memory and log must agree."""
        from test_db import mi
        d = self.daemon(extra=["daemon.allow_create=yes"])
        r = redis.Redis(port=d.port)  # one connection: one worker and its ref
        r.set("before", "1")
        self.assertEqual(mi(d, "perf_rename", ["0", "archive"]).get("result"), "OK")
        r.set("after", "2")
        r.set("before", "3")
        self.assertEqual(mi(d, "perf_get", {"key": "after", "collection": "archive"})["result"]["value"], "2")
        kill9_all(d)
        d2 = self.daemon(extra=["daemon.allow_create=yes"])
        for k, v in (("after", "2"), ("before", "3")):
            got = mi(d2, "perf_get", {"key": k, "collection": "archive"})
            self.assertEqual(got.get("result", {}).get("value"), v, (k, got))
        self.assertIsNone(redis.Redis(port=d2.port).get("after"))

    def test_evicted_keys_do_not_come_back(self):
        d = self.daemon(extra=["memory.maxmemory=24mb", "memory.maxmemory_policy=allkeys-lru"], arena_mb=64)
        r = redis.Redis(port=d.port)
        p = r.pipeline(transaction=False)
        for i in range(60000):
            p.set("ev:%d" % i, "x" * 400)
            if i % 1000 == 999:
                p.execute()
        p.execute()
        # The workers' ticks evict while used memory is above maxmemory
        # (session 22): count once they are done, or one more key goes
        # (logged) between the count and the kill.
        kept, deadline = r.dbsize(), time.time() + 10
        while time.time() < deadline:
            time.sleep(0.4)
            now = r.dbsize()
            if now == kept and int(r.info("memory")["used_memory"]) <= 24 << 20:
                break
            kept = now
        self.assertLess(kept, 60000, "nothing was evicted")
        kill9_all(d)
        d2 = self.daemon(extra=["memory.maxmemory=24mb", "memory.maxmemory_policy=allkeys-lru"], arena_mb=64)
        self.assertEqual(redis.Redis(port=d2.port).dbsize(), kept)

    def test_snapshot_then_wal_tail_and_segments_dropped(self):
        d = self.daemon(extra=["wal.segment_mb=1"])
        r = redis.Redis(port=d.port)
        p = r.pipeline(transaction=False)
        for i in range(30000):
            p.set("a:%d" % i, "x" * 100)
        p.execute()
        segs_before = glob.glob(self.dir + "/data/wal-*.log")
        self.assertGreater(len(segs_before), 2, "1 MiB segments: several")
        self.assertTrue(r.save())
        self.assertTrue(r.save())  # two kept snapshots both cover the segments
        segs_after = glob.glob(self.dir + "/data/wal-*.log")
        self.assertLess(len(segs_after), len(segs_before), "a snapshot drops the segments it covers")
        r.set("after", "snapshot")
        r.delete("a:5")
        kill9_all(d)
        d2 = self.daemon()
        r2 = redis.Redis(port=d2.port)
        self.assertEqual(r2.get("after"), b"snapshot")
        self.assertIsNone(r2.get("a:5"))
        self.assertEqual(r2.dbsize(), 30000)
        log = d2.read_log()
        self.assertIn("recovered 30000 key(s) from snapshot", log)
        self.assertIn("WAL replay: 2 record(s)", log)

    def test_writes_after_a_start_with_no_segment_survive_the_next_crash(self):
        # Regression (review, session 22): a snapshot at WAL position P and
        # no segment left (removed by hand, or the snapshot copied to a new
        # host). The WAL numbered its new records from 0, the next replay
        # started at P and skipped them: every write since that start was
        # lost at the next crash.
        d = self.daemon()
        r = redis.Redis(port=d.port)
        for i in range(500):
            r.set("old:%d" % i, "x" * 50)
        self.assertTrue(r.save())
        self.assertEqual(d.stop(), 0)
        for f in glob.glob(self.dir + "/data/wal-*.log"):
            os.unlink(f)
        d2 = self.daemon()
        r2 = redis.Redis(port=d2.port)
        self.assertEqual(r2.dbsize(), 500)
        log2 = d2.read_log()
        for i in range(50):
            r2.set("new:%d" % i, i)
        r2.delete("old:7")
        kill9_all(d2)
        d3 = self.daemon()
        r3 = redis.Redis(port=d3.port)
        # The replay's look-ups are not a client's (review, session 22).
        st = r3.info("stats")
        self.assertEqual((int(st["keyspace_hits"]), int(st["keyspace_misses"])), (0, 0))
        self.assertEqual(r3.get("new:49"), b"49")
        self.assertIsNone(r3.get("old:7"))
        self.assertEqual(r3.dbsize(), 549)
        self.assertIn("WAL replay: 51 record(s)", d3.read_log())
        self.assertIn("holds no segment", log2)

    def test_torn_tail_is_cut_and_reported_and_W_verifies(self):
        d = self.daemon()
        r = redis.Redis(port=d.port)
        for i in range(100):
            r.set("t:%d" % i, i)
        kill9_all(d)
        seg = sorted(glob.glob(self.dir + "/data/wal-*.log"))[-1]
        good = subprocess.run([BIN, "-W", self.dir + "/data"], capture_output=True, text=True)
        self.assertEqual(good.returncode, 0, good.stderr)
        self.assertIn("100 record(s)", good.stdout)
        # Under always the segment is zero-filled ahead of its records: the
        # torn bytes go where the next record would have gone.
        end = int(re.search(r"positions 0 \.\. (\d+)", good.stdout).group(1))
        self.assertGreater(os.path.getsize(seg), 32 + end, "zeros laid down ahead under always")
        with open(seg, "r+b") as f:
            f.seek(32 + end)
            f.write(b"\x40\x00\x00\x00\xde\xad")  # a record's first bytes, the rest still zeros
        bad = subprocess.run([BIN, "-W", self.dir + "/data"], capture_output=True, text=True)
        self.assertEqual(bad.returncode, 1)
        self.assertIn("a torn record", bad.stdout + bad.stderr)
        d2 = self.daemon()
        r2 = redis.Redis(port=d2.port)
        self.assertEqual(r2.get("t:99"), b"99")
        self.assertIn("a torn record", d2.read_log())
        self.assertEqual(r2.info("persistence")["wal_replay_torn_bytes"], 6)
        r2.set("t:100", "after the cut")
        kill9_all(d2)
        d3 = self.daemon()
        self.assertEqual(redis.Redis(port=d3.port).get("t:100"), b"after the cut")

    def test_always_writes_over_zeros_laid_down_ahead_and_other_policies_append(self):
        # fsync = always: the segment is zero-filled ahead of its records
        # (its fdatasync then carries no size change); a graceful stop cuts
        # the zeros off. everysec / no append as before.
        for fsync in ("always", "everysec"):
            data = os.path.join(self.dir, fsync)
            d = self.daemon(fsync=fsync, data=data, extra=["wal.segment_mb=1"])
            r = redis.Redis(port=d.port)
            for i in range(12000):  # about 1.7 MB of records: a second segment
                r.set("z:%d" % i, "v" * 100)
            info = r.info("persistence")
            segs = sorted(glob.glob(data + "/wal-*.log"))
            self.assertEqual(len(segs), 2, segs)
            with open(segs[-1], "rb") as f:
                flags = struct.unpack("<I", f.read(16)[12:16])[0]
            newest = os.path.getsize(segs[-1]) - 32
            written = info["wal_written_position"] - int(os.path.basename(segs[-1])[4:20], 16)
            if fsync == "always":  # (under always a reply waits for its record: the position is final)
                self.assertEqual(flags & 1, 1)
                self.assertGreaterEqual(info["wal_zero_fills"], 2)
                self.assertGreater(newest, written)  # zeros ahead
                # A segment left behind was cut back to its records.
                older = os.path.getsize(segs[-2]) - 32
                self.assertEqual(older, int(os.path.basename(segs[-1])[4:20], 16) -
                                 int(os.path.basename(segs[-2])[4:20], 16))
            else:
                self.assertEqual(flags & 1, 0)
                self.assertEqual(info["wal_zero_fills"], 0)
            if fsync == "always":
                kill9_all(d)  # leaves the zeros ahead in the newest segment
            else:
                d.stop()  # (kill -9 would lose the writes of the last second)
            check = subprocess.run([BIN, "-W", data], capture_output=True, text=True)
            self.assertEqual(check.returncode, 0, check.stdout + check.stderr)
            self.assertIn("12000 record(s)", check.stdout)
            records_end = int(re.search(r"positions \d+ \.\. (\d+)", check.stdout).group(1))
            d2 = self.daemon(fsync=fsync, data=data, extra=["wal.segment_mb=1"])
            r2 = redis.Redis(port=d2.port)
            self.assertEqual(r2.dbsize(), 12000)
            self.assertEqual(r2.info("persistence")["wal_replay_torn_bytes"], 0)
            r2.set("z:after", "x")
            d2.stop()
            # The next segment starts where the records ended, not after the
            # zeros; a graceful stop leaves it holding just its records.
            last = sorted(glob.glob(data + "/wal-*.log"))[-1]
            start = int(os.path.basename(last)[4:20], 16)
            self.assertEqual(start, records_end)
            check = subprocess.run([BIN, "-W", data], capture_output=True, text=True)
            self.assertEqual(check.returncode, 0, check.stdout + check.stderr)
            end = int(re.search(r"positions \d+ \.\. (\d+)", check.stdout).group(1))
            self.assertEqual(os.path.getsize(last) - 32, end - start)
            d3 = self.daemon(fsync=fsync, data=data)
            self.assertEqual(redis.Redis(port=d3.port).get("z:after"), b"x")
            self.assertEqual(redis.Redis(port=d3.port).dbsize(), 12001)
            d3.stop()

    def test_full_disk_refuses_writes_and_loses_no_acknowledged_one(self):
        if os.geteuid() != 0 or shutil.which("mount") is None:
            self.skipTest("SKIPPED LOUDLY: mounting a small tmpfs needs root")
        mnt = os.path.join(self.dir, "small")
        os.makedirs(mnt)
        m = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", mnt], capture_output=True, text=True)
        if m.returncode != 0:
            self.skipTest("SKIPPED LOUDLY: cannot mount a tmpfs here: " + m.stderr)
        self.addCleanup(subprocess.run, ["umount", "-l", mnt])
        d = self.daemon(data=mnt + "/data", extra=["wal.segment_mb=64"])
        r = redis.Redis(port=d.port, socket_timeout=20)
        acked = {}
        refused = None
        unanswered = 0
        for i in range(20000):
            try:
                r.set("full:%d" % i, "y" * 200)
                acked["full:%d" % i] = True
            except redis.ConnectionError:
                # A write applied but not on disk when the disk filled: no
                # reply (the connection is closed), never an acknowledgement.
                unanswered += 1
                r = redis.Redis(port=d.port, socket_timeout=20)
            except redis.ResponseError as e:
                refused = str(e)
                break
        self.assertIsNotNone(refused, "2 MiB filled without a refusal")
        self.assertIn("MISCONF Errors writing to the WAL", refused)
        self.assertLessEqual(unanswered, 3)
        self.assertGreater(len(acked), 1000)
        self.assertEqual(r.info("persistence")["aof_last_write_status"], "err")
        # Reads still work; a second write is refused too.
        self.assertEqual(r.get("full:0"), b"y" * 200)
        with self.assertRaises(redis.ResponseError):
            r.set("another", "x")
        # Room again: writes are accepted again.
        subprocess.run(["mount", "-o", "remount,size=8m", mnt], check=True)
        deadline = time.time() + 10
        while True:
            try:
                r.set("after-room", "ok")
                break
            except redis.ResponseError:
                if time.time() > deadline:
                    raise
                time.sleep(0.1)
        kill9_all(d)
        d2 = self.daemon(data=mnt + "/data")
        r2 = redis.Redis(port=d2.port)
        keys = list(acked)
        lost = [k for k, v in zip(keys, r2.mget(keys)) if v is None]
        self.assertEqual(lost[:10], [], "%d acknowledged write(s) lost on a full disk" % len(lost))
        self.assertEqual(r2.get("after-room"), b"ok")

    def test_loading_is_answered_while_the_wal_replays(self):
        d = self.daemon(fsync="no", arena_mb=512)
        subprocess.run(["redis-benchmark", "-p", str(d.port), "-t", "set", "-n", "1500000", "-r", "100000000",
                        "-P", "64", "-q"], check=True, capture_output=True, timeout=300)
        kill9_all(d)
        # The door is bound before recovery: a client that connects while
        # the WAL replays gets -LOADING (INFO: loading:1), as from Redis.
        # The same command line again, not waited for (Daemon waits for PONG).
        log = open(os.path.join(self.dir, "second.log"), "w")
        p2 = subprocess.Popen(d.args, stdout=log, stderr=subprocess.STDOUT)

        def stop2():
            if p2.poll() is None:
                p2.terminate()
                p2.wait(timeout=30)
        self.addCleanup(stop2)
        r = redis.Redis(port=d.port)
        seen_loading = info_loading = False
        dump_refused = None
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                if r.ping():
                    break
            except redis.BusyLoadingError:
                seen_loading = True
                info = redis.Redis(port=d.port).info("persistence")
                info_loading = info_loading or info.get("loading") == 1
                if dump_refused is None:
                    # `--dump` of a server still loading is refused, not
                    # taken for an empty one (modules/db/backup_tool.cc Open).
                    p = subprocess.run([BIN, "--dump", os.path.join(self.dir, "dump"), "--port", str(d.port)],
                                       capture_output=True, text=True, timeout=60)
                    try:
                        redis.Redis(port=d.port).ping()
                    except redis.BusyLoadingError:
                        dump_refused = (p.returncode, "LOADING" in p.stderr, p.stderr[-200:])
            except redis.ConnectionError:
                pass  # not bound yet, or the loading door closed as the workers took over
            time.sleep(0.005)
        with open(os.path.join(self.dir, "second.log")) as f:
            second_log = f.read()
        self.assertTrue(seen_loading, "no -LOADING while %s" % second_log[-300:])
        self.assertTrue(info_loading)
        self.assertIsNotNone(dump_refused, "the replay ended before --dump was tried: no check")
        self.assertEqual(dump_refused[:2], (1, True), dump_refused[2])
        self.assertEqual(r.info("persistence")["loading"], 0)
        self.assertGreater(r.dbsize(), 1400000)
        self.assertIn("WAL replay: ", second_log)
        stop2()
        self.assertEqual(p2.returncode, 0)

    def test_turning_the_wal_off_keeps_what_it_logged(self):
        # Regression (review, session 9): with fsync = off the WAL was not
        # replayed, so a restart with the WAL turned off dropped every write
        # since the last snapshot.
        d = self.daemon()
        r = redis.Redis(port=d.port)
        for i in range(200):
            r.set("kept:%d" % i, i)
        kill9_all(d)
        d2 = self.daemon(fsync="off")
        self.assertEqual(redis.Redis(port=d2.port).get("kept:199"), b"199")
        self.assertIn("WAL replay: 200 record(s)", d2.read_log())

    def test_a_stalled_wal_refuses_writes_and_keeps_the_worker_serving(self):
        # The WAL process stopped (SIGSTOP): the ring fills, writes are
        # refused with an error (nothing applied), reads and PING are still
        # answered at once; when it runs again, writes are accepted again.
        d = self.daemon(fsync="everysec", extra=["wal.ring_mb=1", "daemon.workers=1"])
        r = redis.Redis(port=d.port, socket_timeout=20)
        r.set("before", "1")
        wal = pids_named(d, "pc-wal")
        self.assertEqual(len(wal), 1)
        os.kill(wal[0], signal.SIGSTOP)
        try:
            refused = None
            for i in range(20000):
                try:
                    r.set("fill:%d" % i, "z" * 200)
                except redis.ResponseError as e:
                    refused = (i, str(e))
                    break
            self.assertIsNotNone(refused, "a 1 MiB ring took 4 MB without a refusal")
            self.assertIn("not keeping up", refused[1])
            self.assertIsNone(r.get("fill:%d" % refused[0]), "a refused write changed nothing")
            t0 = time.time()
            for _ in range(20):
                with self.assertRaises(redis.ResponseError):
                    r.set("more", "x")  # refused at once while the WAL stalls (a back-off, not 100 ms each)
                self.assertTrue(r.ping())
                self.assertEqual(r.get("before"), b"1")
            self.assertLess(time.time() - t0, 3.0, "the worker's loop waited on the stalled WAL")
        finally:
            os.kill(wal[0], signal.SIGCONT)
        deadline = time.time() + 10
        while True:
            try:
                r.set("after", "ok")
                break
            except redis.ResponseError:
                if time.time() > deadline:
                    raise
                time.sleep(0.1)
        self.assertGreater(r.info("persistence")["wal_refused_writes"], 0)

    def test_P_probes_the_disk_and_recommends(self):
        p = subprocess.run([BIN, "-P", self.dir], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"p50 [\d.]+ ms, p99 [\d.]+ ms")
        self.assertRegex(p.stdout, r"sustained write: \d+ MB/s")
        self.assertRegex(p.stdout, r"fsync = (always|everysec)\n  ring_mb = \d+")
        self.assertEqual(os.listdir(self.dir), [], "the probe leaves nothing behind")
        bad = subprocess.run([BIN, "-P", self.dir + "/missing"], capture_output=True, text=True, timeout=60)
        self.assertEqual(bad.returncode, 1)
        self.assertIn("missing", bad.stderr)

    def test_mi_wal_status_and_info(self):
        d = self.daemon()
        r = redis.Redis(port=d.port)
        r.set("x", "1")
        from test_db import mi
        st = mi(d, "wal_status")["result"]
        self.assertEqual(st["enabled"], "yes")
        self.assertEqual(st["fsync"], "always")
        self.assertEqual(st["status"], "ok")
        self.assertGreaterEqual(st["records_written"], 1)
        self.assertGreaterEqual(st["fsyncs"], 1)
        info = r.info("persistence")
        self.assertEqual(info["aof_enabled"], 1)
        self.assertEqual(info["aof_last_write_status"], "ok")
        self.assertEqual(info["wal_fsync"], "always")
        self.assertGreaterEqual(info["wal_records_written"], 1)


if __name__ == "__main__":
    unittest.main()
