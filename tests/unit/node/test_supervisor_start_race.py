"""A quick command's start read after its supervisor already ended: not a silent end.

The daemon looks at a starting run in two steps: it reads what the supervisor said, then, with
nothing read, asks whether the supervisor has ended. A command such as ``true`` may start and
end, and its supervisor with it, between the two: everything it said ("started", "exit 0",
"done") is then waiting on the lifeline. The daemon must read it, not report the run's launch
as failed (exit 126, "ended before starting it (silent)": once seen in CI under load). The
interleaving is made here on real objects: a socket pair, a real process and its pidfd; the
supervisor's end happens exactly between the two steps.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from agents.node.proctrack import RunScope
from agents.node.supervised import Supervised


def _ending_between(said: bytes) -> tuple[Supervised, list[int]]:
    """A Supervised whose supervisor, a real process, says ``said`` and ends right after the
    daemon's first read found nothing (when the daemon first asks whether it has ended)."""
    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    process = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                               stdin=subprocess.PIPE)
    pidfd = os.pidfd_open(process.pid)
    supervised = Supervised(None, ours, RunScope("sRACE"), process.pid, pidfd)
    asked: list[int] = []
    ended = supervised._ended

    def ends_now(timeout_s: float) -> bool:
        if not asked:
            theirs.sendall(said)
            theirs.close()
            assert process.stdin is not None
            process.stdin.close()
            process.wait(30)
        asked.append(1)
        return ended(timeout_s)

    supervised._ended = ends_now  # type: ignore[method-assign]
    return supervised, asked


def test_a_command_that_started_and_ended_between_the_read_and_the_check_started() -> None:
    supervised, asked = _ending_between(b"started 4242\nexit 0\ndone\n")

    assert supervised.start_outcome() is True
    assert asked  # the interleaving happened: the check came after the first read
    assert supervised.poll() == 0  # and the command's own exit is read from the same lines
    assert supervised.clean


def test_a_refusal_said_just_before_the_end_is_that_refusal() -> None:
    supervised, _asked = _ending_between(b"error 2 /nope\0exec /nope: No such file\n")

    outcome = supervised.start_outcome()

    assert isinstance(outcome, OSError)
    assert outcome.errno == 2


def test_a_supervisor_that_ended_saying_nothing_is_still_a_silent_end() -> None:
    supervised, _asked = _ending_between(b"")

    outcome = supervised.start_outcome()

    assert isinstance(outcome, OSError)
    assert "silent" in str(outcome)


def test_an_awaited_start_reads_what_was_said_before_the_end_too() -> None:
    supervised, asked = _ending_between(b"started 4242\nexit 0\ndone\n")

    supervised._await_start(0.0, None)  # no wait: straight to the check; raises if "silent"

    assert asked
    assert supervised.poll() == 0
