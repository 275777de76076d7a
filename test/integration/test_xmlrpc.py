# perfcached — the XML-RPC door (OpenSIPS mi_xmlrpc_ng) driven by Python's standard xmlrpc.client.
# Copyright (c) 2026 the perfcached authors.
"""Every MI command over XML-RPC answers what it answers over the FIFO;
positional and named params; faults for JSON-RPC errors; malformed XML,
wrong method / path / content type, oversized and empty bodies; the bearer
token and the Host check; one daemon per port; `kill`. Real daemons on
loopback, stopped by PID; every wait is bounded."""
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest
import xmlrpc.client

from harness import BIN, Daemon, free_port, http_request, mi_fifo_raw, wait_for_path, wait_tcp
from test_mi_all import CALLS

# Commands that change the daemon: the table runs them once per transport
# (it leaves the daemon as it found it) and their answers are compared.
# The others run over the FIFO and then at once over XML-RPC.
CHANGING = {"reset_statistics", "reset_all_statistics", "event_subscribe", "perf_stats_reset", "perf_set",
            "perf_ttl", "perf_del", "perf_create", "perf_resize", "perf_rename", "perf_drop"}
# Its answer is a clock: compared by shape (members, lengths, types).
MOVING = {"uptime", "perf_save", "perf_load", "perf_sync"}  # times and rates move


def norm(v, exact, xml):
    """A value as comparable facts, with exact=False only its shape. A
    number's kind is checked: what the JSON doors send as an integer in the
    32-bit range must come as an XML-RPC <int>, any other number as a
    <double> (as mi_xmlrpc_ng answers); xml= says which side v is."""
    if isinstance(v, bool):
        return ("bool", v if exact else None)
    if isinstance(v, (int, float)):
        if xml:
            kind = "int" if isinstance(v, int) else "double"
        else:
            kind = "int" if float(v).is_integer() and -2 ** 31 <= v < 2 ** 31 else "double"
        return (kind, float(v) if exact else None)
    if isinstance(v, str):
        return ("str", v if exact else None)
    if v is None:
        return ("nil",)
    if isinstance(v, list):
        return [norm(x, exact, xml) for x in v]
    if isinstance(v, dict):
        return {k: norm(x, exact, xml) for k, x in v.items()}
    raise TypeError(type(v))


def post(port, body, path="/RPC2", ctype="text/xml", method="POST", host=None):
    """(status, body, Content-Type) of one raw request to the XML-RPC door."""
    return http_request(port, method, path, body, {"Content-Type": ctype} if ctype else {}, host)


def fault_of(body):
    """(faultCode, faultString) of a methodResponse document."""
    try:
        xmlrpc.client.loads(body)
    except xmlrpc.client.Fault as f:
        return f.faultCode, f.faultString
    raise AssertionError("not a fault: %r" % body[:300])


