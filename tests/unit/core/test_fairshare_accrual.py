"""Fair-share usage accrues while jobs run (Slurm's decay thread, every PriorityCalcPeriod).

A ``CycleCompleted`` at least ``PriorityCalcPeriod`` after the last accrual charges every
running job up to its time; ``JobEnded`` charges the rest. Each second of use is decayed from
the moment it was used, so a run's total does not depend on where the periods fell.
"""

from __future__ import annotations

import dataclasses
import math
import pickle
from dataclasses import dataclass
from typing import Any

import hypothesis
import pytest

from scheduler import (
    ClusterConfig,
    ConfigApplied,
    ConfigError,
    CycleCompleted,
    Fact,
    JobEnded,
    JobPending,
    JobRequeued,
    JobStarted,
    NodeFailed,
    PendingReason,
    PriorityConfig,
    QosConfig,
    SchedulerConfig,
    ShardState,
    accrual_due,
    evolve,
    initial_state,
    parse_config,
    restore_state,
    state_meta,
)
from scheduler.scheduling.fair_tree import fair_tree
from scheduler.scheduling.fairshare import decayed
from tests.unit.core.gwt import (
    CLUSTER,
    SHARD,
    T0,
    M,
    at,
    given,
    node_sluid,
    nodes,
    queued,
    restamp,
    schedule_pass,
    sluid,
    spec,
)
from tests.unit.core.test_properties import (
    SETTINGS,
    Driver,
    _snapshot,
    fingerprint,
    node_shapes,
    policies,
    steps,
)

MIN = 60_000
J1, J2, J3 = sluid(1), sluid(2), sluid(3)
CONFIG = """\
PriorityWeightFairshare: 1000
PriorityDecayHalfLife: 0-1
QOS:
  - Name: normal
Accounts:
  - Name: physics
    Users: [alice, bob]
"""
KEYS = ("user:physics:alice", "account:physics", "account:root")


def _config(half_life_s: int = 3600, usage_factor: float = 1.0) -> ClusterConfig:
    """CONFIG with a half-life (0 = no decay) and QOS ``normal``'s UsageFactor."""
    config = parse_config(CONFIG)
    qos = (QosConfig(name="normal", usage_factor=usage_factor),)
    priority = dataclasses.replace(config.priority, decay_half_life_s=half_life_s)
    return dataclasses.replace(config, qos=qos, priority=priority)


def cycle(time_ms: int) -> CycleCompleted:
    return CycleCompleted(
        **at(time_ms), inbox_partition=0, inbox_from=0, inbox_to=0, pending=0, running=0, started=0
    )


def start(
    job: str, job_id: int, node: str, time_ms: int, restart: int = 0, user: str = "alice"
) -> JobStarted:
    return JobStarted(
        **at(time_ms),
        job_sluid=job,
        job_id=job_id,
        run_sluid=sluid(900 + 10 * restart + job_id),
        restart_count=restart,
        nodes=(node,),
        node_sluids=(node_sluid(node),),
        partition="main",
        user=user,
        time_limit_s=0,
        submit_ms=T0,
    )


def end(job: str, job_id: int, time_ms: int, restart: int = 0) -> JobEnded:
    return JobEnded(
        **at(time_ms),
        job_sluid=job,
        job_id=job_id,
        run_sluid=sluid(900 + 10 * restart + job_id),
        state="COMPLETED",
    )


def usage_at(state: ShardState, key: str, time_ms: int) -> float:
    """The true (decayed) usage of ``key`` at ``time_ms``: stored usage is kept scaled."""
    meta = state.meta
    return decayed(
        meta.usage.get(key, 0.0), time_ms - meta.usage_ms, state.config.priority.decay_half_life_s
    )


def expected(
    cpus: int, factor: float, runs: list[tuple[int, int]], at_ms: int, half_life_s: int
) -> float:
    """cpus x UsageFactor x each second of the runs, decayed from when it was used to ``at_ms``."""
    total = 0.0
    for begin, finish in runs:
        if half_life_s == 0:
            total += (finish - begin) / 1000
        else:
            hl = half_life_s * 1000
            weight = 2 ** (-(at_ms - finish) / hl) - 2 ** (-(at_ms - begin) / hl)
            total += hl / 1000 / math.log(2) * weight
    return cpus * factor * total


