# perfcached — the stream file syntax of test/diff (one command per line).
# Copyright (c) 2026 the perfcached authors.
"""A stream file is one command per line:

    SET k "hello world"         words split on blanks; "..." quotes one argument
    SET "bin\\x00key" "a\\r\\nb"  in quotes: \\xHH \\r \\n \\t \\0 \\\\ \\" escapes
    GET ""                      an empty argument
    # a comment                 blank lines and # lines are skipped

and directives, which are not sent:

    @conn NAME      the following commands go on connection NAME (opened on
                    both servers on first use; "main" is the first)
    @flush          FLUSHALL on both servers (not compared)
    @sleep MS       wait (for expiries), at most 2000 ms
    @requires A B   run the file only if perfcached dispatches A, B (a family
                    written before its commands exist is skipped, and said so)
"""
import re

_ESC = {"r": b"\r", "n": b"\n", "t": b"\t", "0": b"\x00", "\\": b"\\", '"': b'"'}


class StreamError(Exception):
    pass


def split_line(line, where=""):
    """The arguments of one line as bytes."""
    out, i, n = [], 0, len(line)
    while i < n:
        if line[i] in " \t":
            i += 1
            continue
        if line[i] == '"':
            i += 1
            arg = bytearray()
            while True:
                if i >= n:
                    raise StreamError("%s: unbalanced quote" % where)
                ch = line[i]
                if ch == '"':
                    i += 1
                    break
                if ch == "\\":
                    if i + 1 >= n:
                        raise StreamError("%s: backslash at end of line" % where)
                    e = line[i + 1]
                    if e == "x":
                        h = line[i + 2:i + 4]
                        if not re.fullmatch(r"[0-9a-fA-F]{2}", h):
                            raise StreamError("%s: bad \\x escape" % where)
                        arg.append(int(h, 16))
                        i += 4
                        continue
                    if e not in _ESC:
                        raise StreamError("%s: unknown escape \\%s" % (where, e))
                    arg += _ESC[e]
                    i += 2
                    continue
                arg += ch.encode()
                i += 1
            if i < n and line[i] not in " \t":
                raise StreamError("%s: text right after a closing quote" % where)
            out.append(bytes(arg))
        else:
            j = i
            while j < n and line[j] not in " \t":
                j += 1
            out.append(line[i:j].encode())
            i = j
    return out


def quote(arg):
    """One argument in stream syntax (the inverse of split_line)."""
    if arg and all(33 <= b < 127 and b not in b'"\\#' for b in arg):
        return arg.decode()
    s = '"'
    for b in arg:
        if b == 0x22:
            s += '\\"'
        elif b == 0x5C:
            s += "\\\\"
        elif b == 13:
            s += "\\r"
        elif b == 10:
            s += "\\n"
        elif 32 <= b < 127:
            s += chr(b)
        else:
            s += "\\x%02x" % b
    return s + '"'


def render(args):
    return " ".join(quote(a) for a in args)


def load(path):
    """[(lineno, kind, payload)]: kind 'cmd' (payload: [bytes]) or a directive
    name (payload: its words)."""
    out = []
    with open(path, encoding="utf-8") as f:
        for no, raw in enumerate(f, 1):
            line = raw.rstrip("\n")
            s = line.strip()
            if not s or s.startswith("#"):
                continue
            where = "%s:%d" % (path, no)
            if s.startswith("@"):
                words = s[1:].split()
                if words[0] not in ("conn", "flush", "sleep", "requires"):
                    raise StreamError("%s: unknown directive @%s" % (where, words[0]))
                out.append((no, words[0], words[1:]))
                continue
            out.append((no, "cmd", split_line(s, where)))
    return out
