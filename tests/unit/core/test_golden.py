"""Golden replays (tests/logs/*.jsonl): same script → same facts; facts → same state."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from scheduler import evolve, from_record, initial_state, restore_state, state_meta
from tests.logs.regenerate import CLUSTER, SHARD, read, requests_of, run_script, summary

LOGS = sorted((Path(__file__).parents[2] / "logs").glob("*.jsonl"))


@pytest.mark.parametrize("path", LOGS, ids=[p.stem for p in LOGS])
def test_re_deciding_the_script_gives_the_recorded_facts(path: Path) -> None:
    golden = read(path)
    lines, _ = run_script(requests_of(golden))
    for i, (got, want) in enumerate(zip(lines, golden, strict=True)):
        assert got == want, f"{path.name}:{i + 1} differs"


@pytest.mark.parametrize("path", LOGS, ids=[p.stem for p in LOGS])
def test_folding_the_facts_gives_the_recorded_state(path: Path) -> None:
    golden = read(path)
    facts = [
        from_record(line["fact"]["name"], line["fact"]["body"]) for line in golden if "fact" in line
    ]
    state = initial_state(SHARD, CLUSTER)
    for fact in facts:
        state = evolve(state, fact)
    assert summary(state) == golden[-1]["state"]


@pytest.mark.parametrize("path", LOGS, ids=[p.stem for p in LOGS])
def test_a_snapshot_plus_the_tail_equals_the_full_replay(path: Path) -> None:
    facts = [
        from_record(line["fact"]["name"], line["fact"]["body"])
        for line in read(path)
        if "fact" in line
    ]
    middle = len(facts) // 2
    state = initial_state(SHARD, CLUSTER)
    for fact in facts[:middle]:
        state = evolve(state, fact)
    snapshot = pickle.dumps((state_meta(state), dict(state.jobs), dict(state.nodes)))
    meta, jobs, nodes = pickle.loads(snapshot)
    resumed = restore_state(meta, jobs, nodes)
    for fact in facts[middle:]:
        resumed = evolve(resumed, fact)
        state = evolve(state, fact)
    assert summary(resumed) == summary(state)
    assert state_meta(resumed) == state_meta(state)