class XmlRpcDoor(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.port = free_port()
        # A bare port is 127.0.0.1.
        cls.dbdir = tempfile.mkdtemp(prefix="perfcached-xmlrpc-db-")
        cls.d = Daemon(workers=1, overrides=("mi.xmlrpc=%d" % cls.port, "daemon.allow_create=yes",
                                             "db.url=sqlite://%s/mi.db" % cls.dbdir))
        wait_for_path(cls.d.fifo)
        if not wait_tcp(cls.port):
            raise RuntimeError("XML-RPC door did not open: " + cls.d.read_log())
        cls.url = "http://127.0.0.1:%d/RPC2" % cls.port

    @classmethod
    def tearDownClass(cls):
        assert cls.d.stop() == 0
        import shutil
        shutil.rmtree(cls.dbdir, ignore_errors=True)

    def proxy(self, url=None):
        p = xmlrpc.client.ServerProxy(url or self.url)
        self.addCleanup(p("close"))
        return p

    def fifo(self, method, params):
        req = json.dumps({"jsonrpc": "2.0", "id": "1", "method": method, "params": params}).encode()
        return json.loads(mi_fifo_raw(self.d.fifo, self.d.workdir, req))

    def test_acceptance_one_liner(self):
        code = 'import xmlrpc.client as x; print(x.ServerProxy("%s").perf_stats())' % self.url
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("'arena'", p.stdout)
        self.assertIn("'collections'", p.stdout)

    def test_positional_and_named(self):
        p = self.proxy()
        self.assertEqual(p.perf_set("x:k", "v1", "60"), "OK")             # strings, as opensips-cli sends
        self.assertEqual(p.perf_set("x:n", "v2", 60), "OK")               # an XML-RPC <int>
        self.assertEqual(p.perf_get("x:k")["value"], "v1")                 # positional
        self.assertEqual(p.perf_get({"key": "x:n"})["value"], "v2")        # named: one <struct>
        self.assertEqual(p.perf_set({"key": "x:s", "value": " ", "ttl": 60}), "OK")
        self.assertEqual(p.perf_get("x:s")["value"], " ")                 # a blank string stays blank
        self.assertEqual(getattr(p, "perfcached:perf_get")("x:k")["value"], "v1")
        self.assertGreaterEqual(p.get_statistics(["resp:"])["resp:commands"], 0)   # an array param
        self.assertEqual(p.perf_set("x:<&>", "a<b>&'\"\n\té", 60), "OK")
        self.assertEqual(p.perf_get("x:<&>")["value"], "a<b>&'\"\n\té")   # escaped both ways
        # A CR is sent as &#13; (Python's client sends it bare, which XML reads as LF).
        self.assertIn("result", self.fifo("perf_set", ["x:cr", "a\r\nb", "60"]))
        self.assertEqual(p.perf_get("x:cr")["value"], "a\r\nb")
        self.assertEqual(p.perf_del("x:*")["deleted"], 5)

    def test_faults(self):
        p = self.proxy()
        with self.assertRaises(xmlrpc.client.Fault) as e:
            p.no_such_command()
        self.assertEqual((e.exception.faultCode, e.exception.faultString),
                         (-32601, "server error. requested method not found"))
        with self.assertRaises(xmlrpc.client.Fault) as e:
            p.perf_get(1, 2, 3)
        self.assertEqual((e.exception.faultCode, e.exception.faultString),
                         (-32602, "server error. invalid method parameters (Too few or too many parameters)"))
        with self.assertRaises(xmlrpc.client.Fault) as e:
            p.perf_get({"nokey": "x"})
        self.assertEqual(e.exception.faultCode, -32602)
        with self.assertRaises(xmlrpc.client.Fault) as e:
            p.get_statistics(["nosuchgroup:"])
        self.assertEqual((e.exception.faultCode, e.exception.faultString), (404, "Statistics Not Found"))
        with self.assertRaises(xmlrpc.client.Fault) as e:
            p.perf_get({"key": "k"}, "extra")  # named params must be the only param
        self.assertEqual(e.exception.faultCode, -32600)

    def test_malformed_and_http_errors(self):
        st, body, ctype = post(self.port, b"<methodCall><methodName>which")
        self.assertEqual((st, ctype), (200, "text/xml"))
        self.assertEqual(fault_of(body)[0], -32700)
        self.assertEqual(fault_of(post(self.port, b"<notACall/>")[1])[0], -32600)
        self.assertEqual(fault_of(post(self.port, b"<methodCall><methodName>which</methodName><params><param>"
                                                  b"<value><base64>eA==</base64></value></param></params>"
                                                  b"</methodCall>")[1])[0], -32600)
        self.assertEqual(fault_of(post(self.port, b"\xff\xfe<\x00")[1])[0], -32700)
        deep = b"<methodCall><methodName>which</methodName><params><param>" + \
            b"<value><array><data>" * 200 + b"</data></array></value>" * 200 + b"</param></params></methodCall>"
        self.assertEqual(fault_of(post(self.port, deep)[1])[0], -32700)
        bomb = (b'<?xml version="1.0"?><!DOCTYPE m [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;">]>'
                b"<methodCall><methodName>&b;</methodName></methodCall>")
        self.assertEqual(fault_of(post(self.port, bomb)[1])[0], -32601)  # no entity expanded
        self.assertEqual(post(self.port, b"x" * 100000)[0], 413)            # over 64 KiB
        self.assertEqual(post(self.port, b"")[0], 400)                      # empty, as mi_xmlrpc_ng
        self.assertEqual(post(self.port, None, method="GET", ctype=None)[0], 405)
        self.assertEqual(post(self.port, b"<methodCall/>", ctype="text/plain")[0], 415)   # a cross-site form
        self.assertEqual(post(self.port, b"<methodCall/>", path="/mi")[0], 404)
        self.assertEqual(post(self.port, b"<methodCall/>", path="/RPC22")[0], 404)
        # Under the root, as OpenSIPS's httpd routes it.
        self.assertEqual(self.proxy(self.url + "/sub").uptime()["Up time"][-5:], "[sec]")
        self.assertEqual(post(self.port, b"<methodCall/>", host="evil.example:%d" % self.port)[0], 421)
        # Still serving after all of that.
        self.assertIn("perf_get", self.proxy().which())

    def test_every_command_answers_what_the_fifo_answers(self):
        names = self.proxy().which()
        self.assertEqual(sorted({n for n in names if ":" not in n} - {c[0] for c in CALLS} - {"kill"}), [])
        p = self.proxy()
        changed = {}
        for transport in ("fifo", "xmlrpc"):
            for method, params, check in CALLS:
                with self.subTest(transport=transport, method=method):
                    if method in CHANGING:
                        if transport == "fifo":
                            rep = self.fifo(method, params)
                            self.assertIn("result", rep, rep)
                            changed[method] = rep["result"]
                        else:
                            got = getattr(p, method)(*params)
                            self.assertTrue(check(got), got)
                            self.assertEqual(norm(got, True, True), norm(changed[method], True, False))
                    elif transport == "fifo":
                        exact = method not in MOVING
                        for attempt in range(3):  # a TTL or an expiry may tick between the two calls
                            rep = self.fifo(method, params)
                            self.assertIn("result", rep, rep)
                            got = getattr(p, method)(*params)
                            self.assertTrue(check(got), got)
                            if norm(got, exact, True) == norm(rep["result"], exact, False):
                                break
                        self.assertEqual(norm(got, exact, True), norm(rep["result"], exact, False))
        # Errors: the same JSON-RPC code (the fault's).
        for method, params in (("nosuch", []), ("perf_get", [1, 2, 3]), ("get_statistics", [["nosuch:"]])):
            with self.subTest(method=method):
                code = self.fifo(method, params)["error"]["code"]
                with self.assertRaises(xmlrpc.client.Fault) as e:
                    getattr(p, method)(*params)
                self.assertEqual(e.exception.faultCode, code)


class XmlRpcGuards(unittest.TestCase):
    def test_token_required_when_configured(self):
        port = free_port()
        d = Daemon(workers=1, overrides=("mi.xmlrpc=127.0.0.1:%d" % port, "secrets.http=s3cret-t0ken"))
        try:
            self.assertTrue(wait_tcp(port))
            url = "http://127.0.0.1:%d/RPC2" % port
            for headers in ([], [("Authorization", "Bearer wrong")], [("Authorization", "Basic s3cret-t0ken")]):
                with xmlrpc.client.ServerProxy(url, headers=headers) as p:
                    with self.assertRaises(xmlrpc.client.ProtocolError) as e:
                        p.uptime()
                    self.assertEqual(e.exception.errcode, 401)
            with xmlrpc.client.ServerProxy(url, headers=[("Authorization", "Bearer s3cret-t0ken")]) as p:
                self.assertIn("Up time", p.uptime())
        finally:
            self.assertEqual(d.stop(), 0)

    def test_off_loopback_needs_a_token(self):
        p = subprocess.run([BIN, "-C", "-o", "mi.xmlrpc=0.0.0.0:8001"], capture_output=True, text=True, timeout=20)
        self.assertEqual(p.returncode, 1)
        self.assertIn("[mi] xmlrpc = 0.0.0.0:8001 is not loopback: set [secrets] http", p.stderr)
        p = subprocess.run([BIN, "-C", "-o", "mi.xmlrpc=0.0.0.0:8001", "-o", "secrets.http=tok"],
                           capture_output=True, text=True, timeout=20)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("XML-RPC 0.0.0.0:8001/RPC2", p.stdout)

    def test_second_daemon_on_the_same_port(self):
        port = free_port()
        d = Daemon(workers=1, overrides=("mi.xmlrpc=127.0.0.1:%d" % port,))
        other = tempfile.mkdtemp(prefix="perfcached-test-xmlrpc-")
        try:
            self.assertTrue(wait_tcp(port))
            args = [BIN, "-D", "-o", "memory.arena_mb=32", "-o", "memory.hugepages=off", "-o", "daemon.workers=1",
                    "-o", "listen.resp=127.0.0.1:%d" % free_port(), "-o", "mi.fifo_name=%s/fifo" % other,
                    "-o", "mi.reply_dir=%s/" % other, "-o", "mi.datagram=%s/mi.sock" % other,
                    "-o", "mi.xmlrpc=127.0.0.1:%d" % port]
            p = subprocess.run(args, capture_output=True, text=True, timeout=30)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertIn("XML-RPC door: cannot listen on 127.0.0.1:%d: address in use" % port, p.stderr)
            self.assertIn("another perfcached (pid %d)" % d.pid, p.stderr)
            # The first one still serves.
            with xmlrpc.client.ServerProxy("http://127.0.0.1:%d/RPC2" % port) as px:
                self.assertIn("Up time", px.uptime())
        finally:
            self.assertEqual(d.stop(), 0)
            for f in os.listdir(other):
                os.unlink(os.path.join(other, f))
            os.rmdir(other)

    def test_kill(self):
        port = free_port()
        d = Daemon(workers=1, overrides=("mi.xmlrpc=127.0.0.1:%d" % port,))
        self.assertTrue(wait_tcp(port))
        with xmlrpc.client.ServerProxy("http://127.0.0.1:%d/RPC2" % port) as px:
            self.assertEqual(px.kill(), "OK")
        self.assertEqual(d.proc.wait(timeout=15), 0)
        d.stop()


if __name__ == "__main__":
    unittest.main()
