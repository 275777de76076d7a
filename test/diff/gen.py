# perfcached — the seeded command generator of test/diff: a template table per family.
# Copyright (c) 2026 the perfcached authors.
"""ROWS is the table: (family, weight, template). A template is a command
line in which
    {pool}        is replaced by a random item of POOLS[pool]
    {a|b|c}       is one of the words a, b, c
    [ ... ]       is included half of the time (not nested)
Rows whose command perfcached does not dispatch are left out, so rows for a
family can be written before the family exists. Adding a family (hash, set,
list, zset) is adding rows here; its keys share KEYS with every other family,
so commands of one type run against keys of another (WRONGTYPE paths)."""
import random
import re

KEYS = [b"k0", b"k1", b"k2", b"k3", b"n0", b"n1", b"k\x00\r\n"]
POOLS = {
    "key": KEYS,
    "val": [b"", b"v", b"hello world", b"0", b"1", b"-1", b"12", b"3.5", b"1e3", b" 7",
            b"9223372036854775807", b"-9223372036854775808", b"\x00\xff\r\n", b"x" * 70,
            b"007", b"+1", b"abc"],
    "int": [b"0", b"1", b"-1", b"5", b"100", b"-100", b"9223372036854775807",
            b"-9223372036854775808", b"9223372036854775808", b"x", b"1.5", b"", b" 1"],
    "float": [b"0.1", b"-1.5", b"1e3", b"5", b"-0", b"abc", b"inf", b"1e400", b"0x10", b""],
    "ttl": [b"100", b"1000", b"5000", b"0", b"-5", b"x", b"9223372036854775807"],
    "ttlms": [b"100000", b"2000000", b"0", b"-1", b"y"],
    "at": [b"1", b"4102444800", b"-1", b"0", b"z"],  # unix s: past, 2100
    "at2100": [b"4102444800", b"4102444801", b"4102444900", b"4102445800"],
    "atms": [b"1", b"4102444800000", b"-1", b"0", b"z"],  # unix ms
    "off": [b"0", b"1", b"3", b"-1", b"-3", b"10", b"100", b"-100", b"x",
            b"536870912", b"9223372036854775807"],
    "pat": [b"*", b"k*", b"k[0-2]", b"?0", b"n*", b"\\*", b"[^k]*", b"k\x00*"],
    "db": [b"0", b"1", b"15", b"16", b"-1", b"x"],
    "count": [b"1", b"2", b"10", b"100", b"0", b"-1", b"x"],
    "field": [b"f0", b"f1", b"f2", b""],  # hash fields / set members
}

