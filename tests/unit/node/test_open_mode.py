"""The batch step's output files are truncated at the start, as slurmstepd opens them by
default (``JobFileAppend=0``), and appended to with ``sbatch --open-mode=append`` (the job's
``SLURM_OPEN_MODE=a``, which slurmctld sets too), both ways a command starts (the C exec helper
and the Python child). Before, they were always appended to: a job run again with the same
``-o`` name kept the last run's lines above its own (found 2026-12-07)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.unit.node.test_exec_helper import ENV, _start, helper_built, shared, way

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="switching users needs root")
__all__ = ["helper_built", "shared", "way"]  # fixtures used here


def _old_files(work: Path) -> None:
    for name in ("out", "err"):
        (work / name).write_text("last run\n")
        (work / name).chmod(0o666)


def test_the_output_files_are_truncated_by_default(way: str, shared: Path) -> None:
    _old_files(shared)
    argv = ["sh", "-c", "echo new; echo new-err >&2"]
    assert _start(shared, argv, output=("out", "err")).wait(30) == 0
    assert ((shared / "out").read_text(), (shared / "err").read_text()) == ("new\n", "new-err\n")
    _old_files(shared)
    truncate = {**ENV, "SLURM_OPEN_MODE": "t"}
    assert _start(shared, argv, env=truncate, output=("out", "")).wait(30) == 0
    assert sorted((shared / "out").read_text().split()) == ["new", "new-err"]


def test_open_mode_append_keeps_what_the_files_held(way: str, shared: Path) -> None:
    _old_files(shared)
    append = {**ENV, "SLURM_OPEN_MODE": "a"}
    argv = ["sh", "-c", "echo new; echo new-err >&2"]
    assert _start(shared, argv, env=append, output=("out", "err")).wait(30) == 0
    assert (shared / "out").read_text() == "last run\nnew\n"
    assert (shared / "err").read_text() == "last run\nnew-err\n"
