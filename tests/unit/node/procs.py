"""Finding a test's processes by a unique argv token (``sleep 6001.<n>``), on real /proc."""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import os
import time
from collections.abc import Iterator
from pathlib import Path

__all__ = [
    "NO_CGROUP",
    "alive_with",
    "cgroup2_mount",
    "hung_directory",
    "hung_fuse_mount",
    "supervisors_of",
    "token",
    "wait_count",
    "wait_gone",
]

NO_CGROUP = "no writable cgroup2 mount on this host (not root, or no cgroup2 file system)"

_COUNTER = itertools.count(1)


def token() -> str:
    """A sleep duration no other process on this host uses: ``6001.<pid><n>``."""
    return f"6001.{os.getpid()}{next(_COUNTER):03d}"


def alive_with(argv_token: str) -> list[int]:
    """Live (not zombie) processes whose argv holds ``argv_token``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            continue
        if argv_token.encode() in argv and state not in "ZX":
            found.append(int(entry.name))
    return found


def wait_gone(argv_token: str, timeout_s: float) -> list[int]:
    """Wait until no process carries ``argv_token``; returns those still alive at the end."""
    deadline = time.monotonic() + timeout_s
    while (left := alive_with(argv_token)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def wait_count(argv_token: str, count: int, timeout_s: float = 30) -> list[int]:
    """Wait until ``count`` processes carry ``argv_token`` (the run got going)."""
    deadline = time.monotonic() + timeout_s
    while len(found := alive_with(argv_token)) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(found) >= count, f"{found} carry {argv_token}, expected {count}"
    return found


def cgroup2_mount() -> Path | None:
    """The writable cgroup2 mount, or None (the tests that need one skip with the reason)."""
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        if right.split()[:1] == ["cgroup2"]:
            mount = Path(left.split()[4])
            return mount if os.access(mount / "cgroup.procs", os.W_OK) else None
    return None


def supervisors_of(run_sluid: str) -> list[int]:
    """The live supervisors of a run: one started alone (``python -I -S …/supervise.py
    RUN_SLUID``), or one forked by the daemon's supervisor server (its argv is the server's):
    the ``supervise.py`` parent of a process carrying the run's marker."""
    found: set[int] = set()
    needle = f"\0SLUICE_RUN_SLUID={run_sluid}\0".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError, ValueError):
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            if run_sluid.encode() in argv and _is_supervisor(int(entry.name)):
                found.add(int(entry.name))
            elif needle in b"\0" + (entry / "environ").read_bytes():
                parent = int((entry / "stat").read_text().rpartition(")")[2].split()[1])
                if _is_supervisor(parent):
                    found.add(parent)
    return sorted(found)


def _is_supervisor(pid: int) -> bool:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return any(arg.endswith(b"/agents/node/supervise.py") for arg in argv)


@contextlib.contextmanager
def hung_fuse_mount(point: Path) -> Iterator[str]:
    """Mount at ``point`` (an empty directory) a FUSE file system whose server never answers,
    as an NFS server that went away: every access to it blocks in the kernel until the mount
    is left (its connection aborted: then ``ENOTCONN``, and it is unmounted). Yields "" when
    mounted, else why it cannot be here (not root, no ``/dev/fuse``, mount refused)."""
    if os.geteuid() != 0 or not Path("/dev/fuse").exists():
        yield "a FUSE mount needs root and /dev/fuse"
        return
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open("/dev/fuse", os.O_RDWR)
    options = f"fd={fd},rootmode=40000,user_id=0,group_id=0,allow_other".encode()
    if libc.mount(b"sluice-hung", str(point).encode(), b"fuse", 0, options) != 0:
        error = ctypes.get_errno()
        os.close(fd)
        yield f"cannot mount a FUSE file system here: {os.strerror(error)}"
        return
    try:
        yield ""
    finally:
        os.close(fd)  # aborts the connection: whatever still waits on it gets ENOTCONN
        libc.umount2(str(point).encode(), 2)  # MNT_DETACH


@contextlib.contextmanager
def hung_directory(tmp_path: Path) -> Iterator[Path]:
    """An empty directory under ``tmp_path`` on a hung FUSE mount (:func:`hung_fuse_mount`);
    skips the test where none can be mounted."""
    import pytest

    point = tmp_path / "hung"
    point.mkdir()
    with hung_fuse_mount(point) as why_not:
        if why_not:
            pytest.skip(why_not)
        yield point