ROWS = [
    # strings
    ("string", 6, "SET {key} {val}"),
    ("string", 2, "SET {key} {val} [EX {ttl}] [{NX|XX}] [GET] [KEEPTTL]"),
    ("string", 1, "SET {key} {val} [PX {ttlms}] [{NX|XX}] [GET] [KEEPTTL]"),
    ("string", 1, "SET {key} {val} EXAT {at}"),
    ("string", 1, "SET {key} {val} PXAT {atms}"),
    ("string", 6, "GET {key}"),
    ("string", 1, "SETNX {key} {val}"),
    ("string", 1, "SETEX {key} {ttl} {val}"),
    ("string", 1, "PSETEX {key} {ttlms} {val}"),
    ("string", 1, "GETSET {key} {val}"),
    ("string", 1, "GETDEL {key}"),
    ("string", 1, "GETEX {key} [EX {ttl}] [PERSIST]"),
    ("string", 0.5, "GETEX {key} PX {ttlms} [PERSIST]"),
    ("string", 0.5, "GETEX {key} EXAT {at}"),
    ("string", 0.5, "GETEX {key} PXAT {atms}"),
    ("string", 2, "MGET {key} {key} [{key}]"),
    ("string", 1, "MSET {key} {val} [{key} {val}]"),
    ("string", 1, "MSETNX {key} {val} [{key} {val}]"),
    ("string", 2, "APPEND {key} {val}"),
    ("string", 2, "STRLEN {key}"),
    ("string", 2, "GETRANGE {key} {off} {off}"),
    ("string", 1, "SUBSTR {key} {off} {off}"),
    ("string", 2, "SETRANGE {key} {off} {val}"),
    ("string", 3, "INCR {key}"),
    ("string", 2, "DECR {key}"),
    ("string", 3, "INCRBY {key} {int}"),
    ("string", 2, "DECRBY {key} {int}"),
    ("string", 3, "INCRBYFLOAT {key} {float}"),
    # keys
    ("keys", 2, "DEL {key} [{key}]"),
    ("keys", 1, "UNLINK {key} [{key}]"),
    ("keys", 3, "EXISTS {key} [{key}]"),
    ("keys", 3, "TYPE {key}"),
    # GT / LT only on absolute times: with relative ones the answer depends
    # on whether a millisecond passed since the last EXPIRE (streams cover them)
    ("keys", 2, "EXPIRE {key} {ttl} [{NX|XX}]"),
    ("keys", 1, "PEXPIRE {key} {ttlms} [{NX|XX}]"),
    ("keys", 1, "EXPIREAT {key} {at} [{NX|XX|GT|LT}]"),
    ("keys", 1, "EXPIREAT {key} {at2100} [{NX|XX|GT|LT}]"),
    ("keys", 1, "PEXPIREAT {key} {atms} [{NX|XX|GT|LT}]"),
    ("keys", 3, "TTL {key}"),
    ("keys", 2, "PTTL {key}"),
    ("keys", 1, "EXPIRETIME {key}"),
    ("keys", 1, "PEXPIRETIME {key}"),
    ("keys", 2, "PERSIST {key}"),
    ("keys", 2, "KEYS {pat}"),
    ("keys", 2, "SCAN 0 [MATCH {pat}] [COUNT {count}] [TYPE {string|hash|set|list|zset}]"),
    ("keys", 1, "DBSIZE"),
    ("keys", 1, "RENAME {key} {key}"),
    ("keys", 1, "RENAMENX {key} {key}"),
    ("keys", 1, "RANDOMKEY"),
    ("keys", 1, "TOUCH {key} [{key}]"),
    ("keys", 1, "COPY {key} {key} [DB {db}] [REPLACE]"),
    ("keys", 0.2, "FLUSHDB"),
    ("server", 0.3, "SELECT {db}"),
    ("server", 0.5, "PING [{val}]"),
    ("server", 0.5, "ECHO {val}"),
    # hashes and sets: ready for when perfcached dispatches them
    ("hash", 3, "HSET {key} {field} {val} [{field} {val}]"),
    ("hash", 3, "HGET {key} {field}"),
    ("hash", 1, "HDEL {key} {field} [{field}]"),
    ("hash", 1, "HGETALL {key}"),
    ("hash", 1, "HLEN {key}"),
    ("hash", 1, "HINCRBY {key} {field} {int}"),
    ("set", 3, "SADD {key} {field} [{field}]"),
    ("set", 1, "SREM {key} {field} [{field}]"),
    ("set", 2, "SISMEMBER {key} {field}"),
    ("set", 1, "SMEMBERS {key}"),
    ("set", 1, "SCARD {key}"),
]

_TOKEN = re.compile(r"\[[^\]]*\]|\{[^}]*\}|[^\s\[{]+|\s+")


def expand(template, rnd):
    """The argument list of one instance of a template."""
    out = []

    def walk(t):
        for m in _TOKEN.finditer(t):
            tok = m.group(0)
            if tok.isspace():
                continue
            if tok.startswith("["):
                if rnd.random() < 0.5:
                    walk(tok[1:-1])
            elif tok.startswith("{"):
                body = tok[1:-1]
                if "|" in body:
                    out.append(rnd.choice(body.split("|")).encode())
                else:
                    out.append(rnd.choice(POOLS[body]))
            else:
                out.append(tok.encode())
    walk(template)
    return out


def rows_for(dispatched):
    return [r for r in ROWS if r[2].split()[0].lower() in dispatched]


def commands(seed, ops, dispatched):
    """(seed, op index, args) for `ops` random commands."""
    rnd = random.Random(seed)
    rows = rows_for(dispatched)
    weights = [r[1] for r in rows]
    for i in range(ops):
        row = rnd.choices(rows, weights)[0]
        yield i, row[0], expand(row[2], rnd)
