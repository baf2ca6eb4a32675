"""Real small file systems for the full and read-only state directory tests (root only).

``small_tmpfs`` mounts a tmpfs of a few MiB (``mount -t tmpfs -o size=…``); :func:`fill` fills
it with a file until the kernel answers ``ENOSPC``; :func:`remount` makes it read-only or
writable again (``mount -o remount,ro``). Every mount is unmounted when its test ends (lazily if
a test left a file open on it).
"""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

__all__ = ["break_ext4", "fill", "mount_ext4", "mount_tmpfs", "remount", "unmount"]

FILLER = "filler"


def mount_tmpfs(where: Path, size: str = "8m") -> None:
    """Mount a tmpfs of ``size`` at ``where``; skip the test when this is not possible."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small file system needs root")
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs",
                           str(where)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")


def mount_ext4(image: Path, where: Path, size: str = "64M") -> None:
    """Make an ext4 file system in ``image`` and loop-mount it at ``where`` with
    ``errors=remount-ro`` (as a data disk often is); skip when this is not possible."""
    if os.geteuid() != 0:
        pytest.skip("mounting a loop file system needs root")
    where.mkdir(parents=True, exist_ok=True)
    for argv in (["truncate", "-s", size, str(image)], ["mkfs.ext4", "-q", "-F", str(image)],
                 ["mount", "-o", "loop,errors=remount-ro", str(image), str(where)]):
        try:
            done = subprocess.run(argv, capture_output=True, text=True, check=False)
        except FileNotFoundError:
            pytest.skip(f"{argv[0]} is not installed")
        if done.returncode != 0:
            pytest.skip(f"{' '.join(argv)}: {done.stderr.strip()}")


def break_ext4(where: Path) -> None:
    """Make the kernel find an error in the ext4 file system mounted at ``where``
    (``/sys/fs/ext4/<dev>/trigger_fs_error``): with ``errors=remount-ro`` it turns read-only
    at once, whatever files are open on it (a plain ``remount,ro`` refuses while one is)."""
    source = subprocess.run(["findmnt", "-n", "-o", "SOURCE", str(where)], capture_output=True,
                            text=True, check=True).stdout.strip()
    Path(f"/sys/fs/ext4/{Path(source).name}/trigger_fs_error").write_text("sluice test\n")


def unmount(where: Path) -> None:
    """Unmount ``where`` (lazily when something still holds it)."""
    if subprocess.run(["umount", str(where)], capture_output=True, check=False).returncode:
        subprocess.run(["umount", "-l", str(where)], capture_output=True, check=False)


def move_mount(source: Path, where: Path) -> bool:
    """``mount --move source where`` (at once: nothing sees ``where`` half made); whether it
    could (a mount under a shared one cannot be moved)."""
    return subprocess.run(["mount", "--move", str(source), str(where)], capture_output=True,
                          check=False).returncode == 0


def remount(where: Path, mode: str) -> None:
    """``mount -o remount,<mode>`` (``ro`` or ``rw``)."""
    subprocess.run(["mount", "-o", f"remount,{mode}", str(where)], check=True,
                   capture_output=True)


def fill(where: Path) -> Path:
    """Write a file in ``where`` until the file system is full (unbuffered, down to the last
    byte); the file."""
    path = where / FILLER
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        for size in (1 << 20, 65536, 4096, 512, 1):
            chunk = b"\0" * size
            try:
                while True:
                    os.write(fd, chunk)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
    finally:
        os.close(fd)
    return path


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A tmpfs of 8 MiB, unmounted after the test."""
    where = tmp_path / "small"
    mount_tmpfs(where)
    try:
        yield where
    finally:
        unmount(where)
