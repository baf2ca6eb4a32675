"""The batch script's directory is the daemon's: the job's owner may run the script, never
write beside it (red team, 7 Dec 2026: a job filled its own, user-owned directory with 3,000
nested directories, and the root daemon's removal at the run's end raised ``RecursionError``,
which ended the daemon and every other user's run on the node)."""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.node.batch_files import batch_argv, remove_batch_files, script_path

NOBODY = pwd.getpwnam("nobody")
_LIMIT, _DEPTH = 400, 500
"""The recursion limit while the nest is removed, and the nest's depth: deeper than the limit,
as 3,000 levels are deeper than Python's default 1,000."""


def _launch() -> dict[str, object]:
    return {"run_sluid": "s009M992X95J02", "command": ["/w/job.sh"], "user": "nobody",
            "script": "#!/bin/sh\necho ran as $(id -un)\n"}


def _as_nobody(action: str, path: Path) -> int:
    """``action`` (``create`` a file in ``path``, ``run`` the script ``path``) in a child
    switched to nobody; its exit status (0: it could)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child ends in _exit
        code = 1
        try:
            os.setgroups([])
            os.setresgid(NOBODY.pw_gid, NOBODY.pw_gid, NOBODY.pw_gid)
            os.setresuid(NOBODY.pw_uid, NOBODY.pw_uid, NOBODY.pw_uid)
            if action == "create":
                (path / "d").mkdir()
            else:
                null = os.open(os.devnull, os.O_WRONLY)
                os.dup2(null, 1)
                os.execv(str(path), [str(path)])
            code = 0
        except OSError:
            code = 2
        finally:
            os._exit(code)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


@pytest.fixture
def state_dir() -> Iterator[Path]:
    """A state directory nobody can reach (pytest's own are 0700)."""
    path = Path(tempfile.mkdtemp(prefix="batch-dir-", dir="/tmp"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="giving the script to its owner needs root")
def test_the_owner_runs_the_script_and_cannot_write_in_its_directory(state_dir: Path) -> None:
    argv = batch_argv(_launch(), state_dir)
    path = script_path(state_dir, "s009M992X95J02")
    assert argv == [str(path)]
    folder = path.parent.stat()
    assert (folder.st_uid, folder.st_gid) == (0, NOBODY.pw_gid)
    assert stat.S_IMODE(folder.st_mode) == 0o750
    assert (path.stat().st_uid, stat.S_IMODE(path.stat().st_mode)) == (NOBODY.pw_uid, 0o700)
    assert _as_nobody("run", path) == 0
    assert _as_nobody("create", path.parent) == 2  # EACCES
    assert list(path.parent.iterdir()) == [path]
    remove_batch_files(state_dir, "s009M992X95J02")
    assert not path.parent.exists()


def test_a_folder_too_deep_to_remove_is_left_without_raising(tmp_path: Path) -> None:
    """A directory an earlier release gave its user, filled with nested directories: the
    daemon's loop must not die on it."""
    folder = tmp_path / "scripts" / "s009M992X95J02"
    folder.mkdir(parents=True)
    fd = os.open(folder, os.O_RDONLY)
    try:
        for _ in range(_DEPTH):
            os.mkdir("d", dir_fd=fd)
            inner = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
    finally:
        os.close(fd)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(_LIMIT)  # the test's nest is shallower than 1,000 levels: faster
    try:
        remove_batch_files(tmp_path, "s009M992X95J02")  # RecursionError before
    finally:
        sys.setrecursionlimit(limit)
        _flatten(folder, tmp_path / "next")


def _flatten(folder: Path, spare: Path) -> None:
    """Remove the nest a level at a time (pytest's own clean-up recurses too)."""
    while (folder / "d").exists():
        if (folder / "d" / "d").exists():
            (folder / "d" / "d").rename(spare)
            (folder / "d").rmdir()
            spare.rename(folder / "d")
        else:
            (folder / "d").rmdir()
