"""``PlanStarts`` (squeue --start): each shard's planned starts are the scheduling pass's own,
change nothing, are the same when decided again, and a second request within 10 s reuses
the plan instead of running another pass."""

from __future__ import annotations

import pickle

import pytest

from scheduler import JobStarted
from scheduler.access.identity import Attributed, Identity
from scheduler.decide import decide
from scheduler.evolve import evolve
from scheduler.jobs import test_only
from scheduler.jobs.starts import STARTS_REUSE_MS
from scheduler.records import PlanStarts, RequestDenied, StartsPlanned
from scheduler.schedule import schedule_with_plan
from scheduler.scheduling.will_run import will_run
from scheduler.shard.state import ShardState
from scheduler.topology.hostlist import compress
from tests.unit.core.gwt import (
    T0,
    Scenario,
    given,
    nodes,
    queued,
    sluid,
    spec,
    started,
)

S = 1000
CONFIG = "SchedulerParameters: {{bf_policy: {policy}, bf_resolution: 1{extra}}}\n"
REQUEST = sluid(900, T0 + 5 * S)


def _blocked(policy: str, extra: str = "", jobs: tuple[int, ...] = (2, 3, 4)) -> Scenario:
    """n1-n3 busy until 100 s, n4 free; A (job 2: 4 nodes, 100 s), B (3: 4 nodes, 300 s) and
    C (4: one node, 50 s, fits on n4 now) wait, in that order (``jobs``: those queued)."""
    waiting = {
        2: queued(sluid(2), spec(nodes_min=4, time_limit_s=100), time_ms=T0 + 1),
        3: queued(sluid(3), spec(nodes_min=4, time_limit_s=300), time_ms=T0 + 2),
        4: queued(sluid(4), spec(nodes_min=1, time_limit_s=50), time_ms=T0 + 3),
    }
    return given(
        nodes("n", 4),
        queued(sluid(1), spec(nodes_min=3, time_limit_s=100)),
        started(sluid(1), ("n1", "n2", "n3"), 100, 1),
        *(waiting[j] for j in jobs),
        config=CONFIG.format(policy=policy, extra=extra),
    )


NOW = T0 + 10 * S


def _plan(scenario: Scenario, now_ms: int = NOW, user: str = "alice") -> StartsPlanned:
    [fact] = scenario.when(PlanStarts(request_sluid=REQUEST, user=user, nonce=5), now_ms).facts
    assert isinstance(fact, StartsPlanned)
    return fact


