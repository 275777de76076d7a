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
import json
import os
import random
import signal
import socket
import subprocess
import threading
import time
import unittest

import redis

from harness import BIN, Daemon, encode, free_port, http_request, mi_datagram_raw, mi_fifo_raw, wait_for_path

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
        # the peak remembers the fill; the allocator figures are there
        r = redis.Redis(host="127.0.0.1", port=d.port, socket_timeout=30)
        info = r.info("memory")
        r.close()
        self.assertGreaterEqual(int(info["used_memory_peak"]), filled)
        self.assertLessEqual(int(info["allocator_allocated"]), int(info["allocator_active"]))
        self.assertEqual(info["mem_allocator"], "perfcached-slab")



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

    def test_mem_shm_dump_reports_each_class(self):
        # MI mem_shm_dump: per slab class, cells = used (live + claimed by a
        # process's private stack) + free, waste = page bytes not in cells;
        # the class of a 100-byte value's record holds the 5,000 written
        def classes():
            return {c["cell"]: c for c in mi_call(self.d, "mem_shm_dump")["slab_classes"]}
        before = classes()
        p = self.r.pipeline(transaction=False)
        for i in range(5000):
            p.set("m:%04d" % i, b"v" * 100)
        p.execute()
        after = classes()
        for c in after.values():
            self.assertEqual(c["cells"], c["used"] + c["free"], c)
            self.assertEqual(c["waste_bytes"], c["page_bytes"] - c["cells"] * c["cell"], c)
            self.assertGreaterEqual(c["pages"], 1, c)
        grew = {cell: after[cell]["used"] - before.get(cell, {"used": 0})["used"] for cell in after}
        cell = max(grew, key=grew.get)
        self.assertGreaterEqual(cell, 20 + 6 + 100)  # the record: header, key, value
        self.assertGreaterEqual(grew[cell], 5000, grew)
        self.r.delete(*["m:%04d" % i for i in range(5000)])
        self.assertLessEqual(classes()[cell]["used"], after[cell]["used"] - 4000)

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



OOM_MSG = "OOM command not allowed when used memory > 'maxmemory'."


