"""A throw-away virtualenv skeleton with the sluice front as its ``bin/sluice`` (tests only):
its ``bin/python`` is this interpreter and its ``lib`` this virtualenv's, so the front's
Python CLI and command server run this tree's code (with ``PYTHONPATH`` set to it)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from cli.front_build import build

ROOT = Path(__file__).resolve().parents[1]


def front_venv(where: Path) -> Path:
    """Make the skeleton under ``where``; returns the front's path."""
    venv = where / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(sys.executable)
    (venv / "lib").symlink_to(Path(sys.prefix) / "lib")
    shutil.copy(Path(sys.prefix) / "pyvenv.cfg", venv / "pyvenv.cfg")
    build(venv / "bin" / "sluice")
    return venv / "bin" / "sluice"
