# perfcached — memory that never calcifies (issue 10): memory freed by
# FLUSHALL / DEL must serve values of another size, and show in used_memory.
# Copyright (c) 2026 the perfcached authors.
"""Acceptance test of issue 10. A small arena is filled with values of one
size until the daemon answers -OOM, emptied (FLUSHALL, or DEL of every key),
and filled again with values of ANOTHER size: the second fill must store
(nearly) as many keys as the same fill does on a fresh daemon. And after
FLUSHALL, INFO memory used_memory must fall back.

  cd test/integration && /usr/bin/python3 -m unittest -v test_memory
"""
import socket
import time
import unittest

import redis

from harness import Daemon, encode

ARENA_MB = 64        # small arena: a fill to -OOM takes a few seconds
BATCH = 1000         # SETs per pipelined batch
CAP = 2000000        # no fill loop ever sends more SETs than this
SMALL = 100          # value sizes of the two fills
LARGE = 1000
RATIO = 0.90         # a refill after emptying must reach this share of a fresh fill

# Database 0 of the refill tests is one collection pre-sized to 2^17 buckets
# (8 MiB of index, room for 524,288 keys at the default load of 4, more than
# a 64 MiB arena holds): its index never grows or shrinks, so both phases
# compare slab memory only, and the fill stays fast. (With a growing table,
# a pipelined fill outruns the timer's splits, chains land in the overflow
# list and 400,000 SETs take 60-130 s instead of under 1 s.)
PRESIZED = "[collection main]\nbuckets_log2 = 17\n[listen]\nresp_collections = 0:main\n"


def value(i, size):
    """A value of exactly `size` bytes that says which key it belongs to."""
    head = b"%d:" % i
    return head + b"v" * (size - len(head))


class FillResult:
    def __init__(self):
        self.stored = 0        # SETs answered +OK
        self.first_oom = None  # index of the first SET answered -OOM
        self.errors = []       # replies other than +OK / -OOM (first few)


def fill(port, prefix, size, cap=CAP, stop_after=None):
    """SETs <prefix><i> to value(i, size) for i = 0, 1, ... in pipelined
    batches of BATCH over a raw socket, until the first -OOM reply (the batch
    that holds it is finished, nothing after it is sent), `stop_after` keys
    are stored, or `cap` SETs went out. Every SET reply is one line."""
    res = FillResult()
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    try:
        buf = b""
        i = 0
        while i < cap and res.first_oom is None:
            n = min(BATCH, cap - i)
            if stop_after is not None:
                n = min(n, stop_after - res.stored)
                if n <= 0:
                    break
            s.sendall(b"".join(encode("SET", b"%s%d" % (prefix, j), value(j, size))
                               for j in range(i, i + n)))
            lines = []
            while len(lines) < n:
                chunk = s.recv(1 << 16)
                if not chunk:
                    raise ConnectionError("daemon closed the connection during a fill")
                buf += chunk
                parts = buf.split(b"\r\n")
                buf = parts.pop()
                lines.extend(parts)
            if len(lines) != n:
                raise AssertionError("%d replies to %d SETs" % (len(lines), n))
            for k, line in enumerate(lines):
                if line == b"+OK":
                    res.stored += 1
                elif line.startswith(b"-OOM"):
                    if res.first_oom is None:
                        res.first_oom = i + k
                elif len(res.errors) < 5:
                    res.errors.append(line)
            i += n
    finally:
        s.close()
    return res


def used_memory(r):
    return int(r.info("memory")["used_memory"])


