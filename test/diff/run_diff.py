#!/usr/bin/python3
# perfcached — differential harness: the same command streams to redis-server and perfcached.
# Copyright (c) 2026 the perfcached authors.
"""Starts Debian's redis-server and perfcached (its default multi-process
configuration) on free loopback ports, runs every stream file of
streams/, a seeded random mix (gen.py) and the dispatch-table checks against
both, and compares the reply bytes (after the per-command normalisers of
normalise.py). A difference not in allow.txt fails; so does a command of
perfcached's dispatch table (bin/perfcached --list-commands) with no compared
reply and no entry in exempt.txt. Ends with one line:
    diff: N commands covered, M streams, K replies compared, D differences
Usage: run_diff.py [--seed S] [--ops N] [--stream NAME] [-v] [--show-allowed] [--corrupt CMD]"""
import argparse
import fnmatch
import glob
import os
import random
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))

import gen  # noqa: E402
import normalise  # noqa: E402
import streamfile  # noqa: E402
from harness import BIN, Daemon, RedisServer  # noqa: E402
from resp import Closed, RawConn, encode, value  # noqa: E402


def show(b):
    """Reply bytes as one line of text (the allow-list form)."""
    out = []
    for x in b:
        if x == 13:
            out.append("\\r")
        elif x == 10:
            out.append("\\n")
        elif x == 0x5C:
            out.append("\\\\")
        elif 32 <= x < 127 and x != 0x7C:
            out.append(chr(x))
        else:
            out.append("\\x%02x" % x)
    return "".join(out)


def unshow(s):
    out, i = bytearray(), 0
    while i < len(s):
        if s[i] == "\\":
            e = s[i + 1]
            if e == "x":
                out.append(int(s[i + 2:i + 4], 16))
                i += 4
                continue
            out += {"r": b"\r", "n": b"\n", "\\": b"\\"}[e]
            i += 2
        else:
            out += s[i].encode()
            i += 1
    return bytes(out)


class Side:
    """One server: named connections, each command followed by a PING
    sentinel so that every reply it produced (SUBSCRIBE a b: two) is read."""

    def __init__(self, name, port, dispatched):
        self.name, self.port, self.dispatched = name, port, dispatched
        self.conns, self.cur = {}, "main"
        self.token = b"diff-sentinel-%d" % random.randrange(1 << 30)
        self.plain = b"$%d\r\n%s\r\n" % (len(self.token), self.token)
        self.sub = b"*2\r\n$4\r\npong\r\n" + self.plain

    def use(self, name):
        self.cur = name

    def reset(self):
        for c in self.conns.values():
            c.close()
        self.conns, self.cur = {}, "main"

    def call(self, args):
        c = self.conns.get(self.cur)
        if c is None:
            c = self.conns[self.cur] = RawConn(self.port)
        c.send(encode(args) + encode([b"PING", self.token]))
        parts = []
        try:
            for _ in range(100000):
                r = c.reply()
                if r == self.plain or r == self.sub:
                    return b"".join(parts)
                parts.append(r)
            raise ValueError("no sentinel")
        except Closed:
            end = b"<closed>"
        except socket.timeout:
            end = b"<timeout>"
        c.close()
        del self.conns[self.cur]
        return b"".join(parts) + end


def load_allow(path):
    out = []
    with open(path, encoding="utf-8") as f:
        for no, line in enumerate(f, 1):
            s = line.strip()
            if not s or s.startswith("#"):
                continue
            parts = [x.strip() for x in s.split(" | ")]
            if len(parts) != 5 or parts[0] not in ("known", "pending") or not parts[4]:
                sys.exit("%s:%d: want 'known|pending | command glob | redis reply | perfcached "
                         "reply | reason'" % (path, no))
            out.append({"line": no, "status": parts[0], "cmd": parts[1],
                        "redis": None if parts[2] == "*" else unshow(parts[2]),
                        "perf": None if parts[3] == "*" else unshow(parts[3]),
                        "reason": parts[4], "used": 0})
    return out


