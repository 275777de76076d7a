# perfcached — make install / uninstall, the installed config, the man pages (issue 12).
# Copyright (c) 2026 the perfcached authors.
"""`make install DESTDIR=tmp PREFIX=/usr` from the repo root: the file list
and modes, the installed config validates and is the embedded default, an
operator's config survives a second install and `make uninstall`, the man
pages render without a groff warning, and perfcached.conf(5) and the
annotated config name every key the daemon's table has (so neither can
drift from proc/config.cc)."""
import gzip
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from harness import BIN, ROOT

MAN_DIR = os.path.join(ROOT, "man")
EXAMPLE = os.path.join(ROOT, "contrib", "perfcached.conf.example")
UNIT = os.path.join(ROOT, "contrib", "perfcached.service")

# Path under DESTDIR (PREFIX=/usr) -> mode.
EXPECTED = {
    "usr/sbin/perfcached": 0o755,
    "usr/sbin/perfcached-setup-host": 0o755,
    "usr/bin/perfcli": 0o755,
    "etc/perfcached/perfcached.conf": 0o640,
    "usr/share/bash-completion/completions/perfcli": 0o644,
    "usr/share/man/man8/perfcached.8.gz": 0o644,
    "usr/share/man/man8/perfcached-setup-host.8.gz": 0o644,
    "usr/share/man/man1/perfcli.1.gz": 0o644,
    "usr/share/man/man5/perfcached.conf.5.gz": 0o644,
}
if os.path.exists(UNIT):  # the systemd unit, when the tree has it
    EXPECTED["lib/systemd/system/perfcached.service"] = 0o644


def make(*args):
    return subprocess.run(["make", "--no-print-directory", "-C", ROOT, *args],
                          capture_output=True, text=True, timeout=600)


def files_under(root):
    out = {}
    for d, _, names in os.walk(root):
        for n in names:
            p = os.path.join(d, n)
            out[os.path.relpath(p, root)] = os.stat(p).st_mode & 0o7777
    return out


def effective(*args):
    """perfcached -E without its first line (which names the source)."""
    p = subprocess.run([BIN, "-E", *args], capture_output=True, text=True, timeout=20)
    assert p.returncode == 0, p.stderr
    return p.stdout.split("\n", 1)[1]


def config_keys():
    """{section: {keys}} as `perfcached -h` lists them (generated from the table)."""
    out = subprocess.run([BIN, "-h"], capture_output=True, text=True, timeout=20).stdout
    keys, section = {}, None
    for line in out.split("settings (section, key = default):\n", 1)[1].splitlines():
        m = re.match(r"^  \[(.+)\]$", line)
        if m:
            section = keys.setdefault(m.group(1), set())
            continue
        if line.startswith("    ") and not line.startswith("     ") and " = " in line:
            for part in line.strip().split(" | "):  # "buckets = 1024 | buckets_log2 = 10"
                section.add(part.split(" = ", 1)[0])
    return keys


def render(path, width="80"):
    """(stdout, stderr) of man -l with every groff warning on."""
    env = dict(os.environ, MANWIDTH=width, LC_ALL="C.UTF-8",
               MANROFFOPT="-ww")
    p = subprocess.run(["man", "-l", path], capture_output=True, text=True, timeout=60, env=env)
    return p.returncode, p.stdout, p.stderr