class MemoryReuse(unittest.TestCase):
    def setUp(self):
        self.daemons = []

    def tearDown(self):
        codes = [(d.stop(), d) for d in self.daemons]  # every one stopped before any assert
        for rc, d in codes:
            self.assertEqual(rc, 0, d.read_log()[-2000:])

    def start(self, config=None):
        d = Daemon(workers=1, arena_mb=ARENA_MB, config=config)
        self.daemons.append(d)
        return d, redis.Redis(host="127.0.0.1", port=d.port, socket_timeout=30)

    def stop(self, d):
        self.daemons.remove(d)
        self.assertEqual(d.stop(), 0, d.read_log()[-2000:])

    def fill_to_oom(self, d, r, prefix, size):
        """A fill that must end on -OOM with no other error; checks DBSIZE."""
        res = fill(d.port, prefix, size)
        self.assertEqual(res.errors, [], "unexpected replies during the fill")
        self.assertIsNotNone(res.first_oom, "a %d MiB arena took %d SETs of %d bytes without -OOM"
                             % (ARENA_MB, CAP, size))
        self.assertEqual(r.dbsize(), res.stored)
        return res

    def spot_check(self, r, prefix, size, res):
        """A few of the stored values read back intact (the fill stored keys
        0 .. first_oom-1 for sure; later ones in the OOM batch maybe)."""
        last = res.first_oom - 1
        for i in sorted({0, 1, last // 3, last // 2, (2 * last) // 3, last - 1, last}):
            if i < 0:
                continue
            self.assertEqual(r.get(b"%s%d" % (prefix, i)), value(i, size), "key %d" % i)

    def fresh_small_fill(self):
        """Phase A: how many SMALL values a fresh daemon of the same config takes."""
        d, r = self.start(PRESIZED)
        res = self.fill_to_oom(d, r, b"s:", SMALL)
        self.assertGreater(res.stored, 1000, "a fresh %d MiB arena took few %d-byte values"
                           % (ARENA_MB, SMALL))
        self.spot_check(r, b"s:", SMALL, res)
        r.close()
        self.stop(d)
        return res.stored

    def refill_after(self, empty):
        """Phase B: fill LARGE values to -OOM, empty the database with
        empty(r, res), then fill SMALL values to -OOM; returns both counts."""
        n_fresh = self.fresh_small_fill()
        d, r = self.start(PRESIZED)
        big = self.fill_to_oom(d, r, b"b:", LARGE)
        empty(r, big)
        self.assertEqual(r.dbsize(), 0)
        self.assertIsNone(r.get(b"b:0"))
        res = self.fill_to_oom(d, r, b"s:", SMALL)
        n_after = res.stored
        self.assertEqual(r.dbsize(), n_after)
        msg = ("fresh daemon stored N_fresh=%d %d-byte values; after %d %d-byte values were "
               "stored and removed, it stored N_after=%d (%.1f%%, need >= %.0f%%)"
               % (n_fresh, SMALL, big.stored, LARGE, n_after, 100.0 * n_after / n_fresh,
                  100 * RATIO))
        print("\n  " + msg)
        self.assertGreaterEqual(n_after, RATIO * n_fresh, msg)
        self.spot_check(r, b"s:", SMALL, res)
        r.close()

    def test_flushall_frees_memory_for_other_sizes(self):
        def empty(r, big):
            self.assertTrue(r.flushall())
        self.refill_after(empty)

    def test_del_frees_memory_for_other_sizes(self):
        def empty(r, big):
            keys = [b"b:%d" % i for i in range(big.first_oom)]
            deleted = 0
            for k in range(0, len(keys), BATCH):
                deleted += r.delete(*keys[k:k + BATCH])
            # keys after the first -OOM of the batch that held it, if any got in
            deleted += r.delete(*[b"b:%d" % i for i in range(big.first_oom, big.first_oom + BATCH)])
            self.assertEqual(deleted, big.stored)
        self.refill_after(empty)

    def test_used_memory_drops_after_del(self):
        # the default collections: ~20,000 keys grow the index little. The
        # figure is taken after FLUSHALL (the refill tests cover DEL).
        d, r = self.start()
        base = used_memory(r)
        want = 20 << 20  # ~20 MiB of values
        res = fill(d.port, b"m:", LARGE, stop_after=want // LARGE)
        self.assertEqual(res.errors, [])
        self.assertIsNone(res.first_oom, "20 MiB did not fit in a %d MiB arena" % ARENA_MB)
        self.assertEqual(r.dbsize(), want // LARGE)
        filled = used_memory(r)
        self.assertGreaterEqual(filled - base, want, "used_memory did not count the values")
        self.assertTrue(r.flushall())
        self.assertEqual(r.dbsize(), 0)
        # the daemon may give memory back on its timer tick: wait for it, bounded
        after = used_memory(r)
        deadline = time.time() + 3
        while after >= filled // 2 and time.time() < deadline:
            time.sleep(0.1)
            after = used_memory(r)
        r.close()
        msg = ("used_memory: %d before the fill, %d after ~20 MiB of %d-byte values, %d after "
               "FLUSHALL (need < 50%% of the filled figure, %d)"
               % (base, filled, LARGE, after, filled // 2))
        print("\n  " + msg)
        self.assertLess(after, filled // 2, msg)



class MemoryCommand(unittest.TestCase):
    """MEMORY USAGE / STATS / DOCTOR / PURGE / HELP and INFO memory figures."""

    def setUp(self):
        self.d = Daemon(workers=1, arena_mb=ARENA_MB)
        self.r = redis.Redis(host="127.0.0.1", port=self.d.port, socket_timeout=30)

    def tearDown(self):
        self.r.close()
        self.assertEqual(self.d.stop(), 0, self.d.read_log()[-2000:])

    def test_usage_of_strings_and_aggregates(self):
        r = self.r
        r.set("s", b"x" * 100)
        n = r.memory_usage("s")
        # a 20-byte header + 1-byte key + 100-byte value in a 128-byte cell, and a slot
        self.assertTrue(121 <= n <= 160, n)
        self.assertIsNone(r.memory_usage("absent"))
        r.set("big", b"y" * 100000)
        self.assertTrue(100000 <= r.memory_usage("big") <= 100000 * 1.13, r.memory_usage("big"))
        # a tree-encoded hash: sampled estimate near the exact walk (SAMPLES 0)
        r.hset("h", mapping={b"f%d" % i: b"v" * 80 for i in range(3000)})
        self.assertEqual(r.object("encoding", "h"), b"hashtable")
        exact = r.memory_usage("h", samples=0)
        est = r.memory_usage("h")
        self.assertGreater(exact, 3000 * 80)
        self.assertTrue(0.5 * exact <= est <= 2 * exact, (exact, est))
        r.sadd("st", *[b"m%d" % i for i in range(10)])
        self.assertTrue(0 < r.memory_usage("st") < 1000)
        with self.assertRaisesRegex(redis.ResponseError, "syntax error"):
            r.execute_command("MEMORY", "USAGE", "s", "SAMPLES", "-1")
        with self.assertRaisesRegex(redis.ResponseError, "syntax error"):
            r.execute_command("MEMORY", "USAGE", "s", "FOO")
        with self.assertRaisesRegex(redis.ResponseError, "not an integer"):
            r.execute_command("MEMORY", "USAGE", "s", "SAMPLES", "x")

    def test_stats_doctor_purge_help(self):
        r = self.r
        for i in range(1000):
            r.set("k%d" % i, b"v" * 50)
        st = r.execute_command("MEMORY", "STATS")
        stats = {st[i].decode(): st[i + 1] for i in range(0, len(st), 2)}
        self.assertEqual(stats["keys.count"], 1000)
        used = int(r.info("memory")["used_memory"])
        self.assertTrue(abs(stats["total.allocated"] - used) < (1 << 20), (stats, used))
        self.assertGreater(stats["dataset.bytes"], 1000 * 50)
        self.assertGreater(float(stats["fragmentation"]), 0)
        doc = r.execute_command("MEMORY", "DOCTOR")
        self.assertTrue(isinstance(doc, bytes) and len(doc) > 20, doc)
        self.assertEqual(r.execute_command("MEMORY", "PURGE"), b"OK")
        self.assertIn(b"Stats not supported", r.execute_command("MEMORY", "MALLOC-STATS"))
        self.assertIn(b"    Prints this help.", r.execute_command("MEMORY", "HELP"))
        with self.assertRaisesRegex(redis.ResponseError, "unknown subcommand"):
            r.execute_command("MEMORY", "FOO")
        with self.assertRaisesRegex(redis.ResponseError, "wrong number of arguments"):
            r.execute_command("MEMORY", "STATS", "x")
        info = r.info("memory")
        for k in ("used_memory", "used_memory_rss", "mem_fragmentation_ratio", "maxmemory"):
            self.assertIn(k, info)


if __name__ == "__main__":
    unittest.main()
