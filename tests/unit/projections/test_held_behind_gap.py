"""Views whose shard lacks a fact for good say so (``projections.service.freshness``,
``sluice status``).

A ledger fact the views cannot read (dead-lettered: ``Undecodable: unknown fingerprint``, as a
worker writing a newer schema than the views know) leaves a gap in its shard's ``shard_seq``:
every later fact of that shard is held in memory waiting for it, nothing more is folded (no
job shown running, no start notification), and the views said ``caught up`` (lag 0: all read).
Seen in the fault round of 2026-12-07: 208 jobs PENDING in the views that the ledger had
started or ended."""

from __future__ import annotations

from pathlib import Path

from cli.status import status_lines
from projections.service import ProjectionService
from streams.settings import Settings


def fact(seq: int) -> dict[str, object]:
    return {"shard": "sluice", "shard_seq": seq, "event_sluid": f"e{seq}", "time_ms": seq}


def test_facts_held_behind_a_fact_that_never_came_are_not_caught_up(tmp_path: Path) -> None:
    service = ProjectionService(Settings(home=tmp_path))
    service.caught_up.set()
    service.views.apply("CycleCompleted", fact(1))
    for seq in (3, 4, 5):  # fact 2 was dead-lettered
        service.views.apply("CycleCompleted", fact(seq))
    fresh = service.freshness()
    assert fresh["held"] == {"sluice": {"waiting_for": 2, "held": 3}}
    assert fresh["caught_up"] is False

    lines, stalled = status_lines(fresh)
    assert stalled
    assert lines[0].startswith("views: NOT caught up")
    assert any(line.startswith("views: STUCK on shard sluice: its fact 2 never came and its 3 "
                               "later facts wait for it") for line in lines), lines


def test_while_records_are_still_to_read_a_gap_is_no_news(tmp_path: Path) -> None:
    service = ProjectionService(Settings(home=tmp_path))
    service.views.apply("CycleCompleted", fact(1))
    service.views.apply("CycleCompleted", fact(3))
    service.lag = 4
    lines, _stalled = status_lines(service.freshness())
    assert not any("STUCK" in line for line in lines)
    assert lines[0].startswith("views: 4 ledger records behind")
