# perfcached — the bash completion for perfcli (contrib/perfcli.bash) against a real daemon.
# Copyright (c) 2026 the perfcached authors.
"""Sources the completion in `bash -c`, sets COMP_WORDS / COMP_CWORD (or
COMP_LINE / COMP_POINT, as bash does), calls _perfcli and reads COMPREPLY.
MI names come from the daemon's `which`, asked through the door the command
line names; the static fallback list must be what a daemon lists."""
import json
import os
import shlex
import subprocess
import unittest

from harness import Daemon, ROOT

CLI = os.path.join(ROOT, "bin", "perfcli")
COMPLETION = os.path.join(ROOT, "contrib", "perfcli.bash")


def complete(line, static=True, by_words=False):
    """The candidates bash would offer at the end of `line`. static=False
    empties the fallback list, so that only the daemon's answer counts."""
    script = "source %s\n" % shlex.quote(COMPLETION)
    if not static:
        script += "_perfcli_static_commands=\n"
    if by_words:
        # What the brief's harness sets: COMP_WORDS split on blanks, the cursor in the last.
        words = line.split(" ")
        script += "COMP_WORDS=(%s); COMP_CWORD=%d\n" % (" ".join(shlex.quote(w) for w in words),
                                                        len(words) - 1)
    else:
        script += "COMP_LINE=%s; COMP_POINT=${#COMP_LINE}\n" % shlex.quote(line)
    script += '_perfcli; printf "%s\\n" "${COMPREPLY[@]}"\n'
    p = subprocess.run(["bash", "--norc", "-c", script], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    return [x for x in p.stdout.splitlines() if x]


class Completion(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon(workers=1)
        cls.door = "%s --fifo %s --reply-dir %s/" % (CLI, cls.d.fifo, cls.d.workdir)
        p = subprocess.run(cls.door.split() + ["mi", "which"], capture_output=True, text=True, timeout=20)
        assert p.returncode == 0, p.stderr
        cls.names = json.loads(p.stdout)

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def test_perf_prefix_completes_to_the_daemons_perf_commands(self):
        want = sorted(n for n in self.names if n.startswith("perf_"))
        self.assertIn("perf_keys", want)
        for by_words in (True, False):
            got = complete(self.door + " mi perf_", static=False, by_words=by_words)
            self.assertEqual(sorted(got), want)

    def test_module_prefixed_names_complete_past_the_colon(self):
        # Bash replaces only the part after the last ':' (a word break).
        self.assertEqual(complete(self.door + " mi core:wh", static=False), ["which"])
        self.assertEqual(sorted(complete(self.door + " mi statistics:", static=False)),
                         ["get", "list", "reset", "reset_all"])

    def test_which_and_help_complete_a_command_name(self):
        self.assertEqual(complete(self.door + " mi help perf_sc", static=False), ["perf_scan"])

    def test_parameters_of_a_command(self):
        self.assertEqual(sorted(complete(self.door + " mi perf_set ", static=False)),
                         ["collection=", "key=", "ttl=", "value="])
        self.assertEqual(complete(self.door + " mi perf_set key=k va", static=False), ["value="])

    def test_options_before_mi(self):
        self.assertEqual(complete(CLI + " --da"), ["--datagram"])
        self.assertIn("mi", complete(CLI + " "))
        self.assertIn(self.d.fifo, complete(CLI + " --fifo " + self.d.fifo[:-2]))

    def test_static_list_when_the_daemon_does_not_answer(self):
        line = CLI + " --fifo %s/nothing-here mi perf_ke" % self.d.workdir
        self.assertEqual(complete(line), ["perf_keys"])
        self.assertEqual(complete(line, static=False), [])

    def test_static_list_is_what_the_daemon_lists(self):
        out = subprocess.run(["bash", "--norc", "-c", 'source "$1"; echo $_perfcli_static_commands',
                              "x", COMPLETION], capture_output=True, text=True, timeout=30).stdout
        self.assertEqual(sorted(out.split()), sorted(self.names),
                         "update _perfcli_static_commands in contrib/perfcli.bash")


if __name__ == "__main__":
    unittest.main()
