"""A command whose reader goes away (``sluice queue | head -1``) ends quietly, as a C program
killed by SIGPIPE does: no message, exit status 141."""

from __future__ import annotations

import subprocess
import sys


def test_a_closed_pipe_ends_the_command_quietly_with_sigpipes_status() -> None:
    child = subprocess.Popen([sys.executable, "-m", "cli.main", "sluid", "new", "-n", "200000"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert child.stdout is not None and child.stderr is not None
    child.stdout.read(20)  # the first line, then the reader leaves
    child.stdout.close()
    error = child.stderr.read().decode()
    assert child.wait(timeout=60) == 141, error
    assert error == ""