def load_exempt(path):
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            s = line.strip()
            if s and not s.startswith("#"):
                name, _, reason = s.partition(" ")
                if not reason.strip():
                    sys.exit("%s: %s has no reason" % (path, name))
                out[name.lower()] = reason.strip()
    return out


def dispatch_table():
    """perfcached's dispatch table, from the binary itself."""
    out = subprocess.run([BIN, "--list-commands"], capture_output=True, text=True, timeout=10,
                         check=True).stdout
    rows = {}
    for line in out.splitlines():
        name, arity, flags, first, last, step, group = line.split()
        rows[name] = {"arity": int(arity), "flags": [] if flags == "-" else flags.split(","),
                      "first": int(first), "last": int(last), "step": int(step), "group": group}
    return rows


class Run:
    def __init__(self, rs, ps, allow, verbose, corrupt=None):
        self.rs, self.ps, self.allow, self.verbose = rs, ps, allow, verbose
        self.corrupt = corrupt
        self.show_allowed = False
        self.compared = 0
        self.differences = []
        self.allowed = {"known": 0, "pending": 0}
        self.covered = {}

    def compare(self, args, where, track=True):
        r = self.rs.call(args)
        p = self.ps.call(args)
        if self.corrupt and args[0].lower() == self.corrupt and len(p) > 2:
            p = p[:-3] + bytes([p[-3] ^ 1]) + p[-2:]  # --corrupt: the harness must see it
        self.compared += 1
        rn, pn = normalise.normalise(args, r, p, self.rs, self.ps)
        cmd = streamfile.render(args)
        if rn != pn:
            for a in self.allow:
                if fnmatch.fnmatchcase(cmd, a["cmd"]) and a["redis"] in (None, rn) and \
                        a["perf"] in (None, pn):
                    a["used"] += 1
                    self.allowed[a["status"]] += 1
                    if self.show_allowed:
                        print("allowed (%s, allow.txt:%d) at %s: %s\n  redis:      %s\n  perfcached: %s"
                              % (a["status"], a["line"], where, cmd, show(r), show(p)))
                    break
            else:
                self.differences.append((where, cmd, r, p, rn, pn))
                print("DIFFERENCE at %s\n  command:    %s\n  redis:      %s\n  perfcached: %s"
                      % (where, cmd, show(r), show(p)))
                if (rn, pn) != (r, p):
                    print("  normalised: redis %s\n              perfcached %s" % (show(rn), show(pn)))
                print("  allow.txt:  pending | %s | %s | %s | <reason>" % (cmd, show(rn), show(pn)))
                return r, p
        elif self.verbose:
            print("ok %s: %s -> %s" % (where, cmd, show(p)[:100]))
        if track and p[:1] != b"-" and not p.startswith(b"<"):
            name = args[0].decode("latin-1").lower()
            self.covered[name] = self.covered.get(name, 0) + 1
        return r, p

    def fresh(self):
        for side in (self.rs, self.ps):
            side.reset()
            side.call([b"FLUSHALL"])
            side.reset()


def run_stream(run, path, dispatched):
    items = streamfile.load(path)
    name = os.path.basename(path)
    for no, kind, payload in items:
        if kind == "requires":
            missing = [c for c in payload if c.lower() not in dispatched]
            if missing:
                print("diff: %s skipped (perfcached does not dispatch %s)" % (name, " ".join(missing)))
                return False
    run.fresh()
    for no, kind, payload in items:
        if kind == "conn":
            run.rs.use(payload[0])
            run.ps.use(payload[0])
        elif kind == "flush":
            run.rs.call([b"FLUSHALL"])
            run.ps.call([b"FLUSHALL"])
        elif kind == "sleep":
            time.sleep(min(int(payload[0]), 2000) / 1000.0)
        elif kind == "cmd":
            run.compare(payload, "%s:%d" % (name, no))
    return True


