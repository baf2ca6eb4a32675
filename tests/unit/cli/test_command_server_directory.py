"""The command server binds its socket and lock only in a directory that is its user's own.

Red team, 6 Dec 2026: the front checks the socket's directory (``${TMPDIR:-/tmp}/sluice-UID``)
and then starts the server, which opened its lock and bound its socket by path about 0.2 s
later. With a ``TMPDIR`` in a directory another user owns (root after ``su`` from alice's
session keeps hers), alice renamed root's fresh ``sluice-0`` away and put a symlink to any
directory in its place: root's server made ``cmd-<hash>`` (a socket) and ``cmd-<hash>.lock``
there, in a directory alice chose (``/etc/sudoers.d``, ``/etc/cron.d``: sudo and cron read
every file without a dot). Seen with ``rt-alice`` against root's ``sluice queue`` at the first
try. The server now opens the directory itself (no symlink), checks it is its own and mode
0700, and makes both names relative to that descriptor.
"""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="another user's directory needs root")

NOBODY = pwd.getpwnam("nobody")
ROOT = Path(__file__).resolve().parents[3]


def _serve(path: Path, idle_s: float) -> subprocess.Popen[bytes]:
    """A server on ``path`` in a process of its own (it installs signal handlers)."""
    code = "import sys; from cli import command_server as c; sys.exit(c.serve(sys.argv[1], " \
           f"{idle_s}))"
    return subprocess.Popen([sys.executable, "-P", "-c", code, str(path)], cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})


@pytest.fixture
def places() -> Iterator[tuple[Path, Path]]:
    """``nobody``'s TMPDIR (theirs, 0755) and a directory of root's they want written into."""
    base = Path(tempfile.mkdtemp(prefix="cmdsrv-dir-", dir="/tmp"))
    theirs, target = base / "theirs", base / "target"
    theirs.mkdir(mode=0o755)
    os.chown(theirs, NOBODY.pw_uid, NOBODY.pw_gid)
    target.mkdir(mode=0o755)
    try:
        yield theirs, target
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_a_symlink_put_in_place_of_the_directory_gets_nothing_written(
        places: tuple[Path, Path]) -> None:
    theirs, target = places
    link = theirs / f"sluice-{os.getuid()}"
    link.symlink_to(target)  # what the swap leaves once the front has checked the directory
    os.lchown(link, NOBODY.pw_uid, NOBODY.pw_gid)
    assert _serve(link / "cmd-0123456789abcdef", 0.2).wait(60) != 0
    assert list(target.iterdir()) == []


@pytest.mark.parametrize("mode", [0o755, 0o700])
def test_a_directory_of_another_user_or_open_to_others_gets_nothing_written(
        places: tuple[Path, Path], mode: int) -> None:
    theirs, _ = places
    other = theirs / f"sluice-{os.getuid()}"
    other.mkdir(mode=mode)
    other.chmod(mode)
    if mode == 0o700:  # private, but not ours
        os.chown(other, NOBODY.pw_uid, NOBODY.pw_gid)
    assert _serve(other / "cmd-0123456789abcdef", 0.2).wait(60) != 0
    assert list(other.iterdir()) == []


def test_its_own_private_directory_is_served_and_left_clean(tmp_path: Path) -> None:
    own = tmp_path / "sluice"
    own.mkdir(mode=0o700)
    path = own / "cmd-0123456789abcdef"
    server = _serve(path, 1.0)
    deadline = time.monotonic() + 30
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert stat.S_ISSOCK(path.lstat().st_mode) and path.lstat().st_mode & 0o777 == 0o600
    assert server.wait(60) == 0
    assert not path.exists()  # the socket went with the server; the lock stays, as before
    assert (own / "cmd-0123456789abcdef.lock").exists()
