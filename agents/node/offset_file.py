"""The node daemon's ``commands.offset``: where its command reader resumes, rewritten in place.

The daemon moves the file past a pass's commands after the pass (``agents.node.daemon``),
so it is written two or more times a job. Rewritten whole (``Path.write_text``: open with
``O_TRUNC``, write, close), each write cost ~170 µs of CPU and ~2 ms of wall time on ext4: a
file truncated to nothing and written again is flushed to disk when it is closed
(``auto_da_alloc``, ext4's guard for programs that replace a file that way), which the loop
waited for. Here the descriptor stays open and each position is written at offset 0 with
``pwrite``, padded to one width (:data:`WIDTH`), so the file never changes length: ~2 µs, no
flush (measured 2026-12-06: docs/benchmarks.md, "The node daemons' state writes").

Nothing is fsynced, as before: the file is a hint (the replay cache, fsynced, refuses what
is read again). A write is one small write inside the first sector: a crash leaves the old
position or the new one, never the empty file a crash between a truncation and its write
could leave. The file is read as before (``int`` of the stripped text), so a daemon of
either form reads the other's.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

__all__ = ["WIDTH", "OffsetFile"]

WIDTH = 20
"""Characters of a position (right-aligned, then a newline): an int64 offset fits."""


class OffsetFile:
    """One position in one file, rewritten in place through a descriptor kept open."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def exists(self) -> bool:
        return self.path.exists()

    def read_bytes(self) -> bytes:
        return self.path.read_bytes()

    def write(self, offset: int) -> None:
        """Store ``offset`` (raises OSError as a write of the file would)."""
        data = f"{offset:>{WIDTH}}\n".encode("ascii")
        opened = self._fd is None
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            os.pwrite(self._fd, data, 0)
            if opened and os.fstat(self._fd).st_size > len(data):  # a longer file: cut once
                os.ftruncate(self._fd, len(data))
        except OSError:
            self.close()  # opened again at the next write (the directory may have changed)
            raise

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None
