"""A progress bar for long work (``simulate``, ``replay``, ``verify``): tqdm's, with its rate
and ETA, on standard error when that is a terminal; nothing otherwise or with ``--json``."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["progress"]

Advance = Callable[[int], None]


@contextmanager
def progress(total: int | None, what: str, unit: str, quiet: bool = False,
             monitor: bool = True) -> Iterator[Advance]:
    """``with progress(n, "simulate", "job") as advance: ... advance(k)``; ``advance`` does
    nothing when ``quiet`` or standard error is not a terminal. ``monitor=False``: without
    tqdm's monitor thread (``sluice replay`` forks its reader only from a process that runs one
    thread; the bar is told often enough not to need it)."""
    if quiet or not sys.stderr.isatty():
        yield _nothing
        return
    from tqdm import tqdm

    class _Bar(tqdm):  # type: ignore[misc]  # tqdm has no type hints
        monitor_interval = 10 if monitor else 0  # tqdm starts its monitor thread when not 0

    try:
        width = os.get_terminal_size(sys.stderr.fileno()).columns
    except OSError:
        width = 0
    with _Bar(total=total, desc=what, unit=unit, file=sys.stderr, leave=False,
              ncols=width if width > 0 else 80, mininterval=0.25, smoothing=0.1) as bar:
        yield bar.update


def _nothing(_: int) -> None:
    return None