class LargeValues(unittest.TestCase):
    """Issue 10 part 3: values above the largest class (256 KiB) take runs of
    32 KiB units, at most 1/8 wasted, packed into shared groups; a value
    spanning groups reads back whole; FLUSHALL gives every group back."""

    KIB300 = 300 << 10

    def setUp(self):
        self.d = Daemon(workers=1, arena_mb=ARENA_MB)
        self.r = redis.Redis(host="127.0.0.1", port=self.d.port, socket_timeout=30)

    def tearDown(self):
        self.r.close()
        self.assertEqual(self.d.stop(), 0, self.d.read_log()[-2000:])

    def fill(self, prefix, size, cap=2000):
        """SETs of `size` bytes until -OOM; returns how many were stored."""
        n = 0
        while n < cap:
            try:
                self.r.set(b"%s%d" % (prefix, n), value(n, size))
            except redis.ResponseError as e:
                self.assertIn("OOM", str(e))
                return n
            n += 1
        self.fail("%d SETs of %d bytes fitted in a %d MiB arena" % (cap, size, ARENA_MB))

    def test_300k_values_pack_with_at_most_an_eighth_wasted(self):
        r = self.r
        stored = self.fill(b"L:", self.KIB300)
        dump = mi_call(self.d, "mem_shm_dump")
        large = dump["large"]
        groups = dump["groups_2mb"]
        msg = ("%d values of 300 KiB in a %d MiB arena; large: %s; groups: %s"
               % (stored, ARENA_MB, large, groups))
        print("\n  " + msg)
        self.assertEqual(r.dbsize(), stored)
        self.assertEqual(large["objects"], stored, msg)
        # each record (header, key, 300 KiB) in 10 units of 32 KiB: 1/15 waste
        self.assertEqual(dump["large_bytes"], stored * 10 * 32768, msg)
        self.assertLessEqual(dump["large_bytes"] - stored * self.KIB300, stored * self.KIB300 // 8, msg)
        # packed: the arena's large groups have no hole a value would fit in
        self.assertLess(large["free_bytes"], 10 * 32768, msg)
        # whole 2 MiB groups (the old path) held one value each: 6x fewer
        self.assertGreaterEqual(stored, 6 * large["groups"] - 1, msg)
        for i in sorted({0, 1, stored // 2, stored - 1}):
            self.assertEqual(r.get(b"L:%d" % i), value(i, self.KIB300), "key %d" % i)
        usage = r.memory_usage(b"L:0")
        self.assertTrue(self.KIB300 <= usage <= self.KIB300 * 9 // 8, usage)
        # FLUSHALL: every large group goes back, for any use
        self.assertTrue(r.flushall())
        dump = mi_call(self.d, "mem_shm_dump")
        self.assertEqual(dump["large"]["groups"], 0, dump["large"])
        self.assertEqual(dump["large_objects"], 0)
        self.assertGreaterEqual(self.fill(b"s:", 1000, cap=200000), 0.9 * stored * self.KIB300 / 1100)

    def test_values_spanning_groups_read_back_whole(self):
        r = self.r
        sizes = [(256 << 10) + 1, 3 << 20, (1 << 20) + 7, (5 << 20) + 3, 290 << 10]
        for i, n in enumerate(sizes):
            self.assertTrue(r.set(b"S:%d" % i, value(i, n)))
        for i, n in enumerate(sizes):
            self.assertEqual(r.get(b"S:%d" % i), value(i, n), "size %d" % n)
            self.assertEqual(r.strlen(b"S:%d" % i), n)
        # overwrite with another size, delete some: the rest stay whole
        r.set(b"S:1", value(9, 700 << 10))
        r.delete(b"S:0", b"S:3")
        self.assertEqual(r.get(b"S:1"), value(9, 700 << 10))
        self.assertEqual(r.get(b"S:2"), value(2, (1 << 20) + 7))
        self.assertEqual(r.get(b"S:4"), value(4, 290 << 10))
        self.assertEqual(mi_call(self.d, "mem_shm_dump")["large"]["objects"], 3)


    def test_kill9_of_workers_while_writing_large_values_loses_nothing(self):
        """Writers SET (and DEL) values of 257 KiB .. 2.5 MiB on both workers;
        three workers are killed mid-write. Every key then holds its last
        acknowledged value or one written after it (in flight at the kill),
        whole; the live audit is clean; at most one object per kill leaked."""
        self.r.close()
        self.assertEqual(self.d.stop(), 0)
        self.d = Daemon(workers=2, arena_mb=256)
        self.r = redis.Redis(host="127.0.0.1", port=self.d.port, socket_timeout=30)
        d = self.d
        sizes = [(256 << 10) + 1, 300 << 10, 700 << 10, (1 << 20) + 3, (2 << 20) + (512 << 10)]
        possible = {}   # key -> values it may hold: the last acknowledged, and later attempts
        lock = threading.Lock()
        stop = threading.Event()

        def writer(n):
            c, i = None, 0
            while not stop.is_set():
                k = b"LW%d:%d" % (n, i % 12)
                v = None if i % 7 == 6 else value(n * 1000000 + i, sizes[(i * 3 + n) % len(sizes)])
                with lock:
                    possible.setdefault(k, {None}).add(v)
                try:
                    if c is None:
                        c = redis.Redis(host="127.0.0.1", port=d.port, socket_timeout=5)
                    ok = c.delete(k) >= 0 if v is None else c.set(k, v)
                    if ok:
                        with lock:
                            possible[k] = {v}
                except redis.ResponseError:
                    time.sleep(0.01)  # refused (-OOM, -LOADING): not acknowledged
                except (redis.ConnectionError, redis.TimeoutError, ConnectionError):
                    c = None  # its worker died: not acknowledged
                    time.sleep(0.01)
                i += 1

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        kills = 0
        try:
            for _ in range(3):
                time.sleep(0.7)
                workers = d.worker_pids()
                os.kill(workers[kills % len(workers)], signal.SIGKILL)
                kills += 1
                end = time.time() + 30
                while len(d.worker_pids()) < 2 and time.time() < end:
                    time.sleep(0.1)
            time.sleep(0.5)
        finally:
            stop.set()
            for t in threads:
                t.join(timeout=30)
        bad = []
        for k, vals in sorted(possible.items()):
            got = self.r.get(k)
            if got not in vals:
                bad.append((k, None if got is None else len(got)))
        self.assertEqual(bad, [], "keys holding a value never written or torn")
        chk = mi_call(d, "perf_check")
        self.assertTrue(chk["clean"], chk)
        live = sum(1 for k in possible if self.r.exists(k))
        objects = mi_call(d, "mem_shm_dump")["large"]["objects"]
        print("\n  kill -9 x%d while writing large values: %d keys, %d live, %d large objects"
              % (kills, len(possible), live, objects))
        self.assertGreaterEqual(objects, live)
        self.assertLessEqual(objects, live + kills)


class ClientMemory(unittest.TestCase):
    """maxmemory-clients and maxmemory-eviction-tenacity (Redis 7): the
    largest clients are closed while all clients' buffers take more than
    the limit; CLIENT NO-EVICT exempts one (session 23)."""

    def setUp(self):
        self.hp = free_port()
        self.d = Daemon(workers=2, arena_mb=ARENA_MB, overrides=("listen.http=127.0.0.1:%d" % self.hp,))
        self.r = redis.Redis(host="127.0.0.1", port=self.d.port, socket_timeout=30)
        self.socks = []

    def tearDown(self):
        for s in self.socks:
            s.close()
        self.r.close()
        self.assertEqual(self.d.stop(), 0, self.d.read_log()[-2000:])

    def big_partial_command(self, no_evict=False, mb=6):
        """A raw client that sends `mb` MiB of a SET whose value never ends."""
        s = socket.create_connection(("127.0.0.1", self.d.port), timeout=10)
        self.socks.append(s)
        if no_evict:
            s.sendall(encode("CLIENT", "NO-EVICT", "on"))
            self.assertEqual(s.recv(100), b"+OK\r\n")
            s.sendall(encode("CLIENT", "INFO"))
            self.assertIn(b" flags=e ", s.recv(4096))
        s.sendall(b"*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$%d\r\n" % (12 << 20))
        s.sendall(b"x" * (mb << 20))
        return s

    def closed(self, s, wait_s):
        s.settimeout(wait_s)
        try:
            return s.recv(100) == b""
        except socket.timeout:
            return False
        except ConnectionResetError:
            return True

    def stat(self, section, name):
        return self.r.info(section)[name]

    def test_the_largest_client_is_closed_and_the_small_ones_stay(self):
        # Small clients on both workers (INFO server names the worker that
        # answers): the worker that does not hold the large one must leave
        # its own clients alone, however much the total is above the limit.
        small, pids = [], set()
        while len(small) < 40 and (len(small) < 6 or len(pids) < 2):
            c = redis.Redis(host="127.0.0.1", port=self.d.port, socket_timeout=10)
            pids.add(c.info("server")["worker_pid"])
            small.append(c)
        self.assertEqual(len(pids), 2, "40 connections all landed on one worker")
        s = self.big_partial_command()
        self.assertTrue(self.r.config_set("maxmemory-clients", "4mb"))
        self.assertTrue(self.closed(s, 5), "a client holding 6 MiB stayed open under maxmemory-clients 4mb")
        self.assertEqual(self.stat("stats", "evicted_clients"), 1)
        for c in small:
            self.assertTrue(c.ping())
            c.close()
        # the same count in /metrics and in MI get_statistics
        status, body, _ = http_request(self.hp, "GET", "/metrics")
        self.assertEqual(status, 200)
        self.assertIn("perfcached_resp_evicted_clients_total 1", body.decode().splitlines())
        mi_path = os.path.join(self.d.workdir, "mi.sock")
        req = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "get_statistics",
                          "params": {"statistics": ["resp:evicted_clients"]}}).encode()
        self.assertEqual(json.loads(mi_datagram_raw(mi_path, req, self.d.workdir))["result"],
                         {"resp:evicted_clients": 1})

    def test_the_limit_is_at_least_128_kib(self):
        # Redis's floor: a smaller limit would close every client, the one
        # that set it too.
        self.assertTrue(self.r.config_set("maxmemory-clients", 1))
        others = [redis.Redis(host="127.0.0.1", port=self.d.port, socket_timeout=10) for _ in range(8)]
        time.sleep(0.5)
        for c in others:
            self.assertTrue(c.ping())
            c.close()
        self.assertEqual(self.stat("stats", "evicted_clients"), 0)
        s = self.big_partial_command(mb=1)
        self.assertTrue(self.closed(s, 5), "1 MiB held under the 128 KiB floor stayed open")

    def test_no_evict_and_no_limit_keep_the_client(self):
        s = self.big_partial_command(no_evict=True)
        t = self.big_partial_command(mb=5)
        deadline = time.time() + 5
        while time.time() < deadline and self.stat("memory", "mem_clients_normal") < (11 << 20):
            time.sleep(0.1)
        self.assertGreaterEqual(self.stat("memory", "mem_clients_normal"), 11 << 20)
        self.assertFalse(self.closed(t, 0.5), "closed with no maxmemory-clients")
        # s stays above the limit: every evictable client goes, as in Redis
        # (the test's own connection too, unless exempt)
        self.assertEqual(self.r.execute_command("CLIENT", "NO-EVICT", "on"), b"OK")
        self.assertTrue(self.r.config_set("maxmemory-clients", "2mb"))
        self.assertTrue(self.closed(t, 5), "the evictable client stayed open")
        self.assertFalse(self.closed(s, 1), "CLIENT NO-EVICT on was closed")
        self.assertEqual(self.stat("stats", "evicted_clients"), 1)
        s.settimeout(5)
        s.sendall(b"x" * ((12 << 20) - (6 << 20)) + b"\r\n")
        self.assertEqual(s.recv(100), b"+OK\r\n")
        self.assertEqual(self.r.strlen("big"), 12 << 20)

    def test_a_percentage_of_maxmemory(self):
        r = self.r
        self.assertTrue(r.config_set("maxmemory-clients", "10%"))
        self.assertEqual(r.config_get("maxmemory-clients"), {"maxmemory-clients": "10%"})
        s = self.big_partial_command()
        self.assertFalse(self.closed(s, 1), "10% of no maxmemory is no limit")
        self.assertTrue(r.config_set("maxmemory", 40 << 20))  # 4 MiB for the clients
        self.assertTrue(self.closed(s, 5))
        r.config_set("maxmemory", 0)

    def test_config_get_and_set(self):
        r = self.r
        got = r.config_get("maxmemory*")
        self.assertEqual(sorted(got), ["maxmemory", "maxmemory-clients", "maxmemory-eviction-tenacity",
                                       "maxmemory-policy", "maxmemory-samples"])
        self.assertEqual(got["maxmemory-eviction-tenacity"], "10")
        self.assertEqual(got["maxmemory-clients"], "0")
        self.assertTrue(r.config_set("maxmemory-eviction-tenacity", 100))
        self.assertEqual(r.config_get("maxmemory-eviction-tenacity"), {"maxmemory-eviction-tenacity": "100"})
        self.assertTrue(r.config_set("maxmemory-clients", "1mb"))
        self.assertEqual(r.config_get("maxmemory-clients"), {"maxmemory-clients": "1048576"})
        for k, v, why in [("maxmemory-eviction-tenacity", "101", "between 0 and 100"),
                          ("maxmemory-eviction-tenacity", "x", "parsed into an integer"),
                          ("maxmemory-clients", "-1%", "memory or percent"),
                          ("maxmemory-clients", "101%", "less or equal to 100"),
                          ("maxmemory-clients", "lots", "memory or percent")]:
            with self.assertRaisesRegex(redis.ResponseError, why):
                r.config_set(k, v)
        self.assertEqual(r.config_get("maxmemory-clients"), {"maxmemory-clients": "1048576"})
        r.config_set("maxmemory-clients", 0)

    def test_the_config_file_sets_both(self):
        d = Daemon(workers=1, arena_mb=ARENA_MB,
                   config="[memory]\nmaxmemory_clients = 5%\nmaxmemory_eviction_tenacity = 0\n")
        try:
            c = redis.Redis(host="127.0.0.1", port=d.port, socket_timeout=10)
            self.assertEqual(c.config_get("maxmemory*"), {
                "maxmemory": "0", "maxmemory-policy": "noeviction", "maxmemory-samples": "5",
                "maxmemory-eviction-tenacity": "0", "maxmemory-clients": "5%"})
            c.close()
        finally:
            self.assertEqual(d.stop(), 0)
        for v in ("101%", "lots"):
            p = subprocess.run([BIN, "-C", "-o", "memory.maxmemory_clients=" + v], capture_output=True, text=True)
            self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
            self.assertIn("percentage of maxmemory", p.stderr + p.stdout)


class MaxValue(unittest.TestCase):
    """The 512 MB maximum stays (issue 10 part 3): a value of exactly
    [memory] max_value_mb (512 MiB by default) is stored and read back
    whole through the RESP door; growing it by one byte is refused with
    Redis's error and leaves it as it was. Reading it back needs the
    normal clients' output limit raised above it (the default, 128 MiB,
    bounds what one client can make a worker hold: docs/daemon.md)."""

    def test_a_512_mib_value_round_trips_and_cannot_grow(self):
        d = Daemon(workers=1, arena_mb=1280,
                   overrides=("listen.client_output_buffer_limit=normal 600mb 0 0 pubsub 32mb 8mb 60",))
        r = redis.Redis(host="127.0.0.1", port=d.port, socket_timeout=120)
        try:
            big = bytes(range(256)) * (2 << 20)  # 512 MiB, every byte value
            self.assertEqual(len(big), 512 << 20)
            self.assertTrue(r.set("big", big))
            self.assertEqual(r.strlen("big"), 512 << 20)
            self.assertEqual(r.getrange("big", (512 << 20) - 4, -1), bytes([252, 253, 254, 255]))
            got = r.get("big")
            self.assertTrue(got == big, "the 512 MiB value did not read back whole")
            del got
            with self.assertRaisesRegex(redis.ResponseError, "string exceeds maximum allowed size"):
                r.append("big", b"x")
            with self.assertRaisesRegex(redis.ResponseError, "string exceeds maximum allowed size"):
                r.setrange("big", 512 << 20, b"x")
            self.assertEqual(r.strlen("big"), 512 << 20)
            self.assertEqual(r.delete("big"), 1)
            self.assertLess(used_memory(r), 64 << 20)  # its groups went back
            # under the default output limit a reply above 128 MiB resets the
            # client and is counted; the value stays
            self.assertTrue(r.config_set("client-output-buffer-limit", "normal 128mb 0 0"))
            self.assertTrue(r.set("big", big[:200 << 20]))
            with self.assertRaises(redis.ConnectionError):
                r.get("big")
            self.assertEqual(int(r.info("stats")["client_output_buffer_limit_disconnections"]), 1)
            self.assertEqual(r.strlen("big"), 200 << 20)
        finally:
            r.close()
            self.assertEqual(d.stop(), 0, d.read_log()[-2000:])


class Eviction(unittest.TestCase):
    """maxmemory and the eight policies (docs/memory.md): what each evicts
    and what it keeps."""

    def setUp(self):
        self.d = Daemon(workers=2, arena_mb=ARENA_MB)
        self.r = redis.Redis(host="127.0.0.1", port=self.d.port, socket_timeout=30)

    def tearDown(self):
        self.r.close()
        self.assertEqual(self.d.stop(), 0, self.d.read_log()[-2000:])

    def limit(self, policy, extra_mb=6):
        """maxmemory = what is used now + extra_mb."""
        r = self.r
        self.assertTrue(r.config_set("maxmemory-policy", policy))
        mm = used_memory(r) + (extra_mb << 20)
        self.assertTrue(r.config_set("maxmemory", mm))
        self.assertEqual(int(r.config_get("maxmemory")["maxmemory"]), mm)
        self.assertEqual(r.info("memory")["maxmemory_policy"], policy)
        return mm

    def write(self, prefix, n, size=1000, ex=None, start=0):
        """n SETs (pipelined); returns the replies (True or the error)."""
        out = []
        for k in range(start, start + n, 500):
            p = self.r.pipeline(transaction=False)
            for i in range(k, min(start + n, k + 500)):
                p.set("%s%d" % (prefix, i), value(i, size), ex=ex)
            out.extend(p.execute(raise_on_error=False))
        return out

    def test_noeviction_refuses_writes_not_deletes(self):
        r = self.r
        self.limit("noeviction", 2)
        replies = self.write("n:", 6000)
        errors = [e for e in replies if e is not True]
        self.assertTrue(errors, "6 MB of writes under a 2 MB headroom were all accepted")
        self.assertIn(OOM_MSG, str(errors[0]))
        stored = sum(1 for e in replies if e is True)
        self.assertEqual(r.dbsize(), stored)
        self.assertEqual(int(r.info("stats")["evicted_keys"]), 0)
        with self.assertRaisesRegex(redis.ResponseError, "OOM"):
            r.set("one-more", "x")
        self.assertIsNone(r.get("one-more"))
        # DEL and EXPIRE are not denyoom: they still work, and free the room
        self.assertEqual(r.delete(*["n:%d" % i for i in range(stored)]), stored)
        self.assertTrue(r.set("one-more", "x"))

    def test_allkeys_random_keeps_writes_flowing(self):
        r = self.r
        mm = self.limit("allkeys-random")
        sub = redis.Redis(host="127.0.0.1", port=self.d.port, socket_timeout=10).pubsub()
        sub.subscribe("__keyevent@0__:evicted")
        self.assertEqual(sub.get_message(timeout=5)["type"], "subscribe")
        time.sleep(0.2)
        replies = self.write("a:", 20000)  # ~20 MB through a 6 MB headroom
        self.assertEqual([e for e in replies if e is not True], [])
        evicted = int(r.info("stats")["evicted_keys"])
        self.assertGreater(evicted, 5000)
        self.assertEqual(r.dbsize(), 20000 - evicted)
        self.assertLessEqual(used_memory(r), mm + (1 << 20))
        # the last key written is there, intact; the notification names an evicted key
        self.assertEqual(r.get("a:19999"), value(19999, 1000))
        msg = None
        deadline = time.time() + 5
        while time.time() < deadline and (msg is None or msg["type"] != "message"):
            msg = sub.get_message(timeout=1)
        self.assertIsNotNone(msg)
        self.assertEqual(msg["channel"], b"__keyevent@0__:evicted")
        self.assertTrue(msg["data"].startswith(b"a:"))
        sub.close()

    def test_volatile_random_never_evicts_keys_without_ttl(self):
        r = self.r
        self.limit("volatile-random")
        keep = self.write("p:", 2000)  # ~2 MB without TTL
        self.assertEqual([e for e in keep if e is not True], [])
        replies = self.write("t:", 12000, ex=1000)
        self.assertEqual([e for e in replies if e is not True], [])
        self.assertGreater(int(r.info("stats")["evicted_keys"]), 1000)
        self.assertEqual(sum(r.exists("p:%d" % i) for i in range(2000)), 2000)
        # with only keys without a TTL left to take, writes are refused
        replies = self.write("q:", 12000)
        errors = [e for e in replies if e is not True]
        self.assertTrue(errors)
        self.assertIn(OOM_MSG, str(errors[0]))
        self.assertEqual(sum(r.exists("p:%d" % i) for i in range(2000)), 2000)

    def test_volatile_ttl_evicts_the_soonest_to_expire_first(self):
        r = self.r
        self.limit("volatile-ttl", 4)
        n = 12000
        for k in range(0, n, 500):
            p = r.pipeline(transaction=False)
            for i in range(k, k + 500):
                p.set("v:%d" % i, value(i, 1000), ex=100000 - i)  # larger i: sooner
            self.assertEqual([e for e in p.execute(raise_on_error=False) if e is not True], [])
        self.assertGreater(int(r.info("stats")["evicted_keys"]), 3000)
        # the sampler takes the soonest of each sample: the survivors are
        # mostly the early keys (latest expiry), the late ones went first...
        # but the keys just written were the newest candidates, so compare
        # the first and the third quarter of what was written
        first = sum(r.exists("v:%d" % i) for i in range(0, n // 4))
        third = sum(r.exists("v:%d" % i) for i in range(n // 2, 3 * n // 4))
        self.assertGreater(first, third, (first, third))

    def test_volatile_ttl_never_evicts_keys_without_ttl(self):
        r = self.r
        self.limit("volatile-ttl")
        self.assertEqual([e for e in self.write("p:", 2000) if e is not True], [])  # ~2 MB, no TTL
        replies = self.write("t:", 12000, ex=1000)
        self.assertEqual([e for e in replies if e is not True], [])
        self.assertGreater(int(r.info("stats")["evicted_keys"]), 1000)
        self.assertEqual(self.survivors("p:", 2000), 2000)
        replies = self.write("q:", 12000)  # no TTL: only keys without one would make room
        errors = [e for e in replies if e is not True]
        self.assertTrue(errors)
        self.assertIn(OOM_MSG, str(errors[0]))
        self.assertEqual(self.survivors("p:", 2000), 2000)

    def test_policy_errors(self):
        r = self.r
        with self.assertRaisesRegex(redis.ResponseError, "must be one of the following"):
            r.config_set("maxmemory-policy", "bogus")
        self.assertEqual(r.config_get("maxmemory-policy")["maxmemory-policy"], "noeviction")
        for name in ("lfu-log-factor", "lfu-decay-time"):
            with self.assertRaisesRegex(redis.ResponseError, "between 0 and 2147483647"):
                r.config_set(name, -1)
            with self.assertRaisesRegex(redis.ResponseError, "couldn't be parsed"):
                r.config_set(name, "x")
        self.assertEqual(r.config_get("lfu-*"), {"lfu-log-factor": "10", "lfu-decay-time": "1"})
        self.assertTrue(r.config_set("lfu-log-factor", 3))
        self.assertEqual(r.config_get("lfu-log-factor")["lfu-log-factor"], "3")

    def age(self, prefix, n, size=1000, reads=1):
        """Read keys <prefix>0..n-1 `reads` times each (pipelined)."""
        for _ in range(reads):
            for k in range(0, n, 500):
                p = self.r.pipeline(transaction=False)
                for i in range(k, min(n, k + 500)):
                    p.get("%s%d" % (prefix, i))
                self.assertNotIn(None, p.execute())

    def survivors(self, prefix, n):
        p = self.r.pipeline(transaction=False)
        for i in range(n):
            p.exists("%s%d" % (prefix, i))
        return sum(p.execute())

    def test_allkeys_lru_evicts_the_longest_idle(self):
        # hot keys read after the cold ones were written: when room is
        # needed, the cold ones go (the clock has one-second steps, hence
        # the sleeps)
        r = self.r
        self.limit("allkeys-lru", 8)
        self.assertEqual([e for e in self.write("hot:", 1000) if e is not True], [])
        time.sleep(1.2)
        self.assertEqual([e for e in self.write("cold:", 6000) if e is not True], [])
        time.sleep(2.2)
        self.age("hot:", 1000)
        self.assertLessEqual(r.object("idletime", "hot:1"), 1)
        self.assertGreaterEqual(r.object("idletime", "cold:1"), 2)
        time.sleep(1.2)
        self.assertEqual([e for e in self.write("new:", 5000) if e is not True], [])
        evicted = int(r.info("stats")["evicted_keys"])
        self.assertGreater(evicted, 2000)
        hot, cold = self.survivors("hot:", 1000), self.survivors("cold:", 6000)
        # Sampling is approximate: redis-server 7 with the same sequence and
        # maxmemory-samples 5 kept 983..993 hot keys in 5 runs, perfcached
        # 978..993 in 8 with whole-bucket samples (session 16), 983..1000 in 6
        # with uniform draws (session 17); reads not recorded would keep ~600.
        self.assertGreaterEqual(hot, 970, (hot, cold, evicted))
        self.assertLessEqual(cold, 6000 - evicted * 0.8, (hot, cold, evicted))

    def test_allkeys_lfu_evicts_the_least_used(self):
        # hot keys read 30 times (their counter climbs from 5), cold ones
        # never: the cold ones go, although the hot ones are older
        r = self.r
        self.limit("allkeys-lfu", 8)
        self.assertEqual([e for e in self.write("hot:", 1000) if e is not True], [])
        self.assertEqual(r.object("freq", "hot:1"), 5)
        self.age("hot:", 1000, reads=30)
        self.assertGreaterEqual(r.object("freq", "hot:1"), 6)
        self.assertEqual([e for e in self.write("cold:", 6000) if e is not True], [])
        self.assertEqual([e for e in self.write("new:", 5000) if e is not True], [])
        evicted = int(r.info("stats")["evicted_keys"])
        self.assertGreater(evicted, 2000)
        hot = self.survivors("hot:", 1000)
        self.assertGreaterEqual(hot, 980, (hot, evicted))

    def test_volatile_lru_and_lfu_never_evict_keys_without_ttl(self):
        r = self.r
        for policy in ("volatile-lru", "volatile-lfu"):
            r.flushall()
            self.limit(policy)
            keep = self.write("p:", 2000)  # ~2 MB without TTL, never read
            self.assertEqual([e for e in keep if e is not True], [])
            time.sleep(1.1)
            replies = self.write("t:", 12000, ex=1000)
            self.assertEqual([e for e in replies if e is not True], [], policy)
            self.assertGreater(int(r.info("stats")["evicted_keys"]), 1000)
            self.assertEqual(self.survivors("p:", 2000), 2000, policy)
            replies = self.write("q:", 12000)
            errors = [e for e in replies if e is not True]
            self.assertTrue(errors, policy)
            self.assertIn(OOM_MSG, str(errors[0]))
            self.assertEqual(self.survivors("p:", 2000), 2000, policy)
            r.config_set("maxmemory", 0)

    def test_volatile_policies_find_the_db_that_has_keys_with_a_ttl(self):
        # Regression (review, session 22): collections were picked by all
        # their keys, so db 0's 40,000 keys without a TTL took most samples
        # and about half the writes to db 1 answered -OOM while db 1 had
        # keys with a TTL to evict (redis-server samples each db's expires).
        r1 = redis.Redis(host="127.0.0.1", port=self.d.port, db=1, socket_timeout=30)
        self.addCleanup(r1.close)
        for k in range(0, 40000, 1000):
            p = self.r.pipeline(transaction=False)
            for i in range(k, k + 1000):
                p.set("plain:%d" % i, "v")
            p.execute()

        def fill(prefix, n):
            out = []
            for k in range(0, n, 500):
                p = r1.pipeline(transaction=False)
                for i in range(k, min(n, k + 500)):
                    p.set("%s%d" % (prefix, i), value(i, 1000), ex=1000)
                out.extend(p.execute(raise_on_error=False))
            return [e for e in out if e is not True]

        for policy in ("volatile-lru", "volatile-random", "volatile-ttl"):
            r1.flushdb()
            self.assertEqual(fill("t:", 1000), [])
            self.limit(policy, 2)
            errors = fill("more:", 5000)
            self.assertEqual(errors[:1], [], policy)
            self.assertGreater(int(self.r.info("stats")["evicted_keys"]), 1000, policy)
            self.assertEqual(self.r.dbsize(), 40000, policy)
            self.r.config_set("maxmemory", 0)

    def test_a_switch_to_volatile_lru_keeps_keys_without_ttl(self):
        # Regression (review, session 22): the LRU pool of idle keys without
        # a TTL, sampled under allkeys-lru, outlived CONFIG SET
        # maxmemory-policy volatile-lru and went first.
        r = self.r
        self.limit("allkeys-lru", 2)
        self.assertEqual([e for e in self.write("p:", 4000) if e is not True], [])
        time.sleep(3.1)
        self.assertEqual([e for e in self.write("p:", 500, start=4000) if e is not True], [])
        self.assertGreater(int(r.info("stats")["evicted_keys"]), 500)
        p = r.pipeline(transaction=False)
        for i in range(4500):
            p.exists("p:%d" % i)
        kept = [i for i, e in enumerate(p.execute()) if e]
        # 1 MB of room: keys with a TTL exist before the first eviction
        # (with none, redis-server answers -OOM too).
        self.limit("volatile-lru", 1)
        before = int(r.info("stats")["evicted_keys"])
        self.assertEqual([e for e in self.write("t:", 3000, ex=1000) if e is not True], [])
        self.assertGreater(int(r.info("stats")["evicted_keys"]) - before, 1500)
        p = r.pipeline(transaction=False)
        for i in kept:
            p.exists("p:%d" % i)
        self.assertEqual(sum(p.execute()), len(kept))

    def test_evictions_are_not_keyspace_hits(self):
        # Regression (review, session 22): each LRU eviction's re-check of
        # its victim counted as a keyspace hit (redis-server: 0 hits here).
        r = self.r
        r.config_resetstat()
        self.limit("allkeys-lru", 2)
        self.assertEqual([e for e in self.write("w:", 6000) if e is not True], [])
        st = r.info("stats")
        self.assertGreater(int(st["evicted_keys"]), 1000)
        self.assertEqual((int(st["keyspace_hits"]), int(st["keyspace_misses"])), (0, 0))
        r.memory_usage("w:5999")
        self.assertEqual(int(r.info("stats")["keyspace_hits"]), 0)
        r.get("w:5999")
        self.assertEqual(int(r.info("stats")["keyspace_hits"]), 1)
        # DUMP is one look-up, as in Redis: a miss counts once
        self.assertIsNone(r.dump("nosuch"))
        self.assertEqual(int(r.info("stats")["keyspace_misses"]), 1)

    def test_a_lowered_maxmemory_evicts_without_writes(self):
        # Redis evicts before every command and in the background after
        # CONFIG SET maxmemory; here only writes made room, so a read-only
        # load over a lowered limit kept every key (review, session 22).
        # Each worker's tick now evicts while used memory is above it.
        r = self.r
        r.config_set("maxmemory-policy", "allkeys-lru")
        self.assertEqual([e for e in self.write("k:", 10000) if e is not True], [])
        used = used_memory(r)
        r.config_set("maxmemory", used - (5 << 20))
        deadline = time.time() + 20
        while time.time() < deadline and used_memory(r) > used - (5 << 20):
            r.get("k:1")
            time.sleep(0.2)
        self.assertLessEqual(used_memory(r), used - (5 << 20))
        n = r.dbsize()
        self.assertLess(n, 6500)
        self.assertGreater(n, 3000)
        self.assertEqual(int(r.info("stats")["evicted_keys"]), 10000 - n)
        r.config_set("maxmemory", 0)

    def test_volatile_lru_evicts_the_longest_idle_of_the_keys_with_ttl(self):
        # As allkeys-lru's test, with a TTL on the hot and cold keys and an
        # older, never-read set without one that must stay whole.
        r = self.r
        self.limit("volatile-lru", 10)
        self.assertEqual([e for e in self.write("p:", 1500) if e is not True], [])
        self.assertEqual([e for e in self.write("hot:", 1000, ex=100000) if e is not True], [])
        time.sleep(1.2)
        self.assertEqual([e for e in self.write("cold:", 6000, ex=100000) if e is not True], [])
        time.sleep(2.2)
        self.age("hot:", 1000)
        self.assertGreaterEqual(r.object("idletime", "p:1"), 3)
        time.sleep(1.2)
        self.assertEqual([e for e in self.write("new:", 5000, ex=100000) if e is not True], [])
        evicted = int(r.info("stats")["evicted_keys"])
        self.assertGreater(evicted, 2000)
        hot, cold = self.survivors("hot:", 1000), self.survivors("cold:", 6000)
        self.assertEqual(self.survivors("p:", 1500), 1500)  # the idlest of all, but without a TTL
        self.assertGreaterEqual(hot, 970, (hot, cold, evicted))
        self.assertLessEqual(cold, 6000 - evicted * 0.8, (hot, cold, evicted))

    def test_volatile_lfu_evicts_the_least_used_of_the_keys_with_ttl(self):
        r = self.r
        self.limit("volatile-lfu", 10)
        self.assertEqual([e for e in self.write("p:", 1500) if e is not True], [])  # used least, no TTL
        self.assertEqual([e for e in self.write("hot:", 1000, ex=100000) if e is not True], [])
        self.age("hot:", 1000, reads=30)
        self.assertGreaterEqual(r.object("freq", "hot:1"), 6)
        self.assertEqual([e for e in self.write("cold:", 6000, ex=100000) if e is not True], [])
        self.assertEqual([e for e in self.write("new:", 5000, ex=100000) if e is not True], [])
        evicted = int(r.info("stats")["evicted_keys"])
        self.assertGreater(evicted, 2000)
        self.assertEqual(self.survivors("p:", 1500), 1500)
        hot = self.survivors("hot:", 1000)
        self.assertGreaterEqual(hot, 980, (hot, evicted))

    def test_value_size_shift_under_allkeys_lru(self):
        # issue 10's acceptance: the load's value size moves from 1000 B to
        # 100 B under allkeys-lru with maxmemory well inside the arena:
        # writes keep being served, no -OOM. The 1000-byte keys were written
        # within a second or two, so LRU takes them in random order and a
        # 64-cell page comes free only when all of its cells went: the arena
        # fills with half-empty pages before maxmemory is reached, and a
        # write that finds no cell evicts (cache/evict.h MakeRoomFor) — by
        # the policy first (the old 1000-byte keys), then a key of its own
        # size. (Before MakeRoomFor: 453,114 of the 600,000 SETs -OOM.)
        r = self.r
        mm = 40 << 20
        self.assertTrue(r.config_set("maxmemory-policy", "allkeys-lru"))
        self.assertTrue(r.config_set("maxmemory", mm))
        big = self.write("big:", 60000, size=1000)   # ~60 MB through a 40 MB limit
        self.assertEqual([e for e in big if e is not True], [])
        self.assertGreater(int(r.info("stats")["evicted_keys"]), 10000)
        time.sleep(1.1)
        small = self.write("small:", 600000, size=100)  # ~3x the limit in 100-byte values
        errors = [e for e in small if e is not True]
        self.assertEqual(errors[:3], [], "%d of 600000 100-byte SETs refused" % len(errors))
        self.assertLessEqual(used_memory(r), mm + (1 << 20))
        self.assertEqual(r.get("small:599999"), value(599999, 100))
        left = self.survivors("big:", 60000)
        self.assertLess(left, 3000, "1000-byte keys kept over the fresh ones")

    def test_object_idletime_and_freq(self):
        r = self.r
        r.set("k", "v")
        r.set("cold", "v")
        time.sleep(2.1)
        # without an LRU policy a read stores its time only after a minute
        # of idleness (docs/memory.md: reads of a cache that does not evict
        # by recency cost no stores)
        r.get("k")
        self.assertGreaterEqual(r.object("idletime", "k"), 2)
        r.config_set("maxmemory-policy", "allkeys-lru")
        self.assertGreaterEqual(r.object("idletime", "k"), 2)
        self.assertEqual(r.object("encoding", "k"), b"embstr")  # OBJECT does not touch
        self.assertGreaterEqual(r.object("idletime", "k"), 2)
        r.exists("k")
        r.ttl("k")
        r.type("k")
        self.assertGreaterEqual(r.object("idletime", "k"), 2)  # nor do EXISTS, TTL, TYPE
        r.get("k")
        self.assertLessEqual(r.object("idletime", "k"), 1)  # GET does
        r.set("cold", "w")
        self.assertLessEqual(r.object("idletime", "cold"), 1)  # and a write
        r.set("t", "v")
        time.sleep(1.1)
        self.assertEqual(r.touch("t", "nokey", "t"), 2)
        self.assertEqual(r.object("idletime", "t"), 0)  # and TOUCH
        self.assertIsNone(r.object("idletime", "nokey"))
        with self.assertRaisesRegex(redis.ResponseError, "An LFU maxmemory policy is not selected"):
            r.object("freq", "k")
        r.config_set("maxmemory-policy", "allkeys-lfu")
        with self.assertRaisesRegex(redis.ResponseError, "An LFU maxmemory policy is selected"):
            r.object("idletime", "k")
        r.set("f", "v")
        self.assertEqual(r.object("freq", "f"), 5)  # Redis's LFU_INIT_VAL
        r.get("f")
        self.assertEqual(r.object("freq", "f"), 6)  # the first increments are certain
        r.config_set("lfu-log-factor", 0)
        for _ in range(20):
            r.get("f")
        self.assertEqual(r.object("freq", "f"), 26)  # factor 0: every access counts
        r.set("f", "w")  # a write keeps the counter (and counts)
        self.assertEqual(r.object("freq", "f"), 27)
        self.assertIsNone(r.object("freq", "nokey"))


def mi_call(d, method, params=None):
    req = {"jsonrpc": "2.0", "id": "1", "method": method}
    if params is not None:
        req["params"] = params
    raw = mi_fifo_raw(d.fifo, d.workdir, json.dumps(req).encode(), timeout=30)
    return json.loads(raw)["result"]


def wait_automove(d, passes_before, timeout=30.0):
    """Until a pass started after `passes_before` is over (moved stops moving)."""
    end = time.time() + timeout
    last = None
    while time.time() < end:
        st = mi_call(d, "perf_automove")
        if st["passes"] > passes_before and last is not None and st["moved"] == last["moved"]:
            return st
        last = st
        time.sleep(0.5)
    return last


class Automove(unittest.TestCase):
    """Part 1's second half: live cells move out of sparse pages, so memory
    a size class holds in pages that are a quarter full serves another
    size. The 1000-byte fill is thinned to one key in four (no page comes
    free by itself), then 100-byte values are written: with automove the
    timer empties the sparse pages and the small fill goes on; without it,
    it stops where the free groups end."""

    def setUp(self):
        self.daemons = []

    def tearDown(self):
        codes = [(d.stop(), d) for d in self.daemons]
        for rc, d in codes:
            self.assertEqual(rc, 0, d.read_log()[-2000:])

    def start(self, overrides=()):
        d = Daemon(workers=2, arena_mb=ARENA_MB, config=PRESIZED, overrides=overrides)
        self.daemons.append(d)
        return d, redis.Redis(host="127.0.0.1", port=d.port, socket_timeout=30)

    def thin(self, d, r):
        """Fill 1000-byte values to -OOM, keep one in four; returns the kept indexes."""
        big = fill(d.port, b"b:", LARGE)
        self.assertIsNotNone(big.first_oom)
        drop = [b"b:%d" % i for i in range(big.first_oom + BATCH) if i % 4 != 0]
        for k in range(0, len(drop), BATCH):
            r.delete(*drop[k:k + BATCH])
        kept = [i for i in range(big.first_oom) if i % 4 == 0]
        self.assertEqual(r.dbsize(), len(kept) + sum(1 for i in range(big.first_oom, big.stored) if i % 4 == 0))
        return kept

    def check_kept(self, r, kept):
        for k in range(0, len(kept), BATCH):
            part = kept[k:k + BATCH]
            got = r.mget([b"b:%d" % i for i in part])
            for i, v in zip(part, got):
                self.assertEqual(v, value(i, LARGE), "kept key b:%d" % i)

    def small_fill(self, d, rounds):
        """100-byte SETs to -OOM, `rounds` times, waiting for the mover in between."""
        total, start = 0, 0
        for _ in range(rounds):
            before = mi_call(d, "perf_automove")["passes"]
            res = fill(d.port, b"s%d:" % start, SMALL)
            self.assertEqual(res.errors, [])
            total += res.stored
            start += 1
            if res.first_oom is None:
                break
            wait_automove(d, before, timeout=10)
        return total

    def test_sparse_pages_serve_another_size(self):
        d, r = self.start(["memory.automove=no"])
        fresh = fill(d.port, b"f:", SMALL)
        self.assertIsNotNone(fresh.first_oom)
        r.flushall()
        kept = self.thin(d, r)
        without = self.small_fill(d, 1)
        self.assertEqual(mi_call(d, "perf_automove")["moved"], 0)
        r.close()
        self.stop_daemon(d)

        d, r = self.start()
        kept = self.thin(d, r)
        with_am = self.small_fill(d, 6)
        st = mi_call(d, "perf_automove")
        msg = ("fresh arena: %d 100-byte values; after a 1000-byte fill thinned to one key in four "
               "(%d kept): %d without automove, %d with it (%d records moved, %d pages freed, "
               "%d passes, %d cells given back by the workers)" %
               (fresh.stored, len(kept), without, with_am, st["moved"], st["pages_freed"], st["passes"],
                st["given_back"]))
        print("\n  " + msg)
        self.check_kept(r, kept)
        # A quarter of the big values stay (about a quarter of the arena):
        # the small fill must get most of the rest.
        self.assertGreater(st["moved"], 0, msg)
        self.assertGreaterEqual(with_am, 0.55 * fresh.stored, msg)
        self.assertGreater(with_am, 1.5 * without, msg)
        chk = mi_call(d, "perf_check")
        self.assertTrue(chk["clean"], chk)
        r.close()

    def test_cells_a_worker_holds_come_back(self):
        # Every 1000-byte value deleted, in no order: the cells of the
        # first 32 DELs a worker makes stay on its private stack (later
        # frees clear their bits), each holding a page of the class that
        # is otherwise empty. The mover
        # marks those pages and asks; the worker gives the cells back at
        # its next tick, and the pages serve 100-byte values.
        d, r = self.start()
        fresh = fill(d.port, b"f:", SMALL)
        self.assertIsNotNone(fresh.first_oom)
        r.flushall()
        big = fill(d.port, b"b:", LARGE)
        self.assertIsNotNone(big.first_oom)
        drop = [b"b:%d" % i for i in range(big.stored)]
        random.Random(11).shuffle(drop)
        for k in range(0, len(drop), BATCH):
            r.delete(*drop[k:k + BATCH])
        self.assertEqual(r.dbsize(), 0)
        small = self.small_fill(d, 4)
        st = mi_call(d, "perf_automove")
        msg = ("fresh arena: %d 100-byte values; after %d 1000-byte values were stored and deleted in no "
               "order: %d (%.1f%%; %d cells given back by the workers, %d pages freed, %d passes)" %
               (fresh.stored, big.stored, small, 100.0 * small / fresh.stored, st["given_back"],
                st["pages_freed"], st["passes"]))
        print("\n  " + msg)
        # Without the give-back (a mutant): 0 given back, 0 pages freed,
        # 91.9% of the fresh fill; with it 95.3%. What stays is pages of
        # other classes, each keeping a 2 MiB group of its page size
        # (docs/memory.md "Automove").
        self.assertGreater(st["given_back"], 16, msg)
        self.assertGreaterEqual(st["pages_freed"], 16, msg)
        self.assertGreaterEqual(small, 0.935 * fresh.stored, msg)
        self.assertTrue(mi_call(d, "perf_check")["clean"])
        r.close()

    def thin_hashes(self, r, fields=100):
        """HSETs of `fields` fields of 1000 bytes, a hash after another, to
        -OOM; then three fields in four deleted from each. Returns the
        number of hashes."""
        n = 0
        while n < 5000:
            try:
                r.hset(b"h:%d" % n, mapping={b"f%d" % j: value(j + n, LARGE) for j in range(fields)})
            except redis.ResponseError as e:
                self.assertIn("OOM", str(e))
                break
            n += 1
        self.assertLess(n, 5000)
        # An HDEL copies the path it changes: on a full arena it needs a
        # few cells, so the last hashes go whole first (DEL needs none).
        r.delete(*[b"h:%d" % h for h in range(n - 20, n)])
        n -= 20
        p = r.pipeline(transaction=False)
        for h in range(n):
            p.hdel(b"h:%d" % h, *[b"f%d" % j for j in range(fields) if j % 4 != 0])
        p.execute()
        return n

    def test_thinned_hashes_serve_another_size(self):
        # The same with the 1000-byte values inside large hashes: the entries
        # are cells of the hashes' tries, which automove copies out of the
        # sparse pages (session 20; before, such pages never came free).
        runs = {}
        for mode in ("no", "yes"):
            d, r = self.start(["memory.automove=" + mode])
            n = self.thin_hashes(r)
            runs[mode] = (n, self.small_fill(d, 1 if mode == "no" else 6), mi_call(d, "perf_automove"))
            for h in range(0, n, 7):
                got = r.hgetall(b"h:%d" % h)
                self.assertEqual(len(got), 25)
                for j in range(0, 100, 4):
                    self.assertEqual(got[b"f%d" % j], value(j + h, LARGE))
            self.assertTrue(mi_call(d, "perf_check")["clean"])
            r.close()
            self.stop_daemon(d)
        (n0, without, st0), (n1, with_am, st1) = runs["no"], runs["yes"]
        msg = ("%d / %d hashes of 100 fields of 1000 bytes thinned to 25 fields: 100-byte values stored "
               "%d without automove, %d with it (%d records moved, %d pages freed)" %
               (n0, n1, without, with_am, st1["moved"], st1["pages_freed"]))
        print("\n  " + msg)
        self.assertEqual(st0["moved"], 0, msg)
        self.assertGreater(st1["moved"], n1 // 2, msg)
        self.assertGreater(with_am, 1.5 * without, msg)

    def test_mi_perf_automove_settings_and_errors(self):
        d, r = self.start(["memory.automove=no"])
        self.assertEqual(mi_call(d, "perf_automove")["enabled"], "no")
        self.assertEqual(mi_call(d, "perf_automove", {"action": "on"})["enabled"], "yes")
        self.assertEqual(mi_call(d, "perf_automove", ["off"])["enabled"], "no")
        raw = mi_fifo_raw(d.fifo, d.workdir, json.dumps(
            {"jsonrpc": "2.0", "id": "1", "method": "perf_automove", "params": {"action": "sometimes"}}).encode())
        err = json.loads(raw)["error"]
        self.assertEqual((err["message"], err["data"]), ("Invalid params", "Bad action (on, off, now)"))
        # A pass asked for with nothing sparse to empty: none starts.
        mi_call(d, "perf_automove", ["now"])
        time.sleep(0.5)
        st = mi_call(d, "perf_automove")
        self.assertEqual((st["passes"], st["moved"], st["active"]), (0, 0, "no"))
        info = r.info("memory")
        self.assertEqual(info["automove"], "no")
        self.assertEqual(int(info["automove_passes"]), 0)
        r.close()

    def stop_daemon(self, d):
        self.daemons.remove(d)
        self.assertEqual(d.stop(), 0, d.read_log()[-2000:])

    def test_kill9_of_a_worker_during_automove_loses_nothing(self):
        # 100-byte writers against an arena full of thinned 1000-byte pages:
        # they get room only as passes empty those pages (at most 256 pages
        # a pass). A slow mover (256 buckets a tick: a pass over the 2^17
        # buckets takes about a second) so that each kill lands inside one.
        d, r = self.start(["memory.automove_buckets=256"])
        kept = {b"b:%d" % i: value(i, LARGE) for i in self.thin(d, r)}
        acked = {}
        stop = threading.Event()

        def writer(n):
            c, i = None, 0
            while not stop.is_set():
                k = b"w%d:%d" % (n, i)
                try:
                    if c is None:
                        c = redis.Redis(host="127.0.0.1", port=d.port, socket_timeout=5)
                    if c.set(k, value(i, SMALL)):
                        acked[k] = value(i, SMALL)
                except redis.ResponseError:
                    time.sleep(0.01)  # -OOM: the arena is full, that write is refused
                except (redis.ConnectionError, redis.TimeoutError, ConnectionError):
                    c = None  # its worker died: not acknowledged
                    time.sleep(0.01)
                i += 1

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(3)]
        for t in threads:
            t.start()
        kills, during = 0, 0
        try:
            for _ in range(3):
                mi_call(d, "perf_automove", {"action": "now"})
                end = time.time() + 10
                while mi_call(d, "perf_automove")["active"] != "yes" and time.time() < end:
                    time.sleep(0.002)
                workers = d.worker_pids()
                os.kill(workers[kills % len(workers)], signal.SIGKILL)
                kills += 1
                if mi_call(d, "perf_automove")["active"] == "yes":
                    during += 1
                end = time.time() + 60
                while (len(d.worker_pids()) < 2 or mi_call(d, "perf_automove")["active"] == "yes") \
                        and time.time() < end:
                    time.sleep(0.2)
        finally:
            stop.set()
            for t in threads:
                t.join(timeout=30)
        st = mi_call(d, "perf_automove")
        print("\n  kill -9 during automove: %d kills (%d inside a pass), %d writes acknowledged, "
              "%d passes, %d records moved, %d pages freed"
              % (kills, during, len(acked), st["passes"], st["moved"], st["pages_freed"]))
        self.assertEqual(kills, 3)
        self.assertGreaterEqual(during, 2)
        self.assertGreaterEqual(st["passes"], 3)
        self.assertGreater(st["moved"], 0)
        acked.update(kept)
        keys = list(acked)
        for k in range(0, len(keys), BATCH):
            part = keys[k:k + BATCH]
            for key, v in zip(part, r.mget(part)):
                self.assertEqual(v, acked[key], "acknowledged %r" % key)
        chk = mi_call(d, "perf_check")
        self.assertTrue(chk["clean"], chk)
        self.assertEqual(chk["error_count"], 0, chk)
        r.close()


class EvictionReported(unittest.TestCase):
    """Evictions are counted per collection (MI get_statistics, /metrics)
    and raise E_PERF_EVICTED (MI events) and Redis's keyspace and keyevent
    notifications, each naming the collection or db and the key."""

    def test_counts_and_events_name_the_collection_and_key(self):
        hp = free_port()
        d = Daemon(workers=2, arena_mb=ARENA_MB, overrides=("listen.http=127.0.0.1:%d" % hp,),
                   config="[collection evc]\n[listen]\nresp_collections = 0:evc\n")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        r = redis.Redis(host="127.0.0.1", port=d.port, socket_timeout=30)
        sub = redis.Redis(host="127.0.0.1", port=d.port, socket_timeout=10).pubsub()
        try:
            mi_path = os.path.join(d.workdir, "mi.sock")
            wait_for_path(mi_path)
            ev_path = os.path.join(d.workdir, "events.sock")
            sock.bind(ev_path)
            sock.settimeout(10)

            def mi(method, params):
                req = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
                return json.loads(mi_datagram_raw(mi_path, req, d.workdir))

            self.assertEqual(mi("event_subscribe", ["E_PERF_EVICTED", "unix:" + ev_path, "60"]).get("result"), "OK")
            sub.psubscribe("__keyspace@0__:e:*")
            self.assertEqual(sub.get_message(timeout=5)["type"], "psubscribe")
            time.sleep(0.2)
            self.assertTrue(r.config_set("maxmemory-policy", "allkeys-random"))
            self.assertTrue(r.config_set("maxmemory", used_memory(r) + (6 << 20)))
            for k in range(0, 20000, 500):
                p = r.pipeline(transaction=False)
                for i in range(k, k + 500):
                    p.set("e:%d" % i, value(i, 1000))
                self.assertEqual([x for x in p.execute(raise_on_error=False) if x is not True], [])
            evicted = int(r.info("stats")["evicted_keys"])
            self.assertGreater(evicted, 5000)
            self.assertEqual(r.dbsize(), 20000 - evicted)
            # per collection: MI and /metrics say the same number
            st = mi("get_statistics", {"statistics": ["perfcached_evc:"]})["result"]
            self.assertEqual(st["perfcached_evc:evicted"], evicted)
            status, body, _ = http_request(hp, "GET", "/metrics")
            self.assertEqual(status, 200)
            line = 'perfcached_evicted_total{collection="evc"} %d' % evicted
            self.assertIn(line, body.decode().splitlines())
            # E_PERF_EVICTED: the collection and a key that is gone
            ev = None
            deadline = time.time() + 10
            while time.time() < deadline and ev is None:
                try:
                    got = json.loads(sock.recv(65536))
                except socket.timeout:
                    break
                if got.get("method") == "E_PERF_EVICTED":
                    ev = got
            self.assertIsNotNone(ev, "no E_PERF_EVICTED event")
            self.assertEqual(ev["params"]["collection"], "evc")
            self.assertTrue(ev["params"]["key"].startswith("e:"), ev)
            self.assertEqual(r.exists(ev["params"]["key"]), 0)
            # the keyspace channel of an evicted key says "evicted"
            msg = None
            deadline = time.time() + 10
            while time.time() < deadline and (msg is None or msg["type"] != "pmessage"):
                msg = sub.get_message(timeout=1)
            self.assertIsNotNone(msg)
            self.assertEqual(msg["type"], "pmessage")
            self.assertEqual(msg["data"], b"evicted")
            key = msg["channel"][len(b"__keyspace@0__:"):]
            self.assertTrue(key.startswith(b"e:"), msg)
            self.assertEqual(r.exists(key), 0)
        finally:
            sub.close()
            r.close()
            sock.close()
            self.assertEqual(d.stop(), 0, d.read_log()[-2000:])


class TableGrowth(unittest.TestCase):
    """Regression (found writing these tests): a pipelined fill outran the
    timer's growth (4096 splits per 100 ms tick), full buckets spilled into
    the overflow table and writes slowed down more and more (300,000 SETs:
    11.8 s and 12% of the keys in overflow; 64 MiB of keys: 80-130 s). The
    timer now comes back at once while a step used its whole budget."""

    def test_growth_keeps_up_with_a_pipelined_fill(self):
        d = Daemon(workers=2, arena_mb=256)
        try:
            res = fill(d.port, b"g:", 100, cap=300000)
            self.assertEqual(res.errors, [])
            self.assertEqual(res.stored, 300000)
            r = redis.Redis(host="127.0.0.1", port=d.port, socket_timeout=30)
            st = r.execute_command("MEMORY", "STATS")
            st = {st[i].decode(): st[i + 1] for i in range(0, len(st), 2)}
            r.close()
            self.assertEqual(st["keys.count"], 300000)
            # The regression left 12% in overflow; an idle machine leaves
            # under 1%, and one busy with a parallel make check 2.8%
            # (session 18): the bound is 5%.
            self.assertLess(st["keys.overflow"], 300000 // 20,
                            "%d of 300000 keys in the overflow table right after the fill"
                            % st["keys.overflow"])
        finally:
            self.assertEqual(d.stop(), 0, d.read_log()[-2000:])




class BigArena(unittest.TestCase):
    """Issue 10 part 4: arenas up to 1 TiB. The whole cap is mapped at start
    (no memory reserved) with metadata for every 2 MiB group; offsets are 40
    bits in a bucket. A 1 TiB cap starts, serves every value kind and stops
    clean; one MiB more is refused by the configuration check."""

    def test_a_one_tib_cap_starts_serves_and_stops(self):
        d = Daemon(workers=2, arena_mb=64, overrides=["memory.arena_cap_mb=1048576"])
        r = redis.Redis(host="127.0.0.1", port=d.port, socket_timeout=30)
        try:
            dump = mi_call(d, "mem_shm_dump")
            self.assertEqual(dump["cap_bytes"], 1 << 40)
            info = r.info("memory")
            pipe = r.pipeline(transaction=False)
            for i in range(20000):
                pipe.set(b"k:%d" % i, value(i, 100))
            pipe.execute()
            self.assertEqual(r.hset("h", mapping={"f%d" % i: "v%d" % i for i in range(2000)}), 2000)
            big = value(7, 3 << 20)
            r.set("big", big)
            self.assertEqual(r.dbsize(), 20002)
            for i in range(0, 20000, 97):
                self.assertEqual(r.get(b"k:%d" % i), value(i, 100))
            self.assertEqual(r.hget("h", "f1999"), b"v1999")
            self.assertEqual(r.get("big"), big)
            # the metadata of 524,288 groups is there; the cap itself is not used
            rss_kb = 0
            with open("/proc/%d/status" % d.pid) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        rss_kb = int(line.split()[1])
            self.assertLess(rss_kb, 512 * 1024, "supervisor RSS %d kB" % rss_kb)
            print("\n  1 TiB cap: supervisor RSS %d MiB, used_memory %d MiB before the writes"
                  % (rss_kb >> 10, info["used_memory"] >> 20))
        finally:
            r.close()
            self.assertEqual(d.stop(), 0, d.read_log()[-2000:])

    def test_above_one_tib_is_refused(self):
        from harness import BIN
        p = subprocess.run([BIN, "-C", "-o", "memory.arena_cap_mb=1048577"],
                           capture_output=True, text=True, timeout=30)
        self.assertNotEqual(p.returncode, 0, p.stdout)
        self.assertIn("1048576", p.stderr)


if __name__ == "__main__":
    unittest.main()