def fold(*facts: Fact | list[Fact], config: ClusterConfig) -> tuple[ShardState, list[Fact]]:
    """``given``'s fold, keeping the stamped facts (to replay them)."""
    state = initial_state(SHARD, CLUSTER, config)
    stamped: list[Fact] = []
    for item in facts:
        for placeholder in item if isinstance(item, list) else [item]:
            fact = restamp(state, placeholder)
            stamped.append(fact)
            state = evolve(state, fact)
    return state, stamped


# -- priority moves before the job ends ------------------------------------------------------


def _contest(cycle_at: int) -> list[Fact | list[Fact]]:
    """alice runs a 4-CPU job on the only node from T0; alice and bob then queue a job each."""
    return [
        nodes("n", 1, cpus=4),
        queued(J1, spec(user="alice", ntasks=4, qos="normal")),
        start(J1, 1, "n1", T0),
        cycle(T0),  # the first accrual (nothing ran yet): the period starts here
        queued(J2, spec(user="alice", ntasks=4, qos="normal"), time_ms=T0 + 1000),
        queued(J3, spec(user="bob", ntasks=4, qos="normal"), time_ms=T0 + 2000),
        cycle(cycle_at),
    ]


def test_a_long_running_jobs_user_loses_fair_share_to_an_idle_user_before_the_job_ends() -> None:
    now = T0 + 6 * MIN  # one PriorityCalcPeriod (5 min) after the last accrual
    outcome = given(*_contest(now), config=_config()).when(schedule_pass(), now)
    outcome.then(
        JobPending(**M, job_sluid=J3, reason=PendingReason.RESOURCES, priority=1000),
        JobPending(**M, job_sluid=J2, reason=PendingReason.PRIORITY, priority=500),
    )
    state = outcome.state
    assert state.jobs[J1].is_running
    assert usage_at(state, KEYS[0], now) == pytest.approx(expected(4, 1.0, [(T0, now)], now, 3600))
    assert fair_tree(state, [("physics", "alice"), ("physics", "bob")]) == {
        ("physics", "alice"): 0.5,
        ("physics", "bob"): 1.0,
    }


def test_within_the_period_nothing_accrues_and_submission_order_decides() -> None:
    now = T0 + 4 * MIN
    outcome = given(*_contest(now), config=_config()).when(schedule_pass(), now)
    outcome.then(
        JobPending(**M, job_sluid=J2, reason=PendingReason.RESOURCES, priority=1000),
        JobPending(**M, job_sluid=J3, reason=PendingReason.PRIORITY, priority=1000),
    )
    assert outcome.state.meta.usage == {}
    assert outcome.state.meta.accrued_ms == T0


# -- totals ----------------------------------------------------------------------------------

CYCLES = {
    "no period crossed": [T0 + 4 * MIN],
    "one period": [T0 + 5 * MIN, T0 + 7 * MIN],
    "many periods, uneven": [T0 + 5 * MIN, T0 + 11 * MIN, T0 + 16 * MIN + 1, T0 + 40 * MIN],
    "a cycle at the end": [T0 + 5 * MIN, T0 + 47 * MIN],
}


@pytest.mark.parametrize("half_life_s", [3600, 0], ids=["decay 1 h", "no decay"])
@pytest.mark.parametrize("cycles", list(CYCLES.values()), ids=list(CYCLES))
def test_a_run_is_charged_cpus_times_run_time_times_usage_factor_however_periods_fall(
    cycles: list[int], half_life_s: int
) -> None:
    finish = T0 + 47 * MIN
    state, _ = fold(
        nodes("n", 1, cpus=8),
        queued(J1, spec(user="alice", ntasks=4, qos="normal")),
        start(J1, 1, "n1", T0),
        *[cycle(t) for t in cycles if t < finish],
        end(J1, 1, finish),
        *[cycle(t) for t in cycles if t >= finish],
        config=_config(half_life_s, usage_factor=2.0),
    )
    want = expected(4, 2.0, [(T0, finish)], finish, half_life_s)
    for key in KEYS:
        assert usage_at(state, key, finish) == pytest.approx(want, rel=1e-12)
    if half_life_s == 0:
        assert state.meta.usage[KEYS[0]] == 4 * 2.0 * 47 * 60  # exact: whole seconds, no decay


