"""Start, find and stop the control plane's processes (PIDs in ``<dir>/pids.json``)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path

__all__ = ["alive", "launch", "recorded", "stop_all"]


def _pids_file(folder: Path) -> Path:
    return folder / "pids.json"


def recorded(folder: Path) -> dict[str, int]:
    """Process name → PID of what ``launch`` started in ``folder``."""
    path = _pids_file(folder)
    return {k: int(v) for k, v in json.loads(path.read_text()).items()} if path.exists() else {}


def alive(pid: int) -> bool:
    """True while ``pid`` runs (and is not a zombie of ours)."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def launch(folder: Path, name: str, argv: list[str]) -> int:
    """Start ``argv`` in its own session, output to ``<folder>/<name>.log``; record its PID."""
    log = (folder / f"{name}.log").open("ab")
    process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, start_new_session=True, cwd=folder)
    log.close()
    pids = recorded(folder)
    pids[name] = process.pid
    _pids_file(folder).write_text(json.dumps(pids))
    return process.pid


def stop_all(folder: Path, wait_s: float = 15.0) -> list[str]:
    """SIGTERM every recorded process (last started first), SIGKILL after ``wait_s``."""
    pids = recorded(folder)
    stopped = []
    for name, pid in reversed(list(pids.items())):
        if not alive(pid):
            continue
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + wait_s
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        stopped.append(name)
    _pids_file(folder).unlink(missing_ok=True)
    return stopped
