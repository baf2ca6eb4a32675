"""A test session stopped with SIGTERM (CI's ``timeout``, ``kill``) tears its fixtures down as
Ctrl-C does: found stopping ``make test`` after a few minutes, which left a test system's
worker and node daemons running (they live in their own process groups)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

HELD = '''
import subprocess, time
import pytest

@pytest.fixture
def daemon(tmp_path_factory):
    child = subprocess.Popen(["sleep", "600"], start_new_session=True)
    with open(PIDS, "w") as out:
        out.write(str(child.pid))
    yield child
    child.kill()
    child.wait()

def test_runs_long(daemon):
    time.sleep(120)
'''


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_sigterm_runs_the_fixtures_teardown(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    (tmp_path / "test_held.py").write_text(f"PIDS = {str(pids)!r}\n{HELD}")
    session = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.conftest",
         "--rootdir", str(tmp_path), "-c", os.devnull, str(tmp_path / "test_held.py")],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        while not pids.exists() or not pids.read_text():
            assert session.poll() is None and time.monotonic() < deadline, session.stdout
            time.sleep(0.05)
        child = int(pids.read_text())
        assert _alive(child)
        session.send_signal(signal.SIGTERM)
        out, _ = session.communicate(timeout=60)
    finally:
        if session.poll() is None:
            session.kill()
    alive = _alive(child)
    if alive:
        os.kill(child, signal.SIGKILL)
    assert not alive, out
    assert session.returncode != 0, out