def test_accrued_usage_decays_like_usage_charged_at_the_end() -> None:
    """An hour after the run, usage accrued mid-run has decayed as much as end-charged usage."""
    finish, later = T0 + 30 * MIN, T0 + 90 * MIN
    facts = [
        nodes("n", 1, cpus=8),
        queued(J1, spec(user="alice", ntasks=4, qos="normal")),
        start(J1, 1, "n1", T0),
    ]
    accrued, _ = fold(
        *facts, cycle(T0 + 10 * MIN), cycle(T0 + 20 * MIN), end(J1, 1, finish), config=_config()
    )
    at_end, _ = fold(*facts, end(J1, 1, finish), config=_config())
    want = expected(4, 1.0, [(T0, finish)], later, 3600)
    assert usage_at(accrued, KEYS[0], later) == pytest.approx(want, rel=1e-12)
    assert usage_at(at_end, KEYS[0], later) == pytest.approx(want, rel=1e-12)


def test_without_a_fair_share_weight_runs_are_charged_whole_at_their_end() -> None:
    """Nothing reads usage mid-run: no accrual work, the same total."""
    config = dataclasses.replace(
        _config(), priority=dataclasses.replace(_config().priority, weight_fairshare=0)
    )
    finish = T0 + 47 * MIN
    facts = [
        nodes("n", 1, cpus=8),
        queued(J1, spec(user="alice", ntasks=4, qos="normal")),
        start(J1, 1, "n1", T0),
        cycle(T0 + 10 * MIN),
    ]
    state, _ = fold(*facts, config=config)
    assert state.meta.usage == {}
    assert state.meta.accrued_ms == 0
    assert not accrual_due(state, T0 + 20 * MIN)
    state = evolve(state, restamp(state, end(J1, 1, finish)))
    want = expected(4, 1.0, [(T0, finish)], finish, 3600)
    assert usage_at(state, KEYS[0], finish) == pytest.approx(want, rel=1e-12)


# -- replay, persistence, requeue --------------------------------------------------------------


def _long_history() -> list[Fact | list[Fact]]:
    return [
        nodes("n", 2, cpus=8),
        queued(J1, spec(user="alice", ntasks=4, qos="normal")),
        start(J1, 1, "n1", T0),
        queued(J2, spec(user="bob", ntasks=2, qos="normal"), time_ms=T0 + MIN),
        cycle(T0 + 3 * MIN),
        start(J2, 2, "n2", T0 + 4 * MIN, user="bob"),
        cycle(T0 + 6 * MIN),
        cycle(T0 + 9 * MIN),
        cycle(T0 + 13 * MIN),
        end(J2, 2, T0 + 14 * MIN),
        cycle(T0 + 19 * MIN),
        end(J1, 1, T0 + 22 * MIN),
        cycle(T0 + 30 * MIN),
    ]


def test_replaying_the_facts_gives_the_same_usage() -> None:
    live, facts = fold(*_long_history(), config=_config())
    replayed = initial_state(SHARD, CLUSTER, _config())
    for fact in facts:
        replayed = evolve(replayed, fact)
    assert replayed.meta.usage == live.meta.usage  # exactly, not approximately
    assert (replayed.meta.usage_ms, replayed.meta.accrued_ms) == (
        live.meta.usage_ms,
        live.meta.accrued_ms,
    )
    assert live.meta.accrued_ms == T0 + 30 * MIN  # the last cycle moved it, nothing ran
    bob = expected(2, 1.0, [(T0 + 4 * MIN, T0 + 14 * MIN)], T0 + 30 * MIN, 3600)
    assert usage_at(live, "user:physics:bob", T0 + 30 * MIN) == pytest.approx(bob, rel=1e-12)


