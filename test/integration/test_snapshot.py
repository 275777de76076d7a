"""Snapshots (issue 11 parts 3, 4 and 5's -R): SAVE / BGSAVE / LASTSAVE,
save rules, recovery at start after kill -9 of the whole daemon, the
fallback to an older snapshot when the newest is damaged, the shutdown
snapshot, and `perfcached -R`. Real files, real processes, Redis clients."""
import glob
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

import redis

from harness import BIN, Daemon, children, fill_numbered, numbered_wrong


def kill9_all(d):
    """kill -9 of the supervisor and every child: a crash, no stop path."""
    kids = children(d.pid)
    os.kill(d.pid, signal.SIGKILL)
    for k in kids:
        try:
            os.kill(k, signal.SIGKILL)
        except ProcessLookupError:
            pass
    d.proc.wait(timeout=10)
    deadline = time.time() + 10
    while time.time() < deadline and any(os.path.exists("/proc/%d" % k) for k in kids):
        time.sleep(0.05)


def fill(r, n):
    p = r.pipeline(transaction=False)
    for i in range(n):
        p.set("s:%d" % i, "value-%d" % i)
        if i % 1000 == 999:
            p.execute()
    p.execute()
    r.set("ttl", "x", ex=500)
    r.incrby("counter", 41)
    r.hset("h", mapping={"f%d" % i: "v%d" % i for i in range(300)})
    r.sadd("ints", *range(20))
    r.sadd("members", "a", "b", "c")
    return n + 5


