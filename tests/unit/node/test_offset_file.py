"""The daemon's ``commands.offset`` rewritten in place (agents.node.offset_file)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agents.node.offset_file import WIDTH, OffsetFile


def test_each_position_replaces_the_last_in_place_at_one_length(tmp_path: Path) -> None:
    path = tmp_path / "commands.offset"
    offsets = OffsetFile(path)
    offsets.write(7)
    inode = path.stat().st_ino
    for offset in (8, 12_345, 9_223_372_036_854_775_807):  # int64's largest still fits
        offsets.write(offset)
        assert int(path.read_text()) == offset
        assert path.stat().st_size == WIDTH + 1
    assert path.stat().st_ino == inode  # the same file, never replaced or truncated to nothing
    offsets.close()


def test_an_older_daemons_longer_file_is_cut_to_the_new_position(tmp_path: Path) -> None:
    """A file an earlier daemon left (any length) reads as the position written now."""
    path = tmp_path / "commands.offset"
    path.write_text("1" * 40 + "\n")
    offsets = OffsetFile(path)
    offsets.write(3)
    assert path.read_text() == f"{3:>{WIDTH}}\n"
    offsets.close()


def test_a_failed_write_raises_and_the_next_opens_the_file_again(tmp_path: Path) -> None:
    path = tmp_path / "commands.offset"
    offsets = OffsetFile(path)
    offsets.write(1)
    assert offsets._fd is not None
    os.close(offsets._fd)  # a descriptor gone bad under it
    with pytest.raises(OSError):
        offsets.write(2)
    offsets.write(3)
    assert int(path.read_text()) == 3
    offsets.close()


def test_an_unwritable_directory_raises_oserror(tmp_path: Path) -> None:
    """What the daemon's state gate reads (a full or read-only state directory)."""
    offsets = OffsetFile(tmp_path / "missing" / "commands.offset")
    with pytest.raises(OSError):
        offsets.write(1)
