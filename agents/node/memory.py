"""A node daemon gives the C heap's free pages back to the system once it is idle again.

A job's launch and end allocate (its supervisor's start, the sealed environment, the
reports) and free most of it again; glibc keeps the freed pages of its heap resident for the
next allocation. ``malloc_trim(0)`` returns them (the top of the heap, and since glibc 2.8
the free pages inside it): about 0.6 MiB of an idle daemon's 30 MiB after its imports alone,
more after a job (issue 17). It walks the heap once, well under a millisecond for a daemon's
few MiB, and runs only when the node has held no run for :data:`TRIM_IDLE_S` and has done
something since the last time (:class:`TrimSchedule`): a node running jobs back to back
does not give its pages back between two jobs only to fault them in again for the next
(two trims a trivial job cost its daemon ~0.2-0.3 ms of CPU, ``bench_node_path.py``).
Where the C library is not glibc, :func:`release_free_memory` does nothing.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

__all__ = ["TRIM_IDLE_S", "TrimSchedule", "release_free_memory"]

TRIM_IDLE_S = 1.0
"""How long a node is idle (no run, no step, no command of its own) before its heap is trimmed."""


def _malloc_trim() -> Callable[[int], int] | None:
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


_TRIM = _malloc_trim()


def release_free_memory() -> bool:
    """Give the heap's free pages back (True if any were); False where there is no glibc."""
    return bool(_TRIM(0)) if _TRIM is not None else False


class TrimSchedule:
    """When to trim: once the node has been idle for :data:`TRIM_IDLE_S` after some work."""

    def __init__(self, idle_s: float = TRIM_IDLE_S) -> None:
        self.idle_s = idle_s
        self.due = True  # the start-up's freed heap goes back once the node is idle
        self.at: float | None = None  # when the trim falls due (the loop wakes for it)

    def after_pass(self, now: float, worked: bool, busy: bool) -> bool:
        """Note a pass (``worked``: it handled this node's commands; ``busy``: a run or step
        is held); True when the heap is to be trimmed now."""
        if worked or busy:
            self.due, self.at = True, None
        if not self.due or busy:
            return False
        if self.at is None:
            self.at = now + self.idle_s
            return False
        if now < self.at:
            return False
        self.due, self.at = False, None
        return True