def wait_snapshots(dir_, n, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if len(glob.glob(os.path.join(dir_, "snapshot-*.pcs"))) >= n:
            return True
        time.sleep(0.05)
    return False


class Snapshots(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="perfcached-snap-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def daemon(self, extra=(), arena_mb=128):
        # Snapshots alone (fsync = off: no WAL): what a snapshot holds is
        # all a restart gets back. test_wal.py covers snapshot + WAL.
        d = Daemon(arena_mb=arena_mb, overrides=["wal.dir=%s/data" % self.dir, 'wal.save=""', "wal.fsync=off"] +
                   list(extra))
        self.addCleanup(d.stop)
        return d

    def test_bgsave_then_kill9_recovers_every_key(self):
        d = self.daemon()
        r = redis.Redis(port=d.port)
        n = fill(r, 50000)
        self.assertEqual(r.bgsave(), True)
        self.assertTrue(wait_snapshots(self.dir + "/data", 1))
        deadline = time.time() + 30
        while time.time() < deadline and r.info("persistence")["rdb_bgsave_in_progress"]:
            time.sleep(0.05)
        info = r.info("persistence")
        self.assertEqual(info["rdb_last_bgsave_status"], "ok")
        self.assertEqual(info["rdb_saves"], 1)
        lastsave = r.lastsave()
        r.set("after-the-snapshot", "lost: no WAL (fsync = off)")
        kill9_all(d)
        d2 = self.daemon()
        r2 = redis.Redis(port=d2.port)
        self.assertIn("recovered %d key(s) from snapshot" % n, d2.read_log())
        self.assertEqual(r2.dbsize(), n)
        self.assertEqual(r2.get("s:49999"), b"value-49999")
        self.assertTrue(480 <= r2.ttl("ttl") <= 500)
        self.assertEqual(r2.incr("counter"), 42)
        self.assertEqual(r2.object("encoding", "counter"), b"int")
        self.assertEqual(r2.hget("h", "f299"), b"v299")
        self.assertEqual(r2.object("encoding", "ints"), b"intset")
        self.assertEqual(r2.smembers("members"), {b"a", b"b", b"c"})
        self.assertIsNone(r2.get("after-the-snapshot"))
        self.assertEqual(r2.lastsave(), lastsave)
        self.assertEqual(r2.info("persistence")["rdb_last_load_keys_loaded"], n)

    def test_damaged_newest_falls_back_to_the_previous(self):
        d = self.daemon()
        r = redis.Redis(port=d.port)
        r.set("generation", "1")
        self.assertEqual(r.save(), True)
        r.set("generation", "2")
        r.set("only-in-second", "x")
        self.assertEqual(r.save(), True)
        snaps = sorted(glob.glob(self.dir + "/data/snapshot-*.pcs"))
        self.assertEqual(len(snaps), 2)
        d.stop()
        # Flip one byte in the newest file's last block.
        with open(snaps[-1], "r+b") as f:
            f.seek(-10, os.SEEK_END)
            b = f.read(1)
            f.seek(-10, os.SEEK_END)
            f.write(bytes([b[0] ^ 0x40]))
        bad = subprocess.run([BIN, "-R", snaps[-1]], capture_output=True, text=True)
        self.assertEqual(bad.returncode, 1)
        self.assertIn("checksum mismatch", bad.stderr)
        d2 = self.daemon()
        log = d2.read_log()
        self.assertIn("is damaged", log)
        self.assertIn("falling back to the previous one", log)
        r2 = redis.Redis(port=d2.port)
        self.assertEqual(r2.get("generation"), b"1")
        self.assertIsNone(r2.get("only-in-second"))

    def test_a_snapshot_cut_short_is_refused_and_none_readable_stops_the_start(self):
        d = self.daemon()
        redis.Redis(port=d.port).set("k", "v")
        redis.Redis(port=d.port).save()
        d.stop()
        snap = glob.glob(self.dir + "/data/snapshot-*.pcs")[0]
        size = os.path.getsize(snap)
        with open(snap, "r+b") as f:
            f.truncate(size - 10)
        p = subprocess.run([BIN, "-D", "-o", "listen.resp=127.0.0.1:0", "-o", "mi.fifo_name=", "-o", "mi.datagram=",
                            "-o", "memory.arena_mb=32", "-o", "wal.dir=%s/data" % self.dir],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 1)
        self.assertIn("truncated", p.stderr)
        self.assertIn("can be read", p.stderr)

    def test_a_snapshot_larger_than_a_lowered_arena_stops_or_evicts_by_the_policy(self):
        # Regression (review, session 19): under an evicting policy the load
        # made room by evicting what it had just loaded without a word (and
        # a later fields record could rebuild a part of an evicted hash).
        # Now: noeviction stops the start naming arena_mb; an evicting
        # policy evicts, says how many, and what stays is right.
        d = self.daemon(arena_mb=128)
        r = redis.Redis(port=d.port)
        fill_numbered(r, 60000)
        r.save()
        d.stop()
        p = subprocess.run([BIN, "-D", "-o", "listen.resp=127.0.0.1:0", "-o", "mi.fifo_name=",
                            "-o", "mi.datagram=", "-o", "memory.arena_mb=32", "-o", "memory.hugepages=off",
                            "-o", "wal.dir=%s/data" % self.dir, "-o", "wal.fsync=off"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 1, p.stderr[-2000:])
        self.assertIn("does not fit the arena", p.stderr)
        self.assertIn("arena_mb", p.stderr)
        d2 = self.daemon(["memory.maxmemory_policy=allkeys-lru"], arena_mb=32)
        r2 = redis.Redis(port=d2.port)
        n = r2.dbsize()
        self.assertGreater(n, 1000)
        self.assertLess(n, 60000)
        m = re.search(r"(\d+) key\(s\) evicted by the policy to fit", d2.read_log())
        self.assertTrue(m, d2.read_log()[-2000:])
        self.assertEqual(int(m.group(1)), 60000 - n)
        self.assertEqual(numbered_wrong(r2), [])

    def test_save_rule_and_shutdown_snapshot(self):
        d = Daemon(overrides=["wal.dir=%s/data" % self.dir, "wal.save=1 3", "wal.fsync=off"])
        self.addCleanup(d.stop)
        r = redis.Redis(port=d.port)
        r.set("a", "1")
        time.sleep(1.5)
        self.assertEqual(glob.glob(self.dir + "/data/snapshot-*.pcs"), [], "one change is below the rule's 3")
        r.set("b", "2")
        r.set("c", "3")
        self.assertTrue(wait_snapshots(self.dir + "/data", 1, timeout=10), "the rule (1 s, 3 changes) never fired")
        self.assertIn("3 change(s) in 1 s", d.read_log())
        r.set("d", "4")  # after the rule's snapshot: saved by the shutdown snapshot
        self.assertEqual(d.stop(), 0)
        self.assertIn("snapshot (shutdown)", d.read_log())
        d2 = Daemon(overrides=["wal.dir=%s/data" % self.dir, 'wal.save=""', "wal.fsync=off"])
        self.addCleanup(d2.stop)
        self.assertEqual(redis.Redis(port=d2.port).mget("a", "b", "c", "d"), [b"1", b"2", b"3", b"4"])

    def test_save_rules_count_ttl_only_changes(self):
        # EXPIRE and PERSIST change a key (Redis counts them in its dirty
        # count): a rule of 3 changes fires on SET, EXPIRE, PERSIST.
        d = Daemon(overrides=["wal.dir=%s/data" % self.dir, "wal.save=1 3", "wal.fsync=off"])
        self.addCleanup(d.stop)
        r = redis.Redis(port=d.port)
        r.set("a", "1")
        self.assertFalse(r.persist("a"))  # no TTL: nothing changed, nothing counted
        time.sleep(1.5)
        self.assertEqual(glob.glob(self.dir + "/data/snapshot-*.pcs"), [], "one change is below the rule's 3")
        self.assertTrue(r.expire("a", 1000))
        self.assertTrue(r.persist("a"))
        self.assertTrue(wait_snapshots(self.dir + "/data", 1, timeout=10), "TTL changes were not counted")
        self.assertIn("3 change(s) in 1 s", d.read_log())

    def test_bgsave_asked_during_a_save_runs_after_it(self):
        # Regression (review, session 8): the persist process marked the
        # request taken before it held the claim; a SAVE holding it made
        # the BGSAVE vanish.
        d = self.daemon(arena_mb=256)
        r = redis.Redis(port=d.port)
        subprocess.run(["redis-benchmark", "-p", str(d.port), "-t", "set", "-n", "300000", "-r", "300000",
                        "-d", "200", "-P", "32", "-q"], check=True, capture_output=True, timeout=120)
        import threading
        t = threading.Thread(target=lambda: redis.Redis(port=d.port).save())
        t.start()
        deadline = time.time() + 10
        while time.time() < deadline and not r.info("persistence")["rdb_bgsave_in_progress"]:
            time.sleep(0.002)
        self.assertTrue(r.execute_command("BGSAVE", "SCHEDULE"))
        t.join()
        self.assertTrue(wait_snapshots(self.dir + "/data", 2, timeout=20), "the BGSAVE asked during SAVE never ran")
        self.assertIn("snapshot (BGSAVE)", d.read_log())

    def test_commands_and_errors(self):
        d = Daemon()  # no [wal] dir
        self.addCleanup(d.stop)
        r = redis.Redis(port=d.port)
        with self.assertRaisesRegex(redis.ResponseError, "no snapshot directory"):
            r.execute_command("BGSAVE")
        with self.assertRaisesRegex(redis.ResponseError, "no snapshot directory"):
            r.save()
        self.assertAlmostEqual(r.lastsave().timestamp(), time.time(), delta=60)  # the start, as Redis
        d2 = self.daemon(arena_mb=256)
        r2 = redis.Redis(port=d2.port)
        subprocess.run(["redis-benchmark", "-p", str(d2.port), "-t", "set", "-n", "300000", "-r", "300000",
                        "-d", "200", "-P", "32", "-q"], check=True, capture_output=True, timeout=120)
        # (redis-py's bgsave() sends BGSAVE SCHEDULE: the plain form by hand)
        self.assertTrue(r2.execute_command("BGSAVE"))  # +Background saving started
        with self.assertRaisesRegex(redis.ResponseError, "already in progress"):
            r2.execute_command("BGSAVE")  # asked, not started yet
        deadline = time.time() + 10
        while time.time() < deadline and not r2.info("persistence")["rdb_bgsave_in_progress"]:
            time.sleep(0.005)
        with self.assertRaisesRegex(redis.ResponseError, "already in progress"):
            r2.execute_command("BGSAVE")
        self.assertTrue(r2.execute_command("BGSAVE", "SCHEDULE"))  # +Background saving scheduled
        with self.assertRaisesRegex(redis.ResponseError, "syntax error"):
            r2.execute_command("BGSAVE", "now")
        self.assertTrue(wait_snapshots(self.dir + "/data", 2), "the scheduled BGSAVE did not run")
        # -R on what the daemon wrote.
        snap = sorted(glob.glob(self.dir + "/data/snapshot-*.pcs"))[-1]
        out = subprocess.run([BIN, "-R", snap], capture_output=True, text=True, check=True).stdout
        self.assertIn("OK (every checksum verified)", out)
        self.assertRegex(out, r"collection 0: \d+ string")
        # kept: the newest 2 (wal.snapshots_kept default)
        r2.save()
        self.assertEqual(len(glob.glob(self.dir + "/data/snapshot-*.pcs")), 2)


if __name__ == "__main__":
    unittest.main()
