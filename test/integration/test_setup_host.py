# perfcached — scripts/perfcached-setup-host: what a config needs from the host (issue 12).
# Copyright (c) 2026 the perfcached authors.
"""Runs the script against a few configs with the current values read from a
made-up /proc/sys (--sysctl-dir), checks what it prints, what --apply --root
writes, and that --apply on the real host is refused without root. Never
runs --apply without --root: the test machine's sysctls are never changed.
Also: the daemon's start-up log names the script when it gets no hugetlb."""
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from harness import BIN, Daemon, ROOT

SCRIPT = os.path.join(ROOT, "scripts", "perfcached-setup-host")
HOST = {"vm.nr_hugepages": 0, "vm.nr_overcommit_hugepages": 0, "vm.overcommit_memory": 0,
        "net.core.somaxconn": 4096}


class SetupHost(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="perfcached-setup-host-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def sysctls(self, **over):
        """A /proc/sys of our own: HOST with over ("vm_overcommit_memory=2")."""
        d = os.path.join(self.tmp, "proc-sys")
        for name, v in HOST.items():
            v = over.get(name.replace(".", "_"), v)
            path = os.path.join(d, *name.split("."))
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write("%d\n" % v)
        return d

    def run_script(self, *args, config=None, sysctl_dir=None, user=None):
        cmd = [SCRIPT, "-p", BIN]
        if config is not None:
            path = os.path.join(self.tmp, "perfcached.conf")
            with open(path, "w") as f:
                f.write(config)
            os.chmod(self.tmp, 0o755)
            os.chmod(path, 0o644)
            cmd += ["-f", path]
        cmd += ["--sysctl-dir", sysctl_dir or self.sysctls()] + list(args)
        if user is not None:
            cmd = ["setpriv", "--reuid=%d" % user, "--regid=%d" % user, "--clear-groups"] + cmd
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60)

    def rows(self, out):
        """{setting: (now, needed, status)} from the printed table (columns: 2+ blanks apart)."""
        rows = {}
        for line in out.splitlines()[2:]:
            cols = re.split(r"\s{2,}", line.strip())
            if len(cols) == 5 and cols[3] in ("ok", "CHANGE"):
                rows[cols[0]] = tuple(cols[1:4])
        return rows

    def test_default_config_needs_overcommit_hugepages_for_the_arena(self):
        p = self.run_script()
        self.assertEqual(p.returncode, 0, p.stderr)
        r = self.rows(p.stdout)
        self.assertEqual(r["vm.nr_overcommit_hugepages"], ("0", "128", "CHANGE"))  # 256 MiB / 2 MiB
        self.assertEqual(r["vm.overcommit_memory"], ("0", "0 or 1", "ok"))
        self.assertEqual(r["net.core.somaxconn"], ("4096", "4096", "ok"))
        self.assertEqual(r["memlock (LimitMEMLOCK)"][1:], ("-", "ok"))
        self.assertNotIn("vm.nr_hugepages", r)

    def test_cap_and_pool_and_a_host_that_needs_everything(self):
        conf = "[memory]\narena_mb = 512\narena_cap_mb = 2048\nlock_memory = yes\n"
        bad = self.sysctls(vm_overcommit_memory=2, net_core_somaxconn=128, vm_nr_overcommit_hugepages=100)
        p = self.run_script(config=conf, sysctl_dir=bad)
        self.assertEqual(p.returncode, 0, p.stderr)
        r = self.rows(p.stdout)
        self.assertEqual(r["vm.nr_overcommit_hugepages"], ("100", "1024", "CHANGE"))  # the cap
        self.assertEqual(r["vm.overcommit_memory"], ("2", "0 or 1", "CHANGE"))
        self.assertEqual(r["net.core.somaxconn"], ("128", "511", "CHANGE"))  # the RESP backlog
        self.assertEqual(r["memlock (LimitMEMLOCK)"][1], "2048 MiB")
        p = self.run_script("--pool", config=conf, sysctl_dir=bad)
        r = self.rows(p.stdout)
        self.assertEqual(r["vm.nr_hugepages"], ("0", "256", "CHANGE"))  # arena_mb, reserved
        self.assertEqual(r["vm.nr_overcommit_hugepages"], ("100", "768", "CHANGE"))  # the rest

    def test_a_value_above_the_need_is_kept(self):
        p = self.run_script(sysctl_dir=self.sysctls(vm_nr_overcommit_hugepages=5000, vm_overcommit_memory=1))
        r = self.rows(p.stdout)
        self.assertEqual(r["vm.nr_overcommit_hugepages"], ("5000", "5000", "ok"))
        self.assertEqual(r["vm.overcommit_memory"], ("1", "0 or 1", "ok"))

    def test_no_hugepages_no_resp(self):
        p = self.run_script(config="[memory]\nhugepages = off\n[listen]\nresp =\n")
        self.assertEqual(p.returncode, 0, p.stderr)
        r = self.rows(p.stdout)
        self.assertNotIn("vm.nr_overcommit_hugepages", r)
        self.assertNotIn("net.core.somaxconn", r)
        self.assertIn("hugepages = off: no huge page setting is needed", p.stdout)

    def test_apply_under_root_dir_writes_the_files(self):
        root = os.path.join(self.tmp, "root")
        conf = "[memory]\narena_mb = 64\narena_cap_mb = 1024\nlock_memory = yes\n"
        sysctl_dir = self.sysctls(vm_overcommit_memory=2)
        p = self.run_script("--apply", "--root", root, config=conf, sysctl_dir=sysctl_dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(root, "etc/sysctl.d/60-perfcached.conf")) as f:
            lines = [l for l in f.read().splitlines() if not l.startswith("#")]
        self.assertEqual(lines, ["vm.nr_overcommit_hugepages = 512", "vm.overcommit_memory = 0",
                                 "net.core.somaxconn = 4096"])
        dropin = os.path.join(root, "etc/systemd/system/perfcached.service.d/60-setup-host.conf")
        with open(dropin) as f:
            self.assertEqual([l for l in f.read().splitlines() if not l.startswith("#")],
                             ["[Service]", "LimitMEMLOCK=%d" % (1024 << 20)])
        # lock_memory off again: our drop-in goes, the sysctls stay.
        p = self.run_script("--apply", "--root", root, config="[memory]\narena_mb = 64\n", sysctl_dir=sysctl_dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertFalse(os.path.exists(dropin))
        with open(os.path.join(root, "etc/sysctl.d/60-perfcached.conf")) as f:
            self.assertIn("vm.nr_overcommit_hugepages = 32\n", f.read())

    def test_apply_refused_without_root(self):
        if os.geteuid() == 0:
            p = self.run_script("--apply", user=65534)  # as nobody
        else:
            p = self.run_script("--apply")
        self.assertEqual(p.returncode, 1)
        self.assertIn("run it as root", p.stderr)
        self.assertEqual(p.stdout, "")

    def test_bad_config_and_root_without_apply_are_refused(self):
        p = self.run_script(config="[memory]\narena_mb = 1\n")
        self.assertEqual(p.returncode, 1)
        self.assertIn("does not validate", p.stderr)
        self.assertIn("perfcached.conf:2: expected an integer in 16..1048576", p.stderr)
        p = self.run_script("--root", self.tmp)
        self.assertEqual(p.returncode, 1)
        self.assertIn("--root goes with --apply", p.stderr)


class SameNumbersAsTheDaemon(unittest.TestCase):
    """The script's constants are read from the daemon's code: a change
    there must change them too."""

    def const(self, name):
        with open(SCRIPT) as f:
            return int(re.search(r"^%s = (\d+)" % name, f.read(), re.M).group(1))

    def source(self, rel):
        with open(os.path.join(ROOT, rel)) as f:
            return f.read()

    def test_backlogs_and_group_size(self):
        self.assertRegex(self.source("proc/daemon.cc"),
                         r"BindTcp\(cfg\.resp, /\*reuseport=\*/true, %d," % self.const("RESP_BACKLOG"))
        self.assertRegex(self.source("modules/mi/http_server.cc"),
                         r"BindTcp\(hostport, /\*reuseport=\*/false, %d," % self.const("HTTP_BACKLOG"))
        self.assertRegex(self.source("mem/arena.h"),
                         r"kGroupSize = %du << 20;" % self.const("GROUP_MB"))
        self.assertRegex(self.source("proc/daemon.cc"), r"RaiseFdLimit\(cfg\.maxclients \+ 64 \* nworkers \+ 64\)")


class StartupLog(unittest.TestCase):
    def test_log_names_the_script_without_hugetlb(self):
        # hugepages = thp: the tier cannot be hugetlb, so the note is there.
        d = Daemon(workers=1, overrides=("memory.hugepages=thp",))
        try:
            log = d.read_log()
        finally:
            d.stop()
        self.assertRegex(log, r"arena: .* tier \w+ \(.*\); run perfcached-setup-host to see what the host needs")

    def test_log_is_quiet_with_hugepages_off(self):
        d = Daemon(workers=1)  # the harness runs hugepages = off
        try:
            log = d.read_log()
        finally:
            d.stop()
        self.assertIn("arena: ", log)
        self.assertNotIn("perfcached-setup-host", log)


if __name__ == "__main__":
    unittest.main()
