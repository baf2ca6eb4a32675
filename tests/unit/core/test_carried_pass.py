"""A pass carried on to the next one (scheduler.scheduling.carry) decides as a whole pass.

``schedule`` keeps its pass in ``state.carried`` when the next may walk only the jobs that
joined the queue; ``schedule_with_plan`` (the full plan) never uses it, so comparing the two on
the same state checks the carried pass against a whole one.
"""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from scheduler import (
    ClusterConfig,
    JobSpec,
    JobStarted,
    RegisterNode,
    ReportJobExit,
    SchedulerConfig,
    SubmitJob,
    UpdateJob,
    decide,
    evolve,
    initial_state,
    schedule,
)
from scheduler.records import Fact, JobPending
from scheduler.schedule import schedule_with_plan
from scheduler.scheduling import carry
from scheduler.shard.state import ShardState
from tests.unit.core.gwt import T0, node_sluid, sluid
from tests.unit.core.test_properties import Driver, history_settings, node_shapes, steps

S = 1000


class CarryingDriver(Driver):
    """Passes through ``schedule`` (which carries), each checked against a whole pass; a
    ``pass`` step runs a pass without moving the clock much, as a batch of submissions does."""

    carried = 0

    def run_pass(self) -> None:
        whole = schedule_with_plan(self.state, self.now).facts  # never carried
        kept = self.state.carried
        facts = schedule(self.state, self.now)
        if kept is not None and self.state.carried is kept:
            self.carried += 1
        assert facts == whole
        self.apply(facts)

    def step(self, step: tuple[Any, ...]) -> None:
        super().step(step)
        if step[0] == "submit":
            self.now += 1
            self.run_pass()


def _apply(state: ShardState, facts: list[Fact]) -> ShardState:
    for fact in facts:
        state = evolve(state, fact)
    return state


def _cluster(policy: str = "easy", nodes: int = 4) -> ShardState:
    config = ClusterConfig(scheduler=SchedulerConfig(policy=policy, bf_resolution_s=1))
    state = initial_state("carry", 5, config)
    for i in range(nodes):
        request = RegisterNode(node_sluid=node_sluid(f"n{i}"), name=f"n{i}", cpus=1, mem_mb=1000)
        state = _apply(state, decide(state, request, T0))
    return state


def _submit(state: ShardState, n: int, nodes: int, limit_s: int, at: int) -> ShardState:
    spec = JobSpec(
        user="u", nodes_min=nodes, ntasks=nodes, time_limit_s=limit_s, command=("x",)
    )
    return _apply(state, decide(state, SubmitJob(job_sluid=sluid(n, at), spec=spec), at))


def _pass(state: ShardState, at: int) -> list[Fact]:
    whole = schedule_with_plan(state, at).facts
    facts = schedule(state, at)
    assert facts == whole
    _apply(state, facts)
    return facts


def _blocked_queue() -> ShardState:
    """Three of four nodes busy for an hour, a 4-node job blocked behind them."""
    state = _cluster()
    state = _submit(state, 1, 3, 3600, T0)
    assert any(isinstance(f, JobStarted) for f in _pass(state, T0))
    state = _submit(state, 2, 4, 3600, T0 + S)
    _pass(state, T0 + S)
    assert state.carried is not None
    return state


def test_a_pass_after_new_submissions_only_walks_them_and_decides_as_a_whole_pass() -> None:
    state = _blocked_queue()
    kept = state.carried
    state = _submit(state, 3, 2, 60, T0 + 2 * S)  # cannot fit: one node has room
    facts = _pass(state, T0 + 2 * S)
    assert state.carried is kept
    assert [(type(f), f.reason) for f in facts if isinstance(f, JobPending)] == [
        (JobPending, "Priority")
    ]
    state = _submit(state, 4, 1, 60, T0 + 3 * S)  # fits before the 4-node job's reservation
    facts = _pass(state, T0 + 3 * S)
    assert [type(f) for f in facts] == [JobStarted]
    assert state.carried is kept  # its start folded, the next pass may carry it on
    state = _submit(state, 5, 1, 60, T0 + 4 * S)  # no node left with room
    facts = _pass(state, T0 + 4 * S)
    assert state.carried is kept
    assert [(type(f), f.reason) for f in facts if isinstance(f, JobPending)] == [
        (JobPending, "Priority")
    ]


