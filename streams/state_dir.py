"""A state directory that cannot be written: told apart, said once, waited out.

The worker's and the views' RocksDB stores (``streams.rocks``) and small files live in a state
directory (``$SLUICE_HOME/worker``, ``$SLUICE_HOME/projections``). When that directory's file
system is full (``ENOSPC``, ``EDQUOT``) or read-only (``EROFS``; ``EACCES``/``EPERM``: not
writable by us), every write fails the same way until an operator acts. A process then:

1. classifies the error (:func:`problem_of`: an ``OSError``'s errno, or the text of RocksDB's
   ``IO error: No space left on device`` status, which rocksdict raises as a plain
   ``Exception``); any other error is a bug and keeps its traceback;
2. says so in ONE line naming the directory and the reason, and again at most once a minute
   while it lasts (:class:`StateDirAlarm`), and once more when writes succeed again; the
   alarm's state is what ``sluice_state_dir_full`` / ``sluice_state_dir_read_only`` and the
   views' ``/v1/status`` show;
3. stops consuming (nothing is committed past what it could not store) and tries again after a
   back-off (:class:`BackOff`, 1 s doubling to 10 s), probing the directory first
   (:func:`probe`: a small file written, synced and removed), and resumes by itself.

At start a read-only or unwritable directory is fatal (:func:`check_at_start`: one line,
exit status 2, for a supervisor to retry); a full one is waited out as above.
"""

from __future__ import annotations

import errno
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["FULL", "READ_ONLY", "UNWRITABLE", "BackOff", "StateDirAlarm", "Trouble", "WaitOut",
           "alarm", "check_at_start", "errno_name", "probe", "problem_of"]

log = logging.getLogger(__name__)

FULL = "no space left on device"
"""The problem of a full file system (or an exceeded quota)."""
READ_ONLY = "read-only file system"
"""The problem of a read-only file system."""
UNWRITABLE = "permission denied"
"""The problem of a directory this process may not write."""

_ERRNOS = {errno.ENOSPC: FULL, errno.EDQUOT: FULL, errno.EROFS: READ_ONLY,
           errno.EACCES: UNWRITABLE, errno.EPERM: UNWRITABLE}
_TEXTS = (("No space left on device", FULL), ("Disk quota exceeded", FULL),
          ("Read-only file system", READ_ONLY), ("Permission denied", UNWRITABLE))
"""RocksDB's ``IO error`` statuses carry strerror's text, not an errno."""

REPEAT_S = 60.0
"""How often a lasting problem is said again."""


def problem_of(exc: BaseException) -> str | None:
    """:data:`FULL`, :data:`READ_ONLY` or :data:`UNWRITABLE` when ``exc`` (or an exception
    it was raised from) is a write refused by the file system; None for anything else."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in _ERRNOS:
            return _ERRNOS[current.errno]
        text = str(current)
        if type(current) is Exception and text.startswith("IO error"):
            for needle, problem in _TEXTS:
                if needle in text:
                    return problem
        if isinstance(current, OSError) and current.errno is None:  # rocksdict's open errors
            for needle, problem in _TEXTS:
                if needle in text:
                    return problem
        current = current.__cause__ or current.__context__
    return None


def errno_name(problem: str) -> str:
    """The errno name an operator greps for."""
    return {FULL: "ENOSPC", READ_ONLY: "EROFS", UNWRITABLE: "EACCES"}.get(problem, "?")


def probe(directory: Path) -> str | None:
    """Write, sync and remove a small file in ``directory`` (made if missing); the problem
    (:func:`problem_of`) if that fails, else None. Other errors are raised."""
    path = directory / f".sluice-probe-{os.getpid()}"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, b"\0" * 4096)
            os.fsync(fd)
        finally:
            os.close(fd)
            path.unlink(missing_ok=True)
    except OSError as exc:
        problem = problem_of(exc)
        if problem is None:
            raise
        return problem
    return None


@dataclass(frozen=True, slots=True)
class Trouble:
    """A state directory's current problem, since when (wall clock, ms)."""

    directory: str
    problem: str
    since_ms: int


