"""A fact forged far in the future does not move the views' clock past their host's clock.

Red team (7 Dec 2026, confirmed live on 7 Dec): in PLAINTEXT mode any local user may write the
ledger, and one ``CycleCompleted`` of an invented shard at 2^62 ms set ``last_fact_ms`` for good
(kept in the store across restarts): every ended job left memory and ``squeue`` at once (its
``MinJobAge`` window judged by a clock 146 million years ahead), and every job that ended later
left it at its end; the forged shard's cycle looked fresh for ever to the CLI's contact check.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from projections.service import ProjectionService
from projections.views import CLOCK_AHEAD_MS
from streams.settings import Settings
from tests.unit.projections.ledger_builder import LedgerBuilder

FAR = 2**62


def _forged_cycle(shard: str = "zz-forged", time_ms: int = FAR) -> tuple[str, dict[str, object]]:
    return ("CycleCompleted", {"event_sluid": "s00000000000001", "shard": shard, "shard_seq": 1,
                               "time_ms": time_ms, "inbox_partition": 0, "inbox_from": 0,
                               "inbox_to": 0, "pending": 0, "running": 0, "started": 0})


def _ended_job(now_ms: int) -> tuple[str, LedgerBuilder]:
    ledger = LedgerBuilder(start_ms=now_ms - 1000)
    ledger.node("n1")
    job = ledger.queued()
    run = ledger.started(job, ["n1"])
    ledger.ended(job, run)
    return job, ledger


def test_a_forged_far_future_fact_leaves_the_views_clock_at_most_the_bound_ahead(
        tmp_path: Path) -> None:
    service = ProjectionService(Settings(home=tmp_path))
    now_ms = int(time.time() * 1000)
    job, ledger = _ended_job(now_ms)
    service.fold([(name, record, 0) for name, record in ledger.facts])
    assert job in service.views.jobs
    service.fold([(*_forged_cycle(), 0)])
    after_ms = int(time.time() * 1000)
    assert service.views.last_fact_ms <= after_ms + CLOCK_AHEAD_MS
    assert service.views.cycle_ms["zz-forged"] <= after_ms + CLOCK_AHEAD_MS
    assert job in service.views.jobs, "the ended job left memory (and squeue) at once"
    service.store.close()


def test_a_clock_a_forged_fact_moved_before_is_brought_back_at_the_next_start(
        tmp_path: Path) -> None:
    service = ProjectionService(Settings(home=tmp_path))
    job, ledger = _ended_job(int(time.time() * 1000))
    service.fold([(name, record, 0) for name, record in ledger.facts])
    meta = json.loads(service.store.get(b"meta") or b"{}")
    meta["last_fact_ms"], meta["cycle_ms"] = FAR, {**meta["cycle_ms"], "zz-forged": FAR}
    service.store.write({b"meta": json.dumps(meta).encode()})
    service.store.close()
    again = ProjectionService(Settings(home=tmp_path))
    bound = int(time.time() * 1000) + CLOCK_AHEAD_MS
    assert again.views.last_fact_ms <= bound
    assert max(again.views.cycle_ms.values()) <= bound
    assert job in again.views.jobs
    again.store.close()


def test_facts_within_the_bound_move_the_clock_as_before(tmp_path: Path) -> None:
    service = ProjectionService(Settings(home=tmp_path))
    soon = int(time.time() * 1000) + CLOCK_AHEAD_MS // 2
    service.fold([(*_forged_cycle("c1", soon), 0)])
    assert service.views.last_fact_ms == soon
    assert service.views.cycle_ms == {"c1": soon}
    service.store.close()
