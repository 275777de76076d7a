# perfcached — the Debian packages: make deb, dpkg -i, the user, modes, the daemon as its unit runs it, purge (issue 12).
# Copyright (c) 2026 the perfcached authors.
"""Builds perfcached and perfcached-tools with `make deb` (or takes the
.debs in build/deb/ when they are newer than every source file), installs
them on this machine with dpkg -i, checks what postinst made (the system
user, /var/lib/perfcached, the config's group and mode, the unit enabled),
starts the installed daemon the way its unit does (systemd is not PID 1
here: the ExecStart= line of the installed unit, run as its User= with
runuser, the RESP port and the FIFO, datagram and pid paths moved to a
temporary directory with -o), talks to it with redis-cli and the
installed perfcli (which also saves a SQLite snapshot into
/var/lib/perfcached), stops it by PID, then removes and purges both
packages and checks what is left (the snapshot and its directory kept);
installs and purges once more with nothing in /var/lib/perfcached (the
directory goes). Whatever happens, the packages are purged and a user,
group and /var/lib/perfcached the test brought are removed again.

Skips (loudly) only when the packaging tools cannot be installed, which
includes not being root (dpkg -i needs root as well). Refuses to run on a
machine where either package is installed or /var/lib/perfcached exists:
it would purge or remove them."""
import glob
import grp
import os
import pwd
import re
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import unittest

from harness import ROOT, children, free_port, wait_port

DEB_DIR = os.path.join(ROOT, "build", "deb")
PACKAGES = ("perfcached", "perfcached-tools")
USER = "perfcached"
HOME = "/var/lib/perfcached"
SNAPSHOT = HOME + "/cache.db"  # [db] url = sqlite:///var/lib/perfcached/cache.db, as the config suggests
CONF = "/etc/perfcached/perfcached.conf"
UNIT = "/lib/systemd/system/perfcached.service"
WANTS = "/etc/systemd/system/multi-user.target.wants/perfcached.service"
# Commands make deb needs (install-deps.sh installs their packages).
TOOLS = ("dpkg-buildpackage", "dh", "lintian", "dpkg-checkbuilddeps")

# What each package must put on the machine: path -> (mode, owner, group).
FILES = {
    "perfcached": {
        "/usr/sbin/perfcached": (0o755, "root", "root"),
        "/usr/sbin/perfcached-setup-host": (0o755, "root", "root"),
        UNIT: (0o644, "root", "root"),
        CONF: (0o640, "root", USER),
        "/usr/share/man/man8/perfcached.8.gz": (0o644, "root", "root"),
        "/usr/share/man/man8/perfcached-setup-host.8.gz": (0o644, "root", "root"),
        "/usr/share/man/man5/perfcached.conf.5.gz": (0o644, "root", "root"),
        "/usr/share/doc/perfcached/copyright": (0o644, "root", "root"),
    },
    "perfcached-tools": {
        "/usr/bin/perfcli": (0o755, "root", "root"),
        "/usr/share/man/man1/perfcli.1.gz": (0o644, "root", "root"),
        "/usr/share/bash-completion/completions/perfcli": (0o644, "root", "root"),
        "/usr/share/doc/perfcached-tools/copyright": (0o644, "root", "root"),
    },
}

# The sources a package is built from (for "newer than the sources").
SOURCE_DIRS = ("cache", "contrib", "daemon", "db", "debian", "man", "mem", "mi", "modules", "net", "proc", "scripts")
SOURCE_FILES = ("Makefile", "README.md")
# What dpkg-buildpackage itself writes into debian/ (make deb cleans it after).
BUILD_OUTPUT = re.compile(r"^(tmp|perfcached|perfcached-tools|\.debhelper|files|debhelper-build-stamp"
                          r"|.*\.substvars|.*\.debhelper|.*\.debhelper\.log)$")


def run(args, timeout=120, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, **kw)


def loud_skip(why):
    bar = "!" * 78
    sys.stderr.write("\n%s\ntest_deb SKIPPED: %s\n%s\n" % (bar, why, bar))
    sys.stderr.flush()
    raise unittest.SkipTest(why)


def dpkg(*args):
    """dpkg with a bounded wait for the lock (an apt-get elsewhere on the machine)."""
    deadline = time.time() + 120
    while True:
        p = run(["dpkg", *args], timeout=300)
        if p.returncode == 0 or "lock" not in p.stderr or time.time() > deadline:
            return p
        time.sleep(2)


def status(package):
    """dpkg's status word of the package ("installed", "config-files", ...) or None."""
    p = run(["dpkg-query", "-W", "-f=${db:Status-Status}", package], timeout=30)
    return p.stdout.strip() if p.returncode == 0 and p.stdout.strip() != "not-installed" else None


