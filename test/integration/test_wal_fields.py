"""Field-level WAL records (issue 11): a write to a large hash or set logs
the fields it changed, not the whole aggregate, so an aggregate larger than
[wal] ring_mb can be written with the WAL on, and a crash gives back exactly
what memory held while writers on every worker raced on the same keys (the
rings are merged in any order: db/wal_apply.h). Real daemon, real files,
redis-py, kill -9."""
import json
import os
import random
import re
import shutil
import subprocess
import tempfile
import threading
import time
import unittest

import redis

from harness import BIN, Daemon, key_state, mi_fifo_raw, wait_for_path, wal_expire_records, wal_fields_records
from test_snapshot import kill9_all


def state(port, db=0):
    """Every key with its type, value and absolute expiry time."""
    return key_state(port, db, expiry="abs")


def merged_keys(log):
    m = re.findall(r"(\d+) key\(s\) merged by field", log)
    return int(m[-1]) if m else 0


class WalFields(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="perfcached-walf-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def daemon(self, extra=(), fsync="always", ring_mb=1):
        d = Daemon(arena_mb=256, overrides=["wal.dir=%s/data" % self.dir, 'wal.save=""', "wal.fsync=" + fsync,
                                            "wal.ring_mb=%d" % ring_mb] + list(extra))
        self.addCleanup(d.stop)
        return d

    def fill(self, r, key, n, hash_=True, width=100):
        # One write at a time: a pipeline of 20 KB writes would fill the
        # 1 MiB ring faster than fsync = always drains it (refused, by design).
        for i in range(0, n, 200):
            if hash_:
                r.hset(key, mapping={"f%d" % j: "v%d" % j + "x" * width for j in range(i, min(n, i + 200))})
            else:
                r.sadd(key, *["m%d" % j + "y" * width for j in range(i, min(n, i + 200))])

    def test_an_aggregate_larger_than_the_ring_is_written_and_kept(self):
        d = self.daemon()
        r = redis.Redis(port=d.port)
        # 30,000 fields of about 110 B: 3.3 MB, the ring is 1 MiB. Before
        # field records the second HSET could not be logged.
        self.fill(r, "big", 30000)
        self.fill(r, "bigset", 30000, hash_=False)
        w0 = r.info("persistence")["wal_bytes_written"]
        for i in range(100):
            r.hset("big", "f%d" % i, "changed%d" % i)
            r.srem("bigset", "m%d" % i + "y" * 100)
        self.assertEqual(r.hincrby("big", "counter", 5), 5)
        grew = r.info("persistence")["wal_bytes_written"] - w0
        self.assertLess(grew, 201 * 400, "201 writes of one field logged %d bytes" % grew)
        before = state(d.port)
        kill9_all(d)
        self.assertGreaterEqual(wal_fields_records(self.dir + "/data"), 201)
        d2 = self.daemon()
        self.assertEqual(state(d2.port), before)
        self.assertEqual(merged_keys(d2.read_log()), 2)

    def test_an_expiry_of_an_aggregate_larger_than_the_ring_is_logged_alone(self):
        d = self.daemon()
        r = redis.Redis(port=d.port)
        self.fill(r, "big", 30000)
        self.fill(r, "bigset", 30000, hash_=False)
        w0 = r.info("persistence")["wal_bytes_written"]
        # Before expire records each of these logged the 3.3 MB aggregate
        # whole, and a 1 MiB ring refused them.
        self.assertTrue(r.pexpire("big", 3000))             # T1: passes before the restart
        self.assertFalse(r.expire("big", 1000, nx=True))    # has one: nothing changes, nothing logged
        self.assertTrue(r.expire("bigset", 100000))
        self.assertTrue(r.persist("bigset"))
        self.assertFalse(r.persist("bigset"))
        self.assertTrue(r.expire("big", 100000, gt=True))   # T2: moved on
        grew = r.info("persistence")["wal_bytes_written"] - w0
        self.assertLess(grew, 1024, "four expiry changes logged %d bytes" % grew)
        before = state(d.port)
        self.assertGreater(before[b"big"][2], 0)
        kill9_all(d)
        self.assertEqual(wal_expire_records(self.dir + "/data"), 4)
        time.sleep(3.2)  # T1 has passed: replay must not end the hash's life there
        d2 = self.daemon()
        r2 = redis.Redis(port=d2.port)
        self.assertEqual(state(d2.port), before)
        self.assertEqual(r2.hlen("big"), 30000)
        self.assertEqual(r2.ttl("bigset"), -1)
        # MI perf_ttl takes the same road: one expire record per key.
        w1 = r2.info("persistence")["wal_bytes_written"]
        wait_for_path(d2.fifo)
        req = {"jsonrpc": "2.0", "id": 1, "method": "perf_ttl", "params": {"glob": "big*", "ttl": 5000}}
        out = json.loads(mi_fifo_raw(d2.fifo, d2.workdir, json.dumps(req).encode()))
        self.assertEqual(out["result"]["updated"], 2, out)
        self.assertLess(r2.info("persistence")["wal_bytes_written"] - w1, 1024)

    def test_a_single_write_larger_than_the_ring_is_logged_in_parts(self):
        # ring_mb = 1: every write below logs a record of 2-3 MB. Before
        # part records each was applied, then its connection closed with no
        # reply (not acknowledged, and not logged: later fields records of
        # the key built on a state without it).
        d = self.daemon()
        r = redis.Redis(port=d.port, socket_timeout=60)
        self.fill(r, "big", 30000)
        self.fill(r, "bigset", 30000, hash_=False)
        many = {"g%d" % j: "w%d" % j + "z" * 200 for j in range(10000)}   # 2.1 MB of fields, one HSET
        self.assertEqual(r.hset("big", mapping=many), 10000)               # a fields record, in parts
        self.assertEqual(r.sadd("bigset", *["n%d" % j + "q" * 200 for j in range(10000)]), 10000)
        self.assertTrue(r.set("blob", os.urandom(3 << 20)))                 # a 3 MiB put record
        self.assertEqual(r.hset("fresh", mapping=many), 10000)             # makes the key: a whole record
        r.hset("big", "after", "1")                                         # a small write after them
        before = state(d.port)
        kill9_all(d)
        p = subprocess.run([BIN, "-W", self.dir + "/data"], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        m = re.search(r"(\d+) joined from (\d+) part\(s\)", p.stdout)
        self.assertTrue(m, p.stdout)
        self.assertEqual(int(m.group(1)), 4, p.stdout)
        self.assertGreaterEqual(int(m.group(2)), 4 * 4)  # 2-3 MB in parts of at most 256 KiB
        d2 = self.daemon()
        self.assertEqual(state(d2.port), before)
        r2 = redis.Redis(port=d2.port)
        self.assertEqual(r2.hlen("big"), 40001)
        self.assertEqual(r2.scard("bigset"), 40000)

    def drained(self, r):
        """Wait until every ring is written into a segment (a kill -9 of the
        processes keeps what the page cache holds)."""
        for _ in range(100):
            if r.info("persistence")["wal_pending_bytes"] == 0:
                return
            time.sleep(0.05)
        self.fail("the WAL did not drain")

    def test_racing_writers_on_every_worker_then_a_crash_gives_back_memory(self):
        # everysec: the WAL process drains large batches, so records of one
        # field from two workers land in the segments out of version order
        # thousands of times (always holds each reply: a few hundred).
        d = self.daemon(fsync="everysec", ring_mb=8)
        r = redis.Redis(port=d.port)
        # Small listpack limits: a key deleted and made again is soon a
        # tree, written by field, again (a listpack is logged whole).
        for name in ("hash-max-listpack-entries", "set-max-listpack-entries", "set-max-intset-entries"):
            r.config_set(name, 8)
        keys = ["h%d" % i for i in range(3)] + ["s%d" % i for i in range(3)]
        for k in keys:
            self.fill(r, k, 600, hash_=k[0] == "h", width=10)
        stop = threading.Event()
        burst = threading.Event()
        errors = []
        done = [0]

        def writer(n):
            c = redis.Redis(port=d.port)
            rng = random.Random(n)
            i = 0
            while not stop.is_set():
                k = rng.choice(keys)
                op = rng.random()
                if burst.is_set():
                    # The end: every connection writes the same few fields,
                    # so their last records interleave across the rings.
                    try:
                        if k[0] == "h":
                            c.hincrby(k, "n%d" % rng.randrange(3), 1)
                        elif op < 0.5:
                            c.sadd(k, "b%d" % rng.randrange(3))
                        else:
                            c.srem(k, "b%d" % rng.randrange(3))
                    except redis.ResponseError as e:
                        if "WRONGTYPE" not in str(e):
                            errors.append(str(e))
                    i += 1
                    continue
                f = "f%d" % rng.randrange(700)
                try:
                    if k[0] == "h":
                        if op < 0.5:
                            c.hset(k, f, "w%d:%d" % (n, i))
                        elif op < 0.7:
                            c.hdel(k, f, "f%d" % rng.randrange(700))
                        elif op < 0.85:
                            c.hincrby(k, "n%d" % rng.randrange(5), 1)
                        elif op < 0.9:
                            c.expire(k, 1000 + rng.randrange(1000))
                        elif op < 0.95:
                            c.persist(k)
                        elif op < 0.97:
                            c.delete(k)
                        elif op < 0.98:
                            # A new life of the other type (WRONGTYPE for
                            # the other writers meanwhile).
                            c.delete(k)
                            c.sadd(k, *["t%d" % j for j in range(rng.randrange(1, 40))])
                        else:
                            c.hset(k, mapping={"f%d" % j: "r%d" % i for j in range(rng.randrange(1, 300))})
                    else:
                        if op < 0.5:
                            c.sadd(k, f, "%d" % rng.randrange(100))
                        elif op < 0.75:
                            c.srem(k, f, "%d" % rng.randrange(100))
                        elif op < 0.85:
                            c.spop(k)
                        elif op < 0.9:
                            c.smove(k, rng.choice(keys[3:]), f)
                        elif op < 0.95:
                            c.expire(k, 1000)
                        elif op < 0.97:
                            c.delete(k)
                        elif op < 0.98:
                            c.delete(k)
                            c.hset(k, mapping={"t%d" % j: i for j in range(rng.randrange(1, 40))})
                        else:
                            c.sadd(k, *["m%d" % j for j in range(rng.randrange(1, 300))])
                except redis.ResponseError as e:
                    if "WRONGTYPE" not in str(e):
                        errors.append(str(e))
                i += 1
            done[0] += i

        # Enough connections that both workers take some.
        threads = [threading.Thread(target=writer, args=(n,)) for n in range(6)]
        for t in threads:
            t.start()
        time.sleep(1.5)
        # A snapshot taken while they race: recovery loads it, then replays
        # the tail from the position where its walk began.
        r.bgsave()
        time.sleep(1.5)
        burst.set()
        time.sleep(1)
        stop.set()
        for t in threads:
            t.join(timeout=30)
        self.assertEqual(errors, [])
        self.assertGreater(done[0], 2000, "the writers wrote too little to mean anything")
        before = state(d.port)
        self.assertGreater(len(before), 0)
        self.drained(r)
        self.assertEqual(r.info("persistence")["rdb_bgsave_in_progress"], 0)
        kill9_all(d)
        nf = wal_fields_records(self.dir + "/data")
        # About 0.4 of the writes are fields records in three runs.
        self.assertGreater(nf, done[0] // 5, "%d writes, %d fields records" % (done[0], nf))
        d2 = self.daemon(fsync="everysec", ring_mb=8)
        after = state(d2.port)
        for k in sorted(set(before) | set(after)):
            self.assertEqual(after.get(k), before.get(k), "key %r after the restart" % k)
        log = d2.read_log()
        self.assertIn("recovered", log)  # from the snapshot
        self.assertGreater(merged_keys(log), 0)
        self.assertNotIn("WAL replay: collection", log)  # no record failed to apply
        # A second crash after more writes: the merged keys' versions stay
        # above everything logged (new writes win at the next replay).
        r2 = redis.Redis(port=d2.port)
        for k in keys:
            if r2.type(k) == b"set":
                r2.sadd(k, "after-crash")
            else:
                r2.hset(k, "after", "crash")
        before2 = state(d2.port)
        self.drained(r2)
        kill9_all(d2)
        d3 = self.daemon(fsync="everysec", ring_mb=8)
        self.assertEqual(state(d3.port), before2)


if __name__ == "__main__":
    unittest.main()
