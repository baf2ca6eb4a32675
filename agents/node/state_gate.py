"""Whether a node daemon may take commands: its state directory must take their writes.

A pass that takes commands writes in the daemon's state directory (the replay cache, with an
fsync, before any command runs; the batch script; the offset file). When that directory is
full or read-only those writes fail, and a command taken then could neither run nor be
refused cleanly. So before taking commands each pass asks :meth:`StateGate.refuses`:
``statvfs`` (no write, ~1 µs) says whether the file system is read-only or has less than
:data:`RESERVE_BYTES` free. While it refuses, the commands wait in the broker (the command
reader's bounded queue, then its partition), the daemon keeps heartbeating and supervising its
runs, the process's alarm (``streams.state_dir``) says so once a minute, and the gate looks
again after a back-off (1 s doubling to 10 s); a write that fails anyway (the space went
between the look and the write) is reported through :meth:`failed` and closes the gate too.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from streams.state_dir import FULL, READ_ONLY, BackOff, alarm, problem_of

__all__ = ["RESERVE_BYTES", "StateGate", "space_problem"]

RESERVE_BYTES = 1024 * 1024
"""Free space under which a daemon takes no commands (a pass writes a few KiB)."""


def space_problem(directory: Path, reserve_bytes: int = RESERVE_BYTES) -> str | None:
    """``READ_ONLY`` or ``FULL`` by ``statvfs(directory)``, else None (no write made)."""
    stat = os.statvfs(directory)
    if stat.f_flag & os.ST_RDONLY:
        return READ_ONLY
    if stat.f_bavail * stat.f_frsize < reserve_bytes:
        return FULL
    return None


class StateGate:
    """The gate of one daemon's state directory (module docstring)."""

    def __init__(self, directory: Path, clock: Callable[[], float] = time.monotonic,
                 look: Callable[[Path], str | None] = space_problem) -> None:
        self.directory = directory
        self._clock, self._look = clock, look
        self._back_off = BackOff()
        self.until: float | None = None
        """While closed: when (monotonic) it looks again."""
        self.problem = ""
        """While closed: the directory's problem (``FULL``, ``READ_ONLY``…; the heartbeat's
        ``paused``, so the shard keeps new work off the node), else ""."""

    def refuses(self) -> bool:
        """Whether commands must wait now (looks at the directory when the back-off is over)."""
        now = self._clock()
        if self.until is not None and now < self.until:
            return True
        problem = self._look(self.directory)
        if problem is None:
            if self.until is not None:
                self.until, self.problem = None, ""
                self._back_off.reset()
                alarm.cleared(self.directory)
            return False
        self._close(problem, now)
        return True

    def failed(self, exc: BaseException) -> bool:
        """Whether ``exc`` is a write the directory refused (then the gate closes, said)."""
        problem = problem_of(exc)
        if problem is None:
            return False
        self._close(problem, self._clock())
        return True

    def _close(self, problem: str, now: float) -> None:
        alarm.failed(self.directory, problem, "taking node commands")
        self.until = now + self._back_off.next()
        self.problem = problem
