"""The supervisor's end without a scan of /proc (``supervise._nothing_left``): only when it, a
child subreaper, has no child at all and the run's cgroup is empty. Checked in a fresh
interpreter that makes itself a subreaper, as the supervisor does."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.unit.node.procs import token, wait_gone

_ROOT = str(Path(__file__).resolve().parents[3])

_PROBE = """
import os, signal, subprocess, sys, time
sys.path.insert(0, {root!r})
from agents.node import supervise
supervise._prctl(supervise._PR_SET_CHILD_SUBREAPER, 1)
said = [supervise._nothing_left("")]
child = subprocess.Popen(["sh", "-c", "exit 0"])
time.sleep(0.3)  # ended, not yet reaped: a zombie is still a child
said.append(supervise._nothing_left(""))
child.wait()
said.append(supervise._nothing_left(""))
orphan = subprocess.run(["sh", "-c", "sleep {t} > /dev/null 2>&1 & echo $!"], capture_output=True)
said.append(supervise._nothing_left(""))  # the sleep, re-parented to us, is still alive
os.kill(int(orphan.stdout), signal.SIGKILL)
deadline = time.monotonic() + 10
while time.monotonic() < deadline:
    try:
        pid, _ = os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        break
    time.sleep(0.05)
said.append(supervise._nothing_left(""))
print(" ".join(str(x) for x in said))
"""


def test_the_supervisor_skips_the_scan_only_with_no_child_left_anywhere_in_its_subtree() -> None:
    t = token()
    done = subprocess.run([sys.executable, "-I", "-S", "-c", _PROBE.format(root=_ROOT, t=t)],
                          capture_output=True, text=True, timeout=60, check=True)
    try:
        # nothing yet; a zombie child; reaped; an orphan re-parented to it; killed and reaped
        assert done.stdout.split() == ["True", "False", "True", "False", "True"], done.stderr
    finally:
        assert wait_gone(t, 5) == []
