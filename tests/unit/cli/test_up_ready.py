"""What ``sluice up`` says of a node it gave up waiting for (cli/up_ready.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cli.system import _MARKER, run_dir
from cli.up_ready import _seen_as, wait_ready
from streams.settings import Settings


def test_a_node_the_views_never_saw_is_said_to_be_unregistered() -> None:
    assert _seen_as(None, True, 1000) == "the views have no registration of it"


def test_a_node_out_of_service_shows_its_state_and_reason() -> None:
    row = {"state": "DOWN", "reason": "Not responding", "registered_ms": 2000}
    assert _seen_as(row, True, 1000) == "DOWN (Not responding)"
    assert _seen_as({"state": "INVALID_REG"}, True, 1000) == "INVALID_REG"


def test_a_node_in_service_from_an_earlier_start_is_said_so() -> None:
    seen = _seen_as({"state": "IDLE", "registered_ms": 500}, True, 9000)
    assert seen.startswith("in service, but registered before this start")


def test_a_stopped_process_is_named_at_once(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    # Seen: `sluice up` run again while node02's daemon was stopped (SIGSTOP) waited its whole
    # 180 s timeout for that node, then said only that node02 was not in service.
    settings = Settings.from_env({"SLUICE_HOME": str(tmp_path), "SLUICE_API": "127.0.0.1:1",
                                  "KAFKA_BOOTSTRAP": "127.0.0.1:1"})
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", _MARKER])
    try:
        (run_dir(settings) / "node-node02.pid").write_text(f"{child.pid}\n")
        os.kill(child.pid, signal.SIGSTOP)
        for _ in range(100):  # until the kernel shows it stopped
            if Path(f"/proc/{child.pid}/stat").read_text().rsplit(")", 1)[-1].split()[0] == "T":
                break
            time.sleep(0.01)
        began = time.monotonic()
        assert wait_ready(settings, 2, 5.0, {"node02"}, 0, "") == 1
        assert time.monotonic() - began < 2.0
        err = capsys.readouterr().err
        assert f"node-node02 (pid {child.pid}) is stopped" in err
        assert f"kill -CONT {child.pid}" in err
    finally:
        child.kill()
        child.wait()
