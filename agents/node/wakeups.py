"""What the node daemon's loop waits for next: descriptors that become readable, and a time.

The run and step tables name, for each process they watch, its supervisor's pidfd (readable
once the supervisor has ended: :meth:`agents.node.supervised.Supervised.fileno`) and the
earliest time one of them needs the loop without any descriptor waking it (a script's timeout,
the SIGKILL after a kill's grace, a time limit the scheduler's kill has not enforced). A process
without a pidfd (a kernel before 5.3) is looked at every ``FALLBACK_POLL_S`` instead.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Protocol

__all__ = ["FALLBACK_POLL_S", "Wakeups"]

FALLBACK_POLL_S = 0.02
"""How often a process is polled when the kernel gives no pidfd to wait on."""


class Watched(Protocol):
    def fileno(self) -> int | None: ...


@dataclass
class Wakeups:
    """Descriptors to wait on and the earliest deadline (``time.monotonic()``), if any."""

    fds: set[int] = field(default_factory=set)
    deadline: float | None = None

    def process(self, process: Watched) -> None:
        """Wake when ``process`` ends."""
        fd = process.fileno()
        if fd is None:
            self.at(time.monotonic() + FALLBACK_POLL_S)
        else:
            self.fds.add(fd)

    def readable(self, fd: int | None) -> None:
        """Wake when ``fd`` becomes readable (None: nothing to wait on)."""
        if fd is not None:
            self.fds.add(fd)

    def at(self, when: float | None) -> None:
        """Wake at ``when`` at the latest (None: no deadline)."""
        if when is not None and (self.deadline is None or when < self.deadline):
            self.deadline = when

    def timeout(self, now: float, longest: float) -> float:
        """Seconds to wait from ``now``: until the deadline, at most ``longest``, never < 0."""
        if self.deadline is None:
            return longest
        return min(max(self.deadline - now, 0.0), longest)