def run_generated(run, seed, ops, dispatched):
    run.fresh()
    recent = []
    first = len(run.differences)
    for i, family, args in gen.commands(seed, ops, dispatched):
        recent = (recent + [streamfile.render(args)])[-8:]
        before = len(run.differences)
        run.compare(args, "seed %d op %d (%s)" % (seed, i, family))
        if len(run.differences) > before:
            print("  the commands before it:\n    " + "\n    ".join(recent[:-1]))
            print("  reproduce: test/diff/run_diff.py --seed %d --ops %d" % (seed, i + 1))
            if len(run.differences) - first >= 20:
                print("diff: stopping the generated stream after 20 differences")
                return


def table_checks(run, rows, exempt):
    """COMMAND agrees with the dispatch table; arity is what the door
    enforces; nothing outside the table is dispatched."""
    ps, rs = run.ps, run.rs
    ps.reset()
    rs.reset()
    problems = []

    def check(ok, what):
        run.compared += 1
        if not ok:
            problems.append(what)
            run.differences.append(("table", what, b"", b"", b"", b""))
            print("DIFFERENCE in the dispatch table checks: " + what)

    names = set(rows)
    listed = value(ps.call([b"COMMAND", b"LIST"]))
    check(sorted(x.decode() for x in listed) == sorted(names),
          "COMMAND LIST %s != dispatch table %s" % (sorted(x.decode() for x in listed), sorted(names)))
    check(value(ps.call([b"COMMAND", b"COUNT"])) == len(names), "COMMAND COUNT != %d" % len(names))
    docs = value(ps.call([b"COMMAND", b"DOCS"]))
    check(sorted(zip(docs[0::2], [d[1] for d in docs[1::2]])) ==
          sorted((n.encode(), r["group"].encode()) for n, r in rows.items()),
          "COMMAND DOCS (every command) != dispatch table names and groups")
    everything = value(ps.call([b"COMMAND"]))
    check(sorted(e[0].decode() for e in everything) == sorted(names), "COMMAND names != dispatch table")
    for name, row in sorted(rows.items()):
        info = value(ps.call([b"COMMAND", b"INFO", name.encode()]))[0]
        got = info and [info[1], [f[1].decode() for f in info[2]], info[3], info[4], info[5]]
        want = [row["arity"], row["flags"], row["first"], row["last"], row["step"]]
        check(got == want, "COMMAND INFO %s = %r, dispatch table row %r" % (name, got, want))
        docs = value(ps.call([b"COMMAND", b"DOCS", name.encode()]))
        check(docs[:1] == [name.encode()] and docs[1][1] == row["group"].encode(),
              "COMMAND DOCS %s = %r, group %s" % (name, docs, row["group"]))
        # Dispatched: whatever the reply, not "unknown command".
        check(not ps.call([name.encode()]).startswith(b"-ERR unknown command"),
              "%s is listed but not dispatched" % name)
        ps.reset()
        # Arity as the door enforces it, the same bytes as redis-server's.
        n = row["arity"]
        tries = []
        if abs(n) >= 2:
            tries.append([name.encode()] + [b"x"] * (abs(n) - 2))  # one argument too few
        if n > 0:
            tries.append([name.encode()] + [b"x"] * n)  # one too many
        for args in tries:
            wrong = b"-ERR wrong number of arguments for '%s' command\r\n" % name.encode()
            p = ps.call(args)
            if name in rs.dispatched:
                run.compare(args, "arity of %s" % name, track=False)
            else:
                check(p == wrong, "%s with %d arguments: %r" % (name, len(args), p))
            ps.reset()
            rs.reset()
        # COMMAND INFO against redis-server's (normalised: arity, modelled
        # flags, key positions).
        if name in rs.dispatched:
            run.compare([b"COMMAND", b"INFO", name.encode()], "COMMAND INFO %s" % name, track=False)
            # Key positions in use: GETKEYS over k1..kn, n the least the arity allows (>= 3).
            n = row["arity"] - 1 if row["arity"] > 0 else max(-row["arity"] - 1, 3)
            run.compare([b"COMMAND", b"GETKEYS", name.encode()] + [b"k%d" % i for i in range(1, n + 1)],
                        "COMMAND GETKEYS %s" % name, track=False)
            run.compare([b"COMMAND", b"DOCS", name.encode()], "COMMAND DOCS %s" % name, track=False)
    # Nothing outside the table is dispatched: every command redis-server
    # has and perfcached does not list is an unknown command to perfcached.
    for name in sorted(rs.dispatched - names):
        p = ps.call([name.encode()])
        check(p.startswith(b"-ERR unknown command '%s'" % name.encode()),
              "%s is not in the dispatch table but answers %r" % (name, p[:80]))
    ps.reset()
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--ops", type=int, default=4000)
    ap.add_argument("--stream", action="append", help="run only these stream files (names)")
    ap.add_argument("-v", action="store_true", help="print every comparison")
    ap.add_argument("--show-allowed", action="store_true",
                    help="print each difference that allow.txt accepted")
    ap.add_argument("--corrupt", metavar="CMD",
                    help="flip one bit of each perfcached reply to CMD before comparing (the "
                         "harness must then fail: its self-test)")
    opt = ap.parse_args()
    seed = opt.seed if opt.seed is not None else random.SystemRandom().randrange(1 << 31)
    print("diff: seed %d, %d generated commands (reproduce: test/diff/run_diff.py --seed %d --ops %d)"
          % (seed, opt.ops, seed, opt.ops))
    t0 = time.time()
    rows = dispatch_table()
    allow = load_allow(os.path.join(HERE, "allow.txt"))
    exempt = load_exempt(os.path.join(HERE, "exempt.txt"))
    redis = RedisServer()
    perf = None
    try:
        perf = Daemon(workers=None)
        rs = Side("redis", redis.port, set())
        ps = Side("perfcached", perf.port, set(rows))
        rs.dispatched = {x.decode().lower() for x in value(rs.call([b"COMMAND", b"LIST"]))}
        rs.reset()
        run = Run(rs, ps, allow, opt.v, opt.corrupt.lower().encode() if opt.corrupt else None)
        run.show_allowed = opt.show_allowed
        streams = 0
        files = sorted(glob.glob(os.path.join(HERE, "streams", "*.txt")))
        if opt.stream:
            files = [f for f in files if os.path.basename(f) in opt.stream or
                     os.path.basename(f)[:-4] in opt.stream]
        for path in files:
            streams += run_stream(run, path, ps.dispatched)
        if opt.ops > 0:
            run_generated(run, seed, opt.ops, ps.dispatched)
            streams += 1
        if not opt.stream:
            table_checks(run, rows, exempt)
        alive = perf.proc.poll() is None
    finally:
        if perf is not None:
            perf.stop()
        redis.stop()
    if not alive:
        run.differences.append(("daemon", "perfcached exited during the run", b"", b"", b"", b""))
        print("DIFFERENCE: perfcached exited during the run (log: %s)" % perf.log_path)
    uncovered = []
    if not opt.stream:
        for name in sorted(rows):
            if name not in run.covered and name not in exempt:
                uncovered.append(name)
        for name in sorted(exempt):
            if name not in rows:
                print("diff: note: exempt.txt names %s, which perfcached does not dispatch" % name)
        if uncovered:
            print("diff: NOT COVERED (no compared non-error reply, no entry in exempt.txt): "
                  + " ".join(uncovered))
    for a in allow if not opt.stream else []:
        if not a["used"] and a["status"] == "pending":
            print("diff: note: allow.txt:%d (pending) was not needed in this run: %s"
                  % (a["line"], a["cmd"]))
    print("diff: %d allowed (%d known, %d pending), %.1f s"
          % (sum(run.allowed.values()), run.allowed["known"], run.allowed["pending"],
             time.time() - t0))
    print("diff: %d commands covered, %d streams, %d replies compared, %d differences"
          % (len([n for n in rows if n in run.covered]), streams, run.compared,
             len(run.differences)))
    if uncovered:
        print("diff: FAILED: %d dispatched commands without differential coverage" % len(uncovered))
    return 1 if run.differences or uncovered else 0


if __name__ == "__main__":
    sys.exit(main())
