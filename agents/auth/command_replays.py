"""The node's replay cache of signed commands: an append-only file, one fsync per batch.

Each accepted command leaves one line, ``<digest> <expiry Unix ms>``, in the node's
``commands.seen``; a restarted daemon reads them back and still refuses a command it has run
(an expired command is refused as such before the cache is asked; expired entries are dropped
once 1,024 are held). The file must be on disk *before* the command runs, so that a
crash, even of the machine, never lets a replayed command run twice:

- outside a batch, :meth:`ReplayCache.add` appends and fsyncs at once;
- inside ``with cache.batch():`` the lines wait, and leave with one write and one fsync when
  the block ends. The daemon checks a pass's commands in the block and runs them only after it
  (``agents.node.daemon``): one fsync a pass instead of one a command. A crash after that fsync
  and before a command of the pass ran refuses that command on restart, as a crash after the
  single write always did for the one command it interrupted (the shard ends such a run when
  the node registers again: ``docs/node-daemon.md``).

The file is rewritten whole (temporary file, fsync, rename) when its lines outnumber twice the
entries held by 1,024, and read in either form: these lines, or the JSON object
``{digest: expiry}`` an earlier daemon rewrote per command.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

from schemas.digits import ascii_whole

__all__ = ["ReplayCache"]

_COMPACT_AT = 1024
"""Entries held before the expired ones are dropped; and how many lines the file may hold
beyond twice the entries before it is rewritten."""


class ReplayCache:
    """Digests of the commands run, until they expire, kept in one append-only file."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._seen: dict[str, int] = _read(path)
        self._lines = len(self._seen)  # what the file holds (after the first compaction)
        self._pending: list[str] = []
        self._batching = False
        self._fd: int | None = None

    def __contains__(self, digest: str) -> bool:
        return digest in self._seen

    def add(self, digest: str, expiry_ms: int, now_ms: int) -> None:
        """Remember ``digest`` until ``expiry_ms``: on disk now, or at the end of the batch."""
        if len(self._seen) >= _COMPACT_AT:
            self._seen = {k: v for k, v in self._seen.items() if v > now_ms}
        self._seen[digest] = expiry_ms
        self._pending.append(f"{digest} {expiry_ms}\n")
        if not self._batching:
            self._write()

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Defer the writes of :meth:`add` to the block's end (one write, one fsync)."""
        self._batching = True
        try:
            yield
        finally:
            self._batching = False
            self._write()

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _write(self) -> None:
        if not self._pending:
            return
        data, self._pending = "".join(self._pending).encode(), []
        self._lines += data.count(b"\n")
        if self._lines > 2 * len(self._seen) + _COMPACT_AT:
            self._rewrite()
            return
        if self._fd is None:
            self._fd = os.open(self._path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC,
                               0o600)
            if os.fstat(self._fd).st_size and not _ends_a_line(self._path):
                os.write(self._fd, b"\n")  # an earlier JSON form or a torn last line
        os.write(self._fd, data)
        os.fsync(self._fd)

    def _rewrite(self) -> None:
        """The live entries alone, atomically (temporary file, fsync, rename)."""
        self.close()
        import tempfile  # noqa: PLC0415 - rarely: a node daemon does not load it (issue 17)

        fd, tmp = tempfile.mkstemp(dir=self._path.parent, prefix=".seen-")
        try:
            with os.fdopen(fd, "w") as out:
                out.writelines(f"{k} {v}\n" for k, v in self._seen.items())
                out.flush()
                os.fsync(out.fileno())
            Path(tmp).replace(self._path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                Path(tmp).unlink()
        self._lines = len(self._seen)


def _ends_a_line(path: Path) -> bool:
    with path.open("rb") as handle:
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) == b"\n"


def _read(path: Path) -> dict[str, int]:
    """The entries of ``path`` (lines, or an earlier daemon's JSON object); a torn or unreadable
    line is skipped."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return {}
    seen: dict[str, int] = {}
    for line in text.splitlines():
        if line.startswith("{"):
            with contextlib.suppress(ValueError, TypeError, AttributeError):
                seen.update({str(k): int(v) for k, v in dict(json.loads(line)).items()})
            continue
        digest, _, expiry_text = line.partition(" ")
        expiry = ascii_whole(expiry_text)
        if digest and expiry is not None:
            seen[digest] = expiry
    return seen