class StateDirAlarm:
    """What one process says and shows about its state directories (thread-safe).

    :meth:`failed` logs the first failure of a directory, and then at most every
    :data:`REPEAT_S` while it lasts; :meth:`cleared` logs that it ended. ``clock`` is
    monotonic seconds (a test passes its own)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic,
                 logger: logging.Logger = log,
                 check: Callable[[Path], str | None] | None = None) -> None:
        self._clock = clock
        self._check = check or probe
        self._log = logger
        self._lock = threading.Lock()
        self._troubles: dict[str, Trouble] = {}
        self._said: dict[str, float] = {}
        self.failures = 0

    def failed(self, directory: Path | str, problem: str, what: str = "writes") -> bool:
        """Record that ``what`` failed in ``directory`` for ``problem``; whether a line was
        logged (the first one, or the first after :data:`REPEAT_S`)."""
        key = str(directory)
        now = self._clock()
        with self._lock:
            self.failures += 1
            trouble = self._troubles.get(key)
            if trouble is None or trouble.problem != problem:
                trouble = Trouble(key, problem, int(time.time() * 1000))
                self._troubles[key] = trouble
                self._said.pop(key, None)
            last = self._said.get(key)
            if last is not None and now - last < REPEAT_S:
                return False
            self._said[key] = now
            lasting = last is not None
        since = round((time.time() * 1000 - trouble.since_ms) / 1000)
        self._log.error(
            "state directory %s: %s (%s): %s paused, nothing is consumed past what is stored; "
            "retrying with back-off%s", key, problem, errno_name(problem), what,
            f" (for {since} s now)" if lasting else "")
        return True

    def cleared(self, directory: Path | str) -> None:
        """``directory`` took a write again: log it once, if it was in trouble and a probe
        file can be written there."""
        key = str(directory)
        with self._lock:
            if key not in self._troubles:
                return
        # A small write may land in the slack of a full disk's last page: only a probe file
        # says the directory takes writes again.
        if self._check(Path(key)) is not None:
            return
        with self._lock:
            trouble = self._troubles.pop(key, None)
            self._said.pop(key, None)
        if trouble is not None:
            since = round((time.time() * 1000 - trouble.since_ms) / 1000)
            self._log.warning("state directory %s: writable again after %d s (%s); resumed",
                              key, since, trouble.problem)

    def troubles(self) -> list[Trouble]:
        """The directories in trouble now, by name."""
        with self._lock:
            return [self._troubles[k] for k in sorted(self._troubles)]

    def count(self, problem: str) -> int:
        """How many directories have ``problem`` now (:data:`READ_ONLY` counts the
        unwritable ones too)."""
        wanted = {problem} if problem == FULL else {READ_ONLY, UNWRITABLE}
        return sum(1 for t in self.troubles() if t.problem in wanted)


alarm = StateDirAlarm()
"""The process's alarm: what its metrics and status show."""


class BackOff:
    """Delays of 1 s doubling to 10 s (a probe every 10 s costs nothing, and the process
    resumes within 10 s of space returning); :meth:`reset` after a success."""

    def __init__(self, first_s: float = 1.0, most_s: float = 10.0) -> None:
        self.first_s, self.most_s = first_s, most_s
        self._next = first_s

    def next(self) -> float:
        """The delay to wait now (the following one doubles)."""
        delay = self._next
        self._next = min(self.most_s, self._next * 2)
        return delay

    def reset(self) -> None:
        self._next = self.first_s


class WaitOut:
    """A store's ``wait_out`` (``streams.rocks.RocksStore``): a write refused for a full or
    read-only directory is said (:data:`alarm`, rate-limited) and waited out, back-off after
    back-off, until a probe file can be written (True: write it again) or ``stopping`` is set
    (False: raise it). Any other error is raised at once. ``wait(seconds)`` waits (the views
    wait on their condition, which lets their API answer meanwhile)."""

    def __init__(self, stopping: threading.Event, what: str,
                 wait: Callable[[float], object] | None = None,
                 back_off: Callable[[], BackOff] = BackOff) -> None:
        self.stopping, self.what = stopping, what
        self._wait = wait or stopping.wait
        self._back_off = back_off

    def __call__(self, directory: Path, exc: Exception) -> bool:
        problem = problem_of(exc)
        back_off = self._back_off()
        while problem is not None and not self.stopping.is_set():
            alarm.failed(directory, problem, self.what)
            deadline = time.monotonic() + back_off.next()
            while not self.stopping.is_set() and (left := deadline - time.monotonic()) > 0:
                self._wait(min(left, 1.0))
            if self.stopping.is_set():
                return False
            problem = probe(directory)
            if problem is None:
                return True
        return False


def make_private(directory: Path) -> None:
    """Make ``directory`` (and any missing parent) and take group's and others' access off it:
    the worker's and the views' stores hold every job's script, command and working directory
    (``PrivateData``: only the service reads them), the logs name the paths a launch failed on.
    Red team, 2026-12-07: under a ``SLUICE_HOME`` outside a private directory they were 0644
    in 0755 directories. A directory owned by another user is left as it is."""
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        found = directory.stat()
        if found.st_mode & 0o077 and found.st_uid == os.geteuid():
            directory.chmod(found.st_mode & 0o7700)
    except OSError:  # read-only, full, not ours: the start's probe says it (check_at_start)
        return


def check_at_start(program: str, directory: Path, stopping: threading.Event | None = None,
                   sleep: Callable[[float], object] = time.sleep) -> int:
    """Probe ``directory`` before a process starts: 0 when writable; 2 after ONE line on
    stderr when it is read-only or unwritable (a supervisor may retry); a full one is waited
    out (the alarm's line at most once a minute) until it takes the probe, or ``stopping``."""
    back_off = BackOff()
    while True:
        problem = probe(directory)
        if problem is None:
            alarm.cleared(directory)
            return 0
        if problem != FULL:
            print(f"{program}: state directory {directory} is not writable: {problem} "
                  f"({errno_name(problem)})", file=sys.stderr)
            return 2
        alarm.failed(directory, problem, "start")
        if stopping is not None and stopping.is_set():
            return 2
        sleep(back_off.next())
