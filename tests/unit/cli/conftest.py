"""The ``front`` fixture of the command server's tests: a front built into a throwaway virtualenv
(``tests.front_venv``) whose servers live in a run directory of their own under /tmp."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.front_venv import front_venv
from tests.unit.cli.test_command_server import Front


@pytest.fixture
def front(tmp_path: Path) -> Iterator[Front]:
    program = front_venv(tmp_path)
    run_dir = Path(tempfile.mkdtemp(prefix="sluice-front-"))  # in /tmp: others can reach it
    made = Front(program.parent, run_dir)
    yield made
    made.stop()
    shutil.rmtree(run_dir, ignore_errors=True)


@pytest.fixture
def utc() -> Iterator[None]:
    """The process's time zone UTC for the test (times printed as the CLI prints them)."""
    old = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    yield None
    if old is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = old
    time.tzset()
