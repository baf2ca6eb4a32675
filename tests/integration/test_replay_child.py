"""``sluice replay``'s child reader against a real broker: a ledger of two shards over three
partitions, read and decoded in a forked child while the parent folds, gives the facts and the
rows of ``read_facts`` + ``views_at`` (whole, and at a time in the middle).

The replay runs in a fresh interpreter: the child is forked only from a process that runs one
thread, and this one runs librdkafka's."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from projections.replay import read_facts, views_at
from streams.settings import Settings
from tests.unit.projections.kafka_ledger import LedgerWriter, settings_for
from tests.unit.projections.ledger_builder import LedgerBuilder
from tests.unit.projections.test_replay_fold import every_fact_type

pytestmark = [pytest.mark.kafka]

ROOT = Path(__file__).resolve().parents[2]
_REPLAY = """
import json, sys
from pathlib import Path
from projections.replay_stream import can_fork, replay_views
from streams.settings import Settings
bootstrap, prefix, home, at = sys.argv[1:5]
settings = Settings(bootstrap=bootstrap, prefix=prefix, cluster=prefix, partitions=3,
                    home=Path(home))
facts, views = replay_views(settings, int(at) if at else None, child=True)
print(json.dumps({"forked": can_fork(), "facts": len(facts),
                  "rows": [views.jobs, views.nodes, views.shard_seq]}))
"""


def busy_shard(shard: str, jobs: int) -> LedgerBuilder:
    """Nodes, then jobs queued, pending, started and ended, a cycle every ten jobs."""
    b = LedgerBuilder(shard=shard, start_ms=1_767_225_600_000)
    for n in range(8):
        b.node(f"{shard}-n{n}", cpus=8)
    for j in range(jobs):
        job = b.queued(name=f"j{j}", nodes_min=1 + j % 2, cpus_per_task=4)
        b.pending(job, "Resources")
        run = b.started(job, [f"{shard}-n{(j + k) % 8}" for k in range(1 + j % 2)])
        b.advance(3)
        b.ended(job, run, "COMPLETED" if j % 5 else "FAILED", exit_code=0 if j % 5 else 2)
        if j % 10 == 9:
            b.cycle(0, 0)
    return b


def replayed(settings: Settings, at_ms: int | None) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", _REPLAY, settings.bootstrap, settings.prefix,
         str(settings.home), "" if at_ms is None else str(at_ms)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def test_the_child_reader_gives_the_rows_of_read_then_fold(kafka_bootstrap: str,
                                                           tmp_path: Path) -> None:
    settings = settings_for(kafka_bootstrap, tmp_path, f"rc{int(time.time() * 1000)}")
    a, b = busy_shard("a", 700).facts, every_fact_type("b", 1_767_225_600_500).facts
    writer = LedgerWriter(settings)
    for start in range(0, len(a), 50):  # the shards' transactions interleaved
        writer.write(a[start:start + 50])
        writer.write(b[start // 50:start // 50 + 1])
    writer.write(b[len(a) // 50 + 1:])
    writer.producer.flush(30)
    facts = read_facts(settings)
    assert len(facts) == len(a) + len(b) and len({f.partition for f in facts}) == 3
    middle = sorted(f.time_ms for f in facts)[len(facts) // 2]

    for at_ms in (None, middle):
        expected = views_at(facts, at_ms)
        got = replayed(settings, at_ms)

        assert got["forked"] and got["facts"] == len(facts)
        assert got["rows"] == json.loads(json.dumps(
            [expected.jobs, expected.nodes, expected.shard_seq]))
        assert got["rows"][2] == ({"a": len(a), "b": len(b)} if at_ms is None
                                  else expected.shard_seq)
