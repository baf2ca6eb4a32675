"""A node daemon gives the C heap's free pages back to the system once it is idle again.

A job's launch and end allocate (its supervisor's start, the sealed environment, the
reports) and free most of it again; glibc keeps the freed pages of its heap resident for the
next allocation. ``malloc_trim(0)`` returns them (the top of the heap, and since glibc 2.8
the free pages inside it): about 0.6 MiB of an idle daemon's 30 MiB after its imports alone,
more after a job (issue 17). It walks the heap once, well under a millisecond for a daemon's
few MiB, and runs only when the node holds no run and has done something since the last time.
Where the C library is not glibc, :func:`release_free_memory` does nothing.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

__all__ = ["release_free_memory"]


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
