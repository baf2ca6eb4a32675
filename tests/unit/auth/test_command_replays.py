"""The node's replay cache (``agents.auth.command_replays``): on disk before a command runs,
one write a batch, read back by a restarted daemon in either form, compacted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agents.auth import command_replays
from agents.auth.command_replays import ReplayCache

NOW = 1_000_000


def test_an_entry_outside_a_batch_is_on_disk_at_once(tmp_path: Path) -> None:
    cache = ReplayCache(tmp_path / "seen")
    cache.add("d1", NOW + 5000, NOW)
    assert "d1" in ReplayCache(tmp_path / "seen")


def test_a_batch_writes_its_entries_once_at_its_end(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    syncs: list[int] = []
    real = command_replays.os.fsync
    monkeypatch.setattr(command_replays.os, "fsync", lambda fd: (syncs.append(fd), real(fd)))
    cache = ReplayCache(tmp_path / "seen")
    with cache.batch():
        cache.add("d1", NOW + 5000, NOW)
        cache.add("d2", NOW + 5000, NOW)
        assert "d2" in cache  # a duplicate within the batch is refused too
        assert "d1" not in ReplayCache(tmp_path / "seen")  # not yet on disk: nothing ran
    assert len(syncs) == 1
    restarted = ReplayCache(tmp_path / "seen")
    assert "d1" in restarted
    assert "d2" in restarted


def test_an_earlier_daemons_json_cache_is_read_and_appended_to(tmp_path: Path) -> None:
    (tmp_path / "seen").write_text(json.dumps({"old": NOW + 5000}))
    cache = ReplayCache(tmp_path / "seen")
    assert "old" in cache
    cache.add("new", NOW + 5000, NOW)
    restarted = ReplayCache(tmp_path / "seen")
    assert "old" in restarted
    assert "new" in restarted


def test_a_torn_last_line_is_skipped_and_the_next_entry_still_reads(tmp_path: Path) -> None:
    (tmp_path / "seen").write_text("d1 1005000\nd2 10")
    cache = ReplayCache(tmp_path / "seen")
    cache.add("d3", NOW + 5000, NOW)
    restarted = ReplayCache(tmp_path / "seen")
    assert "d1" in restarted
    assert "d3" in restarted


def test_expired_entries_are_dropped_and_the_file_is_rewritten(tmp_path: Path) -> None:
    cache = ReplayCache(tmp_path / "seen")
    for i in range(3000):
        cache.add(f"d{i}", NOW + 10 * i, NOW + 10 * i - 5)  # each expires as the next comes
    lines = (tmp_path / "seen").read_text().splitlines()
    assert len(lines) < 3000
    assert "d2999" in ReplayCache(tmp_path / "seen")


def test_garbage_with_non_ascii_digits_is_skipped_not_a_crash(tmp_path: Path) -> None:
    """``str.isdigit`` is true of '²' and '٣', which ``int`` refuses: a ``commands.seen``
    overwritten with garbage must still let the daemon start (its good lines kept)."""
    path = tmp_path / "commands.seen"
    path.write_bytes("abc \u00b2\u00b3\nd1 99\ndef \u0663\u0664\n".encode() + b"\xff\xfe\n")
    cache = ReplayCache(path)
    assert "d1" in cache and "abc" not in cache and "def" not in cache
