"""A dependency found never satisfiable stays so once the job that failed it is purged.

Slurm marks the dependency ``DEPEND_FAILED`` when it first finds it so and never tests it
again (``_foreach_test_job_dependency`` in ``job_scheduler.c``). Before, Sluice judged it anew
every pass, so after ``MinJobAge`` purged the failed job (a purged job counts as satisfied) the
dependent became eligible and ran (found 2026-12-07). The latch is the pass's own
``JobPending(DependencyNeverSatisfied)`` fact, folded by ``evolve``: no clock, and a replay of
the ledger latches it at the same fact."""

from __future__ import annotations

from functools import reduce

from scheduler import CloseCycle, JobQueued, UpdateJob, decide, evolve, schedule
from scheduler.records import Fact
from scheduler.shard.state import ShardState
from tests.unit.core.gwt import T0, given, nodes, queued, sluid, spec, started
from tests.unit.core.test_job_control import _reasons, _started, ended

FAILED_JOB, DEPENDENT = sluid(1), sluid(2)
PURGED_AT = T0 + 20_000  # MinJobAge 10 s after the failure


def _never_then_purged(text: str = "afterok:1") -> tuple[ShardState, list[Fact]]:
    """Job 1 failed, job 2 (``-d text``) found never satisfiable by a pass, then job 1 purged:
    the state and every fact, in order."""
    scenario = given(nodes("n", 2), queued(FAILED_JOB), started(FAILED_JOB, ("n1",), 0, 1),
                     queued(DEPENDENT, spec(dependency=text)), ended(FAILED_JOB, 1, "FAILED"),
                     config="MinJobAge: 10\n")
    state, log = scenario.state, []
    for fact in schedule(state, T0):
        log.append(fact)
        state = evolve(state, fact)
    assert _reasons(log)[DEPENDENT] == "DependencyNeverSatisfied"
    for fact in decide(state, CloseCycle(inbox_partition=0, inbox_from=0, inbox_to=1), PURGED_AT):
        log.append(fact)
        state = evolve(state, fact)
    assert FAILED_JOB not in state.jobs
    return state, log


def test_a_never_satisfied_afterok_stays_so_once_the_failed_job_is_purged() -> None:
    state, _ = _never_then_purged()
    facts = schedule(state, PURGED_AT)
    assert DEPENDENT not in _started(facts)
    assert state.jobs[DEPENDENT].reason == "DependencyNeverSatisfied"


def test_a_replay_of_the_ledger_latches_it_at_the_same_fact() -> None:
    state, log = _never_then_purged()
    base = given(nodes("n", 2), queued(FAILED_JOB), started(FAILED_JOB, ("n1",), 0, 1),
                 queued(DEPENDENT, spec(dependency="afterok:1")),
                 ended(FAILED_JOB, 1, "FAILED"), config="MinJobAge: 10\n").state
    replayed = reduce(evolve, log, base)
    assert replayed.jobs[DEPENDENT] == state.jobs[DEPENDENT]
    assert DEPENDENT not in _started(schedule(replayed, PURGED_AT))


def test_a_new_dependency_is_judged_afresh() -> None:
    state, _ = _never_then_purged()
    [fact] = decide(state, UpdateJob(job_sluid=DEPENDENT, changes={"dependency": ""}),
                    PURGED_AT)
    assert isinstance(fact, JobQueued)
    assert DEPENDENT in _started(schedule(evolve(state, fact), PURGED_AT))


def test_another_update_keeps_the_latch() -> None:
    state, _ = _never_then_purged()
    [fact] = decide(state, UpdateJob(job_sluid=DEPENDENT, changes={"time_limit_s": "600"}),
                    PURGED_AT)
    assert isinstance(fact, JobQueued)
    assert DEPENDENT not in _started(schedule(evolve(state, fact), PURGED_AT))


def test_a_new_dependency_found_never_satisfiable_too_is_latched_again() -> None:
    """The job already shows DependencyNeverSatisfied when its dependency is changed to another
    that can never be satisfied either (job 3 failed too): the pass finds the same reason, and
    must still latch the new text, or the purge of job 3 lets the job run."""
    other = sluid(3)
    scenario = given(nodes("n", 2), queued(FAILED_JOB), started(FAILED_JOB, ("n1",), 0, 1),
                     queued(DEPENDENT, spec(dependency="afterok:1")),
                     queued(other), started(other, ("n2",), 0, 3),
                     ended(FAILED_JOB, 1, "FAILED"), ended(other, 3, "FAILED"),
                     config="MinJobAge: 10\n")
    state = scenario.state
    for fact in schedule(state, T0):
        state = evolve(state, fact)
    assert state.jobs[DEPENDENT].reason == "DependencyNeverSatisfied"
    for fact in decide(state, UpdateJob(job_sluid=DEPENDENT,
                                        changes={"dependency": "afterok:3"}), T0 + 1):
        state = evolve(state, fact)
    for fact in schedule(state, T0 + 2):
        state = evolve(state, fact)
    for fact in decide(state, CloseCycle(inbox_partition=0, inbox_from=0, inbox_to=1), PURGED_AT):
        state = evolve(state, fact)
    assert other not in state.jobs
    assert DEPENDENT not in _started(schedule(state, PURGED_AT))