def newest_source():
    newest = max(os.stat(os.path.join(ROOT, f)).st_mtime for f in SOURCE_FILES)
    for d in SOURCE_DIRS:
        top = os.path.join(ROOT, d)
        for dirpath, dirnames, filenames in os.walk(top):
            if d == "debian" and dirpath == top:
                dirnames[:] = [n for n in dirnames if not BUILD_OUTPUT.match(n)]
                filenames = [n for n in filenames if not BUILD_OUTPUT.match(n)]
            for n in filenames:
                newest = max(newest, os.lstat(os.path.join(dirpath, n)).st_mtime)
    return newest


def built_debs():
    """{package: path} of the .debs in build/deb/, or None unless exactly one of each."""
    out = {}
    for pkg in PACKAGES:
        found = glob.glob(os.path.join(DEB_DIR, "%s_*.deb" % pkg))
        if len(found) != 1:
            return None
        out[pkg] = found[0]
    return out


def unit_entries(path):
    """{key: [values]} of the unit's [Service] and [Unit] sections."""
    out, section = {}, None
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line[0] in "#;":
                continue
            if line.startswith("["):
                section = line.strip("[]")
                continue
            k, _, v = line.partition("=")
            out.setdefault((section, k.strip()), []).append(v.strip())
    return out


def owner(path):
    st = os.lstat(path)
    return stat.S_IMODE(st.st_mode), pwd.getpwuid(st.st_uid).pw_name, grp.getgrgid(st.st_gid).gr_name


def proc_uid(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"^Uid:\s+(\d+)", f.read(), re.M).group(1))


