"""One process per state directory: a second one refuses to start, in one line.

A worker, the views and a node daemon each own their state directory (``$SLUICE_HOME/worker``,
``projections``, ``nodes/<name>``). A second process started on the same directory (a
supervisor and a hand both starting ``sluice node --name n01``, a unit started twice) is never
right: a second node daemon killed the first one's runs as "left by earlier runs" and then
launched every job its node was sent a second time (two copies of each job running at once);
a second worker looped on RocksDB's lock error with a traceback a second (reliability round,
2026-12-07). So each process takes an exclusive ``flock`` on ``<directory>/lock`` before it
reads anything there and holds it for its life; the kernel drops it when the process ends,
SIGKILL included, so a restart after a crash is never refused. The file is opened
close-on-exec: the runs a daemon starts (exec'd) do not keep it.
"""

from __future__ import annotations

import fcntl
import os
import sys
from pathlib import Path

__all__ = ["LOCK_NAME", "hold_state_dir"]

LOCK_NAME = "lock"
"""The lock file inside a state directory."""

_held: dict[Path, int] = {}
"""Directory → the descriptor holding its lock, for the life of the process."""


def hold_state_dir(program: str, directory: Path) -> int:
    """Lock ``directory`` for this process: 0 when held (or held already by this process); 2
    after ONE line on stderr naming the holder when another live process holds it, or when
    the lock file cannot be opened."""
    directory = directory.resolve()
    if directory in _held:
        return 0
    path = directory / LOCK_NAME
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        print(f"{program}: state directory {directory}: cannot open {path}: {exc.strerror}",
              file=sys.stderr)
        return 2
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "?"
        os.close(fd)
        print(f"{program}: state directory {directory} is in use by another process "
              f"(pid {holder}): one process per state directory; stop that one first, or "
              f"give this one another SLUICE_HOME", file=sys.stderr)
        return 2
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    except OSError:  # a full disk: the pid is only for the message; the lock holds
        pass
    _held[directory] = fd
    return 0