def test_a_pass_whose_start_was_not_folded_is_not_carried_on() -> None:
    state = _blocked_queue()
    state = _submit(state, 3, 1, 60, T0 + 2 * S)
    assert [type(f) for f in schedule(state, T0 + 2 * S)] == [JobStarted]  # not folded
    kept = state.carried
    assert kept is not None
    state = _submit(state, 4, 1, 60, T0 + 3 * S)
    assert any(isinstance(f, JobStarted) for f in _pass(state, T0 + 3 * S))  # job 3 again
    assert state.carried is not kept


def test_a_run_ending_drops_the_carried_pass() -> None:
    state = _blocked_queue()
    job = state.jobs[sluid(1, T0)]
    exit_ = ReportJobExit(
        job_sluid=job.job_sluid,
        run_sluid=job.run_sluid,
        node_sluid=job.node_sluids[0],
        node_name=job.nodes[0],
        exit_code=0,
    )
    state = _apply(state, decide(state, exit_, T0 + 2 * S))
    assert state.carried is None


def test_an_update_of_a_queued_job_drops_the_carried_pass() -> None:
    state = _blocked_queue()
    update = UpdateJob(job_sluid=sluid(2, T0 + S), changes={"time_limit_s": "60"})
    facts = decide(state, update, T0 + 2 * S)
    assert facts
    state = _apply(state, facts)
    assert state.carried is None


def test_a_run_near_its_limit_makes_the_next_pass_whole() -> None:
    state = _blocked_queue()
    kept = state.carried
    later = T0 + 3600 * S - S // 2  # the running job is due within one bf_resolution
    state = _submit(state, 3, 2, 60, later)
    _pass(state, later)
    assert state.carried is not kept


def test_a_pass_whose_reason_facts_were_not_folded_is_not_carried_on() -> None:
    state = _blocked_queue()
    state = _submit(state, 3, 2, 60, T0 + 2 * S)
    schedule(state, T0 + 2 * S)  # its JobPending is dropped, as when a pass fails to encode
    kept = state.carried
    assert kept is not None
    state = _submit(state, 4, 2, 60, T0 + 3 * S)
    _pass(state, T0 + 3 * S)
    assert state.carried is not kept


def test_the_module_states_why_carrying_is_safe() -> None:
    assert "Why the old jobs' decisions hold" in (carry.__doc__ or "")


@history_settings(200)
@given(node_shapes, st.sampled_from(("fcfs", "easy", "conservative")), steps)
def test_a_carried_pass_gives_the_facts_of_a_whole_pass(
    shapes: list[tuple[int, int]], policy: str, history: list[tuple[Any, ...]]
) -> None:
    CarryingDriver(shapes, policy).run(history)


def test_random_histories_do_carry_passes() -> None:
    carried = 0
    for seed in range(40):
        rng = random.Random(seed)
        history: list[tuple[Any, ...]] = []
        for _ in range(40):
            if rng.random() < 0.6:
                history.append(
                    ("submit", rng.choice((1, 2, 3)), 1, 0, rng.randint(600, 3000), False, 0, "")
                )
            else:
                history.append(("advance", rng.randint(1, 30)))
        driver = CarryingDriver([(1, 0)] * 4, "easy").run(history)
        carried += driver.carried
    assert carried > 0


def test_a_pass_over_an_empty_queue_decides_nothing_and_keeps_no_pass() -> None:
    state = _cluster()
    state = _submit(state, 1, 1, 60, T0)
    assert [type(f) for f in _pass(state, T0)] == [JobStarted]
    assert not state.pending
    state.carried = object()  # whatever was kept before, an empty queue leaves nothing to carry
    assert schedule(state, T0 + S) == []
    assert state.carried is None
    kept = state.carried = object()
    assert schedule_with_plan(state, T0 + S).facts == []
    assert state.carried is kept  # the full plan leaves the cache alone, as a whole pass does
