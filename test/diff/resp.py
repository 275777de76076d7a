# perfcached — raw RESP client for the differential harness: replies as exact bytes.
# Copyright (c) 2026 the perfcached authors.
"""encode() a command as a RESP array; RawConn.reply() reads exactly one
complete reply (nested aggregates included) and returns its bytes; parse()
turns reply bytes into Python values for the normalisers. RESP2 types, and the
RESP3 ones (_ , # ! = ( % ~ > |) so HELLO 3 can be added without a new reader."""
import socket

AGG = {b"*", b"~", b">"}          # n elements
MAP = {b"%", b"|"}                # n pairs (| is an attribute: it precedes the reply it annotates)
LINE = {b"+", b"-", b":", b"_", b"#", b",", b"("}
BLOB = {b"$", b"!", b"="}


def encode(args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Closed(Exception):
    pass


class RawConn:
    def __init__(self, port, timeout=5.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buf = b""
        self.pos = 0

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def send(self, data):
        self.sock.sendall(data)

    def _fill(self):
        try:
            chunk = self.sock.recv(1 << 16)
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            raise Closed()
        if self.pos > (1 << 20):
            self.buf, self.pos = self.buf[self.pos:], 0
        self.buf += chunk

    def _line(self):
        while True:
            i = self.buf.find(b"\r\n", self.pos)
            if i >= 0:
                break
            self._fill()
        line = self.buf[self.pos:i + 2]
        self.pos = i + 2
        return line

    def _take(self, n):
        while len(self.buf) - self.pos < n:
            self._fill()
        out = self.buf[self.pos:self.pos + n]
        self.pos += n
        return out

    def reply(self):
        line = self._line()
        t = line[:1]
        if t in LINE:
            return line
        if t in BLOB:
            n = int(line[1:-2])
            return line if n < 0 else line + self._take(n + 2)
        if t in AGG or t in MAP:
            n = int(line[1:-2])
            n = n * 2 if t in MAP else n
            parts = [line] + [self.reply() for _ in range(max(n, 0))]
            if t == b"|":  # an attribute belongs to the reply that follows it
                parts.append(self.reply())
            return b"".join(parts)
        raise ValueError("bad reply line %r" % line)


def parse(data, pos=0):
    """(value, next_pos): + -> ('+', bytes), - -> ('-', bytes), : -> int,
    $ -> bytes or None, * -> list or None."""
    i = data.index(b"\r\n", pos)
    t, body = data[pos:pos + 1], data[pos + 1:i]
    pos = i + 2
    if t == b"+" or t == b"-":
        return (t.decode(), body), pos
    if t == b":":
        return int(body), pos
    if t in BLOB:
        n = int(body)
        if n < 0:
            return None, pos
        return data[pos:pos + n], pos + n + 2
    if t in AGG or t in MAP:
        n = int(body)
        if n < 0:
            return None, pos
        n = n * 2 if t in MAP else n
        out = []
        for _ in range(n):
            v, pos = parse(data, pos)
            out.append(v)
        return out, pos
    if t == b"_":
        return None, pos
    return (t.decode(), body), pos


def value(data):
    return parse(data)[0]


def build(v):
    """The RESP2 bytes of a parsed value (for normalisers that rewrite a reply)."""
    if v is None:
        return b"$-1\r\n"
    if isinstance(v, tuple):
        return v[0].encode() + v[1] + b"\r\n"
    if isinstance(v, int):
        return b":%d\r\n" % v
    if isinstance(v, bytes):
        return b"$%d\r\n%s\r\n" % (len(v), v)
    if isinstance(v, str):
        return b"+%s\r\n" % v.encode()
    return b"*%d\r\n" % len(v) + b"".join(build(x) for x in v)
