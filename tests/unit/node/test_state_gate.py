"""A node daemon takes no commands while its state directory is full or read-only
(``agents.node.state_gate``): statvfs on a real small tmpfs, and the gate's back-off."""

from __future__ import annotations

import errno
from pathlib import Path

from agents.node.state_gate import StateGate, space_problem
from streams import state_dir
from streams.state_dir import FULL, READ_ONLY
from tests.unit.state_mounts import fill, remount, small_fs

__all__ = ["small_fs"]


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_statvfs_says_a_tmpfs_is_full_or_read_only_without_writing(small_fs: Path) -> None:
    assert space_problem(small_fs) is None
    filler = fill(small_fs)
    assert space_problem(small_fs) == FULL
    filler.unlink()
    assert space_problem(small_fs) is None
    remount(small_fs, "ro")
    try:
        assert space_problem(small_fs) == READ_ONLY
    finally:
        remount(small_fs, "rw")


def test_the_gate_stays_closed_for_its_back_off_and_opens_when_space_returns(
    tmp_path: Path,
) -> None:
    answers = [FULL, FULL, None]
    looks: list[float] = []
    clock = Clock()

    def look(_directory: Path) -> str | None:
        looks.append(clock.now)
        return answers.pop(0)

    gate = StateGate(tmp_path, clock, look)
    assert gate.problem == ""
    assert gate.refuses()  # looked at 0: full, closed for 1 s
    assert gate.problem == FULL  # what the heartbeat says (``paused``)
    clock.now = 0.5
    assert gate.refuses() and looks == [0.0]  # no look within the back-off
    clock.now = 1.0
    assert gate.refuses() and gate.until == 3.0  # full again: 2 s more
    clock.now = 3.0
    assert not gate.refuses() and gate.until is None and gate.problem == ""
    assert looks == [0.0, 1.0, 3.0]
    assert state_dir.alarm.troubles() == []  # cleared (tmp_path takes the probe)


def test_a_write_refused_anyway_closes_the_gate_and_anything_else_does_not(
    tmp_path: Path,
) -> None:
    gate = StateGate(tmp_path, Clock(), lambda _d: None)
    assert not gate.failed(OSError(errno.EIO, "Input/output error"))
    assert gate.until is None
    assert gate.failed(OSError(errno.ENOSPC, "No space left on device"))
    assert gate.refuses()
    state_dir.alarm.cleared(tmp_path)