@pytest.mark.parametrize("cut", range(4, 14))
def test_a_state_persisted_mid_run_and_restored_accrues_the_same(cut: int) -> None:
    live, facts = fold(*_long_history(), config=_config())
    state = initial_state(SHARD, CLUSTER, _config())
    for fact in facts[: len(facts) - cut]:
        state = evolve(state, fact)
    meta = pickle.loads(pickle.dumps(state_meta(state)))
    state = restore_state(meta, pickle.loads(pickle.dumps(dict(state.jobs))), dict(state.nodes))
    for fact in facts[len(facts) - cut :]:
        state = evolve(state, fact)
    assert state_meta(state) == state_meta(live)


def test_a_meta_stored_before_accrual_existed_restores_with_nothing_accrued() -> None:
    state, _ = fold(*_long_history()[:4], config=_config())
    old = state_meta(state)
    del old.accrued_ms  # what a meta pickled by the previous version lacks
    restored = restore_state(pickle.loads(pickle.dumps(old)), dict(state.jobs), dict(state.nodes))
    assert restored.meta.accrued_ms == 0
    restored = evolve(restored, restamp(restored, cycle(T0 + 6 * MIN)))
    want = expected(4, 1.0, [(T0, T0 + 6 * MIN)], T0 + 6 * MIN, 3600)
    assert usage_at(restored, KEYS[0], T0 + 6 * MIN) == pytest.approx(want, rel=1e-12)


def test_a_requeued_jobs_first_run_stays_charged() -> None:
    scenario = given(
        nodes("n", 2, cpus=8),
        queued(J1, spec(user="alice", ntasks=4, qos="normal")),
        start(J1, 1, "n1", T0),
        cycle(T0 + 10 * MIN),  # accrues [T0, T0+10 min]
        config=_config(),
    )
    failed_at = T0 + 12 * MIN
    outcome = scenario.when(
        NodeFailed(
            node_sluid=node_sluid("n1"), name="n1", reason="Not responding", time_ms=failed_at
        ),
        failed_at,
    )
    assert outcome.matching(JobRequeued)  # its only node is DOWN: no epilog to wait for
    state = outcome.evolved()
    first = expected(4, 1.0, [(T0, failed_at)], failed_at, 3600)
    assert state.jobs[J1].is_pending
    assert usage_at(state, KEYS[0], failed_at) == pytest.approx(first, rel=1e-12)

    second = (T0 + 15 * MIN, T0 + 31 * MIN)
    for fact in (
        cycle(T0 + 14 * MIN),  # nothing runs: no charge, the requeue's charge stays
        start(J1, 1, "n2", second[0], restart=1),
        cycle(T0 + 20 * MIN),
        end(J1, 1, second[1], restart=1),
    ):
        state = evolve(state, restamp(state, fact))
    want = expected(4, 1.0, [(T0, failed_at), second], second[1], 3600)
    assert usage_at(state, KEYS[0], second[1]) == pytest.approx(want, rel=1e-12)


# -- the shell's trigger, configuration ----------------------------------------------------------


def test_accrual_is_due_once_a_period_passed_with_jobs_running() -> None:
    state, _ = fold(
        nodes("n", 1, cpus=8),
        queued(J1, spec(user="alice", ntasks=4, qos="normal")),
        cycle(T0 + 10 * MIN),  # nothing runs: the watermark still moves
        config=_config(),
    )
    assert not accrual_due(state, T0 + 20 * MIN)  # nothing running
    state = evolve(state, restamp(state, start(J1, 1, "n1", T0 + 11 * MIN)))
    assert not accrual_due(state, T0 + 14 * MIN)
    assert accrual_due(state, T0 + 15 * MIN)