def _table(fact: StartsPlanned) -> list[tuple[int, int, str]]:
    return list(zip(fact.job_ids, [(s - T0) // S for s in fact.starts_ms], fact.nodes,
                    strict=True))


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
def test_every_waiting_job_is_planned_in_queue_order(policy: str) -> None:
    fact = _plan(_blocked(policy))
    assert (fact.request_sluid, fact.nonce, fact.user, fact.reuses) == (REQUEST, 5, "alice", "")
    assert fact.pending == 3
    # backfill starts C now on n4 (it ends before A's reservation); FCFS does not, and its
    # plan is conservative's, as sbatch --test-only's (and Slurm's sched/builtin estimate):
    # C's earliest start around A's and B's planned ones, now
    assert _table(fact) == [(2, 100, "n[1-4]"), (3, 200, "n[1-4]"), (4, 10, "n4")]


def test_the_plan_is_the_real_passs_reservations_under_conservative() -> None:
    scenario = _blocked("conservative")
    fact = _plan(scenario)
    result = schedule_with_plan(scenario.state, NOW)
    reserved = {job: (r.start_ms, r.nodes) for job, r in result.reservations.items()}
    started = {f.job_sluid: f.nodes for f in result.facts if isinstance(f, JobStarted)}
    for job, start, names in zip(fact.job_sluids, fact.starts_ms, fact.nodes, strict=True):
        if job in started:
            assert (start, names) == (NOW, "n4") and started[job] == ("n4",)
        else:
            assert (start, names) == (reserved[job][0], compress(list(reserved[job][1])))


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
def test_the_last_jobs_start_is_what_sbatch_test_only_answers(policy: str) -> None:
    """B's planned start equals will_run's for B's spec tested where B is not queued."""
    plan = _plan(_blocked(policy, jobs=(2, 3)))
    without = _blocked(policy, jobs=(2,))
    job_b = _blocked(policy, jobs=(2, 3)).state.jobs[sluid(3)]
    tested = test_only.test_job(without.state, job_b.spec, sluid(950), NOW)
    answer = will_run(without.state, tested, NOW)
    assert answer is not None
    assert plan.job_ids == (2, 3)
    assert (plan.starts_ms[1], plan.nodes[1]) == (answer.start_ms, "n[1-4]")
    assert answer.nodes == ("n1", "n2", "n3", "n4")


def test_jobs_past_the_limit_are_not_planned() -> None:
    fact = _plan(_blocked("conservative", ", bf_max_job_test: 2"))
    assert fact.job_ids == (2, 3)  # C is past the first two: N/A


def test_a_held_job_is_not_planned() -> None:
    scenario = given(
        nodes("n", 2),
        queued(sluid(1), spec(nodes_min=2, time_limit_s=100)),
        started(sluid(1), ("n1", "n2"), 100, 1),
        queued(sluid(2), spec(nodes_min=1, time_limit_s=10, hold=True), time_ms=T0 + 1),
        queued(sluid(3), spec(nodes_min=1, time_limit_s=10), time_ms=T0 + 2),
        config=CONFIG.format(policy="conservative", extra=""),
    )
    fact = _plan(scenario)
    assert _table(fact) == [(3, 100, "n1")]


def test_no_pending_job_plans_nothing() -> None:
    fact = _plan(given(nodes("n", 2), config=CONFIG.format(policy="easy", extra="")))
    assert (fact.job_ids, fact.pending, fact.reuses) == ((), 0, "")


def _snapshot(state: ShardState) -> bytes:
    return pickle.dumps((state.jobs, state.nodes, state.pending, state.running))


def test_deciding_changes_nothing_and_deciding_again_gives_the_same_answer() -> None:
    scenario = _blocked("conservative")
    before = _snapshot(scenario.state)
    first = scenario.when(PlanStarts(request_sluid=REQUEST, user="alice"), NOW).facts
    assert _snapshot(scenario.state) == before
    again = scenario.when(PlanStarts(request_sluid=REQUEST, user="alice"), NOW).facts
    assert again == first


def test_a_request_within_the_reuse_window_reuses_the_plan_and_replay_agrees() -> None:
    scenario = _blocked("conservative")
    first = _plan(scenario, NOW)
    evolve(scenario.state, first)
    assert (scenario.state.meta.starts_ms, scenario.state.meta.starts_sluid) == (
        NOW, first.event_sluid)
    second = _plan(scenario, NOW + STARTS_REUSE_MS - 1)
    assert (second.reuses, second.job_ids) == (first.event_sluid, ())
    evolve(scenario.state, second)
    assert scenario.state.meta.starts_sluid == first.event_sluid  # a reuse is no new plan
    third = _plan(scenario, NOW + STARTS_REUSE_MS)
    assert third.reuses == "" and third.job_ids == first.job_ids
    # a replay of the same facts gives the same meta
    replayed = _blocked("conservative")
    for fact in (first, second):
        evolve(replayed.state, fact)
    assert (replayed.state.meta.starts_ms, replayed.state.meta.starts_sluid,
            replayed.state.meta.shard_seq) == (NOW, first.event_sluid, second.shard_seq)


def test_another_users_name_is_denied() -> None:
    scenario = _blocked("easy")
    bob = Identity(kind="munge", user="bob")
    request = PlanStarts(request_sluid=REQUEST, user="alice")
    [fact] = decide(scenario.state, Attributed(request=request, identity=bob), T0)
    assert isinstance(fact, RequestDenied)
    assert (fact.request, fact.reason, fact.subject_sluid) == (
        "PlanStarts", "UserMismatch", REQUEST)


def test_any_verified_user_sees_every_users_planned_jobs() -> None:
    scenario = _blocked("easy")
    carol = Identity(kind="munge", user="carol")
    [fact] = decide(scenario.state, Attributed(request=PlanStarts(request_sluid=REQUEST),
                                               identity=carol), T0)
    assert isinstance(fact, StartsPlanned)
    assert fact.user == "carol" and len(fact.job_ids) == 3  # alice's jobs, as squeue shows them


def test_without_a_credential_under_auth_required_it_is_denied() -> None:
    scenario = given(nodes("n", 2), config="AuthRequired: true\n")
    anonymous = Identity(kind="none", user="")
    [fact] = decide(scenario.state, Attributed(request=PlanStarts(request_sluid=REQUEST),
                                               identity=anonymous), T0)
    assert isinstance(fact, RequestDenied) and fact.reason == "Unauthenticated"