class Deb(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            loud_skip("not root: the packaging tools cannot be installed and dpkg -i cannot run")
        if not all(shutil.which(t) for t in TOOLS):
            p = run([os.path.join(ROOT, "scripts", "install-deps.sh")], timeout=1200)
            missing = [t for t in TOOLS if not shutil.which(t)]
            if missing:
                loud_skip("the packaging tools cannot be installed (missing %s): %s"
                          % (" ".join(missing), (p.stdout + p.stderr).strip()[-500:]))
        here = [p for p in PACKAGES if status(p)]
        if here:
            raise RuntimeError("%s already on this machine (dpkg status %s): test_deb installs and purges "
                               "them; remove them first (dpkg --purge %s)"
                               % (" ".join(here), [status(p) for p in here], " ".join(here)))
        if os.path.lexists(HOME):
            raise RuntimeError(HOME + " exists (a snapshot a purge kept?): test_deb would remove it; "
                               "move it away first")
        debs = built_debs()
        if debs and min(os.stat(d).st_mtime for d in debs.values()) > newest_source():
            sys.stderr.write("\ntest_deb: using the packages in build/deb/ (newer than every source)\n")
        else:
            t0 = time.time()
            p = run(["make", "--no-print-directory", "-C", ROOT, "deb"], timeout=1800)
            took = time.time() - t0
            if p.returncode != 0:
                raise RuntimeError("make deb failed after %.0f s:\n%s" % (took, (p.stdout + p.stderr)[-4000:]))
            sys.stderr.write("\ntest_deb: make deb took %.0f s\n" % took)
            debs = built_debs()
            if not debs:
                raise RuntimeError("make deb left no perfcached and perfcached-tools .deb in " + DEB_DIR)
        cls.debs = debs

    # ---- cleanup: whatever happened, the machine is as before ----------------

    def restore_machine(self, had_user, had_group):
        installed = [p for p in PACKAGES if status(p)]
        if installed:
            p = dpkg("--purge", *installed)
            self.assertEqual(p.returncode, 0, p.stderr)
        shutil.rmtree(HOME, ignore_errors=True)  # absent before the test (setUpClass)
        if not had_user:
            try:
                pwd.getpwnam(USER)
                run(["userdel", USER], timeout=30)
            except KeyError:
                pass
        if not had_group:
            try:
                grp.getgrnam(USER)
                run(["groupdel", USER], timeout=30)
            except KeyError:
                pass

    def stop_daemon(self, proc, log):
        if proc.poll() is None:
            for k in children(proc.pid):
                for kk in children(k):
                    os.kill(kk, signal.SIGKILL)
                os.kill(k, signal.SIGKILL)
            proc.kill()
            proc.wait(timeout=10)
        log.close()

    # ---- the steps ------------------------------------------------------------

    def install(self, packages=PACKAGES):
        p = dpkg("-i", *[self.debs[pkg] for pkg in packages])
        out = p.stdout + p.stderr
        if p.returncode != 0:  # a dependency missing: apt-get brings it
            a = run(["apt-get", "-f", "install", "-y", "-qq", "--no-install-recommends"], timeout=600,
                    env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
            out += a.stdout + a.stderr
        for pkg in packages:
            self.assertEqual(status(pkg), "installed", out)
        return out

    def check_installed(self):
        u = pwd.getpwnam(USER)
        g = grp.getgrnam(USER)
        self.assertEqual((u.pw_gid, u.pw_dir, u.pw_shell), (g.gr_gid, HOME, "/usr/sbin/nologin"))
        self.assertLess(u.pw_uid, 1000, "not a system user")
        self.assertTrue(os.path.isdir(HOME))
        self.assertEqual(owner(HOME), (0o750, USER, USER))
        for pkg, files in FILES.items():
            listed = set(run(["dpkg", "-L", pkg], timeout=30).stdout.split())
            for path, want in files.items():
                self.assertIn(path, listed, pkg)
                self.assertEqual(owner(path), want, path)
        conffiles = run(["dpkg-query", "-W", "-f=${Conffiles}", "perfcached"], timeout=30).stdout
        self.assertEqual([l.split()[0] for l in conffiles.strip().splitlines()], [CONF])
        # postinst enabled the unit (deb-systemd-helper needs no running systemd)
        self.assertEqual(os.readlink(WANTS), UNIT)
        # the daemon's user reads the config (group perfcached) and it checks
        p = run(["runuser", "-u", USER, "--", "/usr/sbin/perfcached", "-C", "-f", CONF], timeout=30)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        # the installed man pages render (man-db from the installed paths)
        for page in (("8", "perfcached"), ("5", "perfcached.conf"), ("1", "perfcli")):
            p = run(["man", "-P", "cat", page[0], page[1]], timeout=60, env=dict(os.environ, MANWIDTH="80"))
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn(page[1].upper(), p.stdout.upper())
        # the config's runtime paths are in the unit's RuntimeDirectory=
        unit = unit_entries(UNIT)
        rundir = "/run/%s/" % unit[("Service", "RuntimeDirectory")][0]
        p = run(["/usr/sbin/perfcached", "-E", "-f", CONF], timeout=30)
        for key in ("pid_file", "fifo_name", "datagram", "reply_dir"):
            m = re.search(r"^%s = (.*)$" % key, p.stdout, re.M)
            self.assertTrue(m and m.group(1).startswith(rundir), (key, m and m.group(1), rundir))
        self.assertEqual(unit[("Service", "PrivateTmp")], ["yes"])

    def run_as_the_unit(self):
        unit = unit_entries(UNIT)
        self.assertEqual(unit[("Service", "User")], [USER])
        self.assertEqual(unit[("Service", "Group")], [USER])
        argv = shlex.split(unit[("Service", "ExecStart")][0])
        self.assertEqual(argv[:2], ["/usr/sbin/perfcached", "-D"])
        self.assertTrue(os.access(argv[0], os.X_OK))
        # The RuntimeDirectory as systemd makes it (mode, owner), under
        # /run, and the daemon with a private /tmp (PrivateTmp=yes: its own
        # mount namespace, an empty tmpfs on /tmp).
        work = tempfile.mkdtemp(prefix="perfcached-deb-", dir="/run")
        self.addCleanup(shutil.rmtree, work, True)
        os.chown(work, pwd.getpwnam(USER).pw_uid, grp.getgrnam(USER).gr_gid)
        os.chmod(work, int(unit[("Service", "RuntimeDirectoryMode")][0], 8))
        private_tmp = ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
                       'mount -t tmpfs -o mode=1777 private-tmp /tmp && exec "$@"', "sh"]
        port = free_port()
        fifo, dgram = os.path.join(work, "fifo"), os.path.join(work, "mi.sock")
        argv += ["-o", "listen.resp=127.0.0.1:%d" % port, "-o", "mi.fifo_name=" + fifo,
                 "-o", "mi.datagram=" + dgram, "-o", "mi.reply_dir=%s/" % work,
                 "-o", "daemon.pid_file=%s/perfcached.pid" % work, "-o", "db.url=sqlite://" + SNAPSHOT,
                 "-o", "daemon.workers=1", "-o", "memory.arena_mb=32", "-o", "memory.hugepages=off"]
        log_path = os.path.join(work, "log")
        log = open(log_path, "w")
        proc = subprocess.Popen([*private_tmp, "runuser", "-u", USER, "--", *argv], stdout=log,
                                stderr=subprocess.STDOUT)
        self.addCleanup(self.stop_daemon, proc, log)

        def read_log():
            with open(log_path) as f:
                return f.read()

        self.assertTrue(wait_port(port), read_log())
        # runuser forks: the daemon is its child, running as perfcached,
        # and so are the daemon's own children
        daemon = [k for k in children(proc.pid) if os.path.realpath("/proc/%d/exe" % k) == argv[0]]
        self.assertEqual(len(daemon), 1, (children(proc.pid), read_log()))
        pid = daemon[0]
        uid = pwd.getpwnam(USER).pw_uid
        self.assertEqual(proc_uid(pid), uid)
        kids = children(pid)
        self.assertTrue(kids)
        self.assertEqual({proc_uid(k) for k in kids}, {uid})

        cli = ["redis-cli", "-h", "127.0.0.1", "-p", str(port)]
        self.assertEqual(run(cli + ["PING"], timeout=20).stdout.strip(), "PONG")
        self.assertEqual(run(cli + ["SET", "deb:key", "from the package"], timeout=20).stdout.strip(), "OK")
        self.assertEqual(run(cli + ["GET", "deb:key"], timeout=20).stdout.strip(), "from the package")
        # perfcli as the daemon's user, without --reply-dir: it makes its
        # reply FIFO beside the MI FIFO (and in /tmp, which the daemon
        # cannot see) and binds its datagram socket beside the daemon's
        perfcli = ["runuser", "-u", USER, "--", "/usr/bin/perfcli"]
        p = run(perfcli + ["--fifo", fifo, "mi", "version"], timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr + read_log())
        self.assertIn('"Server": "perfcached ', p.stdout)
        p = run(perfcli + ["--fifo", fifo, "mi", "uptime"], timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr + read_log())
        self.assertIn("Up time", p.stdout)
        # ... and as root, the operator at 3 a.m.: perfcli hands its reply
        # FIFO / socket to the daemon's group (0620), not to the world
        for door in (["--fifo", fifo], ["--datagram", dgram]):
            p = run(["/usr/bin/perfcli"] + door + ["mi", "uptime"], timeout=30)
            self.assertEqual(p.returncode, 0, (door, p.stderr, read_log()))
            self.assertIn("Up time", p.stdout)
        p = run(perfcli + ["--datagram", dgram, "mi", "perf_get", "deb:key"], timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr + read_log())
        self.assertIn("from the package", p.stdout)
        # the daemon's user writes its snapshot into its home
        p = run(perfcli + ["--fifo", fifo, "mi", "perf_save"], timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr + read_log())
        self.assertEqual(owner(SNAPSHOT)[1:], (USER, USER))
        p = run(["sqlite3", SNAPSHOT, "SELECT pvalue FROM perfcached WHERE pkey = 'deb:key'"], timeout=30)
        self.assertEqual(p.stdout.strip(), "from the package", p.stderr)

        os.kill(pid, signal.SIGTERM)
        self.assertEqual(proc.wait(timeout=30), 0, read_log())
        self.assertFalse(os.path.exists("/proc/%d" % pid))
        self.assertIn("supervisor notice: stopped", read_log())

    def remove_then_purge(self):
        """With the snapshot in /var/lib/perfcached: purge keeps both."""
        p = dpkg("--remove", *PACKAGES)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(status("perfcached"), "config-files")
        self.assertIsNone(status("perfcached-tools"))  # no conffile: nothing left
        for path in ("/usr/sbin/perfcached", "/usr/bin/perfcli", UNIT):
            self.assertFalse(os.path.exists(path), path)
        self.assertTrue(os.path.exists(CONF), "remove (not purge) must keep the config")
        self.assertTrue(os.path.isdir(HOME))

        p = dpkg("--purge", "perfcached")
        self.assertEqual(p.returncode, 0, p.stderr)
        for pkg in PACKAGES:
            self.assertIsNone(status(pkg))
        for path in ("/etc/perfcached", WANTS):
            self.assertFalse(os.path.lexists(path), path)
        self.assertTrue(os.path.exists(SNAPSHOT), "purge removed the operator's snapshot")
        self.assertIn("/var/lib/perfcached is not empty", p.stdout + p.stderr)
        # the user and group stay (debian/perfcached.postrm says why)
        pwd.getpwnam(USER)
        grp.getgrnam(USER)

    def reinstall_then_purge(self):
        """The user exists already; nothing in /var/lib/perfcached: purge removes it."""
        shutil.rmtree(HOME)
        uid = pwd.getpwnam(USER).pw_uid
        self.install(("perfcached",))
        self.assertEqual(pwd.getpwnam(USER).pw_uid, uid)
        self.assertEqual(owner(HOME), (0o750, USER, USER))
        p = dpkg("--purge", "perfcached")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIsNone(status("perfcached"))
        for path in ("/etc/perfcached", HOME, WANTS):
            self.assertFalse(os.path.lexists(path), path)

    def test_install_run_remove_purge(self):
        try:
            pwd.getpwnam(USER)
            had_user = True
        except KeyError:
            had_user = False
        try:
            grp.getgrnam(USER)
            had_group = True
        except KeyError:
            had_group = False
        self.addCleanup(self.restore_machine, had_user, had_group)
        self.install()
        self.check_installed()
        self.run_as_the_unit()
        self.remove_then_purge()
        self.reinstall_then_purge()


if __name__ == "__main__":
    unittest.main()