def test_a_half_life_change_keeps_the_usage_accrued_so_far() -> None:
    state, _ = fold(*_long_history(), config=_config())
    now = T0 + 40 * MIN
    before = usage_at(state, KEYS[0], now)
    text = CONFIG.replace("PriorityDecayHalfLife: 0-1", "PriorityDecayHalfLife: 0")
    applied = ConfigApplied(**at(now), config_sluid=sluid(50), kind="cluster", digest="", text=text)
    state = evolve(state, restamp(state, applied))
    assert state.config.priority.decay_half_life_s == 0
    assert usage_at(state, KEYS[0], now + 60 * MIN) == pytest.approx(before, rel=1e-12)


@pytest.mark.parametrize(
    ("text", "seconds"), [("5", 300), ("1", 60), ("1:30", 120), ("2:00:00", 7200), ("1-0", 86400)]
)
def test_priority_calc_period_is_minutes_rounded_up(text: str, seconds: int) -> None:
    assert parse_config(f"PriorityCalcPeriod: {text}\n").priority.calc_period_s == seconds


def test_priority_calc_period_defaults_to_five_minutes() -> None:
    assert parse_config("ClusterName: x\n").priority.calc_period_s == 300


@pytest.mark.parametrize("text", ["0", "UNLIMITED", "soon"])
def test_a_bad_priority_calc_period_names_its_line(text: str) -> None:
    with pytest.raises(ConfigError) as error:
        parse_config(f"ClusterName: x\nPriorityCalcPeriod: {text}\n", "slurm.yaml")
    assert error.value.source == "slurm.yaml"
    assert error.value.line == 2
    assert "PriorityCalcPeriod" in error.value.reason


# -- random histories ------------------------------------------------------------------------


@dataclass
class FairShareDriver(Driver):
    """test_properties' driver on a cluster that weighs fair share and accrues every minute."""

    def __post_init__(self) -> None:
        config = ClusterConfig(
            scheduler=SchedulerConfig(policy=self.policy, bf_resolution_s=1, min_job_age_s=10**6),
            priority=PriorityConfig(weight_fairshare=1000, decay_half_life_s=600, calc_period_s=60),
        )
        self.state = initial_state("prop", 5, config)
        for i, _ in enumerate(self.shapes):
            self.request(self._register(i))


def _expected_usage(driver: Driver, at_ms: int) -> dict[str, float]:
    """Each user's usage recomputed from the runs in the log (charged up to the watermark)."""
    state = driver.state
    ends = {f.run_sluid: f.time_ms for f in driver.log if isinstance(f, JobEnded)}
    usage: dict[str, float] = {}
    for fact in driver.log:
        if not isinstance(fact, JobStarted):
            continue
        job = state.jobs[fact.job_sluid]
        cpus = sum(fact.alloc_cpus) if fact.alloc_cpus else sum(  # each node's share
            state.nodes[state.node_sluid_by_name(n)].cpus
            if job.demand.exclusive
            else job.demand.cpus
            for n in fact.nodes
        )
        until = ends.get(fact.run_sluid, max(fact.time_ms, state.meta.accrued_ms))
        key = f"user:{job.account}:{job.spec.user}"
        usage[key] = usage.get(key, 0.0) + expected(cpus, 1.0, [(fact.time_ms, until)], at_ms, 600)
    return usage


@SETTINGS
@hypothesis.given(node_shapes, policies, steps)
def test_accrued_usage_replays_restores_and_sums_to_the_runs(
    shapes: list[tuple[int, int]], policy: str, history: list[tuple[Any, ...]]
) -> None:
    driver = FairShareDriver(shapes, policy).run(history)
    replayed = initial_state("prop", 5, driver.state.config)
    for fact in driver.log:
        replayed = evolve(replayed, fact)
    assert fingerprint(replayed) == fingerprint(driver.state)
    assert fingerprint(_snapshot(driver.state)) == fingerprint(driver.state)
    want = _expected_usage(driver, driver.now)
    got = {k: usage_at(driver.state, k, driver.now) for k in driver.state.meta.usage}
    got = {k: v for k, v in got.items() if k.startswith("user:") and v}
    assert got == pytest.approx({k: v for k, v in want.items() if v}, rel=1e-9, abs=1e-9)