class Install(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # `make install` builds what is missing; these tests want it to find
        # everything built (make check builds first) and install only.
        if make("-q", "bin/perfcached", "bin/perfcli").returncode != 0:
            raise unittest.SkipTest("bin/perfcached or bin/perfcli is not up to date (run make)")

    def setUp(self):
        self.dest = tempfile.mkdtemp(prefix="perfcached-install-")
        self.addCleanup(shutil.rmtree, self.dest, True)

    def install(self):
        p = make("install", "DESTDIR=" + self.dest, "PREFIX=/usr")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        return p.stdout + p.stderr

    def test_files_and_modes(self):
        out = self.install()
        self.assertNotRegex(out, r"(?m)^\s*(CXX|LINK|AR)\s", "make install rebuilt something")
        self.assertEqual(files_under(self.dest), EXPECTED)
        # what make install installs is the build in bin/, whatever daemon
        # the other tests run (check-asan points PERFCACHED_BIN elsewhere)
        with open(os.path.join(self.dest, "usr/sbin/perfcached"), "rb") as a, \
                open(os.path.join(ROOT, "bin", "perfcached"), "rb") as b:
            self.assertEqual(a.read(), b.read())

    def test_installed_config_validates_and_is_the_default(self):
        self.install()
        conf = os.path.join(self.dest, "etc/perfcached/perfcached.conf")
        p = subprocess.run([os.path.join(self.dest, "usr/sbin/perfcached"), "-C", "-f", conf],
                           capture_output=True, text=True, timeout=20)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("configuration OK (%s)" % conf, p.stdout)
        # The installed (annotated) config runs what the embedded default runs.
        self.assertEqual(effective("-f", conf), effective())

    def test_second_install_keeps_the_operators_config(self):
        self.install()
        conf = os.path.join(self.dest, "etc/perfcached/perfcached.conf")
        with open(conf, "a") as f:
            f.write("\n# the operator's\n[collection mine]\nbuckets = 4096\n")
        with open(conf) as f:
            mine = f.read()
        out = self.install()
        self.assertIn("kept " + conf, out)
        with open(conf) as f:
            self.assertEqual(f.read(), mine)
        with open(conf + ".dist") as f, open(EXAMPLE) as g:
            self.assertEqual(f.read(), g.read())

    def test_uninstall_removes_all_but_the_operators_config(self):
        self.install()
        self.install()  # with a .dist next to the config
        conf = os.path.join(self.dest, "etc/perfcached/perfcached.conf")
        with open(conf, "a") as f:
            f.write("# the operator's\n")
        p = make("uninstall", "DESTDIR=" + self.dest, "PREFIX=/usr")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(list(files_under(self.dest)), ["etc/perfcached/perfcached.conf"])
        self.assertIn("kept " + conf, p.stdout)

    def test_installed_setup_host_finds_the_installed_daemon(self):
        self.install()
        p = subprocess.run([os.path.join(self.dest, "usr/sbin/perfcached-setup-host"),
                            "-f", os.path.join(self.dest, "etc/perfcached/perfcached.conf")],
                           capture_output=True, text=True, timeout=30, env=dict(os.environ, PATH="/usr/bin:/bin"))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"vm\.overcommit_memory")

    def test_installed_man_pages_render(self):
        self.install()
        for rel in EXPECTED:
            if not rel.endswith(".gz"):
                continue
            rc, out, err = render(os.path.join(self.dest, rel))
            self.assertEqual((rc, err), (0, ""), rel)
            self.assertIn("NAME", out)
            with gzip.open(os.path.join(self.dest, rel), "rb") as f:
                src = os.path.join(MAN_DIR, os.path.basename(rel)[:-3])
                with open(src, "rb") as g:
                    self.assertEqual(f.read(), g.read(), rel)


class ManPages(unittest.TestCase):
    PAGES = ("perfcached.8", "perfcached-setup-host.8", "perfcli.1", "perfcached.conf.5")

    def test_every_page_renders_without_warnings(self):
        self.assertEqual(sorted(os.listdir(MAN_DIR)), sorted(self.PAGES))
        for page in self.PAGES:
            path = os.path.join(MAN_DIR, page)
            for width in ("80", "100"):
                rc, out, err = render(path, width)
                self.assertEqual((rc, err), (0, ""), "%s at %s columns" % (page, width))
            p = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", path],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual((p.returncode, p.stderr), (0, ""), page)
            with open(path, "rb") as f:
                self.assertTrue(f.read().isascii(), page + ": non-ASCII bytes (groff warns)")

    def test_conf_page_lists_every_section_and_key(self):
        with open(os.path.join(MAN_DIR, "perfcached.conf.5")) as f:
            lines = f.read().splitlines()
        page, section = {}, None
        for i, line in enumerate(lines):
            m = re.match(r'^\.SH "\[(.+)\]"$', line)
            if m:
                section = page.setdefault(m.group(1), set())
            elif line.startswith(".SH"):
                section = None
            elif section is not None and line == ".TP":
                m = re.match(r'^\.BI? "?([a-z_0-9]+) = ', lines[i + 1])
                self.assertTrue(m, "line %d: a key entry is .TP then .BI \"key = \" VALUE" % (i + 2))
                section.add(m.group(1))
        table = config_keys()
        self.assertIn("collection NAME", table)
        for sec in sorted(set(page) | set(table)):
            self.assertEqual(page.get(sec, set()) ^ table.get(sec, set()), set(),
                             "[%s]: keys not in both perfcached.conf.5 (%s) and proc/config.cc's table (%s)"
                             % (sec, sorted(page.get(sec, ())), sorted(table.get(sec, ()))))

    def test_annotated_config_names_every_key(self):
        with open(EXAMPLE) as f:
            text = f.read()
        # Sections (set or commented out) and the keys under each.
        found, section = {}, None
        for line in text.splitlines():
            m = re.match(r"^#?\s*\[(collection) \S+\]|^\[(\w+)\]", line)
            if m:
                name = "collection NAME" if m.group(1) else m.group(2)
                section = found.setdefault(name, set())
                continue
            m = re.match(r"^#?\s*([a-z_0-9]+)\s*=", line)
            if m and section is not None:
                section.add(m.group(1))
        for sec, keys in config_keys().items():
            self.assertIn(sec, found)
            self.assertEqual(keys - found[sec], set(), "[%s] keys missing from the annotated config" % sec)

    def test_annotated_config_is_the_embedded_default(self):
        self.assertEqual(effective("-f", EXAMPLE), effective())


if __name__ == "__main__":
    unittest.main()
