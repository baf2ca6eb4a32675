"""The front says why it cannot start the Python CLI: no interpreter next to it, or one it may
not run (a virtualenv whose interpreter links into a home other users cannot enter)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from cli.front_build import build


@pytest.fixture
def front(tmp_path: Path) -> Path:
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler")
    program = tmp_path / "bin" / "sluice"
    program.parent.mkdir()
    build(program)
    return program


def test_no_interpreter_next_to_the_front(front: Path) -> None:
    done = subprocess.run([str(front), "queue"], capture_output=True, text=True, timeout=30,
                          check=False)
    assert done.returncode == 1
    assert done.stderr == f"sluice: no Python interpreter next to this program " \
                          f"({front.parent / 'python'})\n"


def test_an_interpreter_it_may_not_run_is_named_with_the_reason(front: Path) -> None:
    python = front.parent / "python"
    python.write_text("#!/bin/sh\nexit 0\n")
    python.chmod(0o644)  # no execute bit for anyone, root included
    done = subprocess.run([str(front), "queue"], capture_output=True, text=True, timeout=30,
                          check=False)
    assert done.returncode == 1
    assert done.stderr.startswith(f"sluice: cannot run the Python interpreter next to this "
                                  f"program ({python}): Permission denied;"), done.stderr
