"""``PlanPriorities`` (sprio): each shard's priority factors, from the pass's own code."""

from __future__ import annotations

from scheduler import evolve
from scheduler.records import PlanPriorities, PrioritiesComputed
from tests.unit.core.gwt import T0, given, queued, sluid, spec

DAY_MS = 86_400_000
CONFIG = ("PriorityWeightAge: 1000\nPriorityMaxAge: 1-0\nPriorityWeightQOS: 100\n"
          "QOS:\n  - Name: q\n    Priority: 10\n  - Name: r\n    Priority: 5\n")


def _ask(n: int = 90) -> PlanPriorities:
    return PlanPriorities(request_sluid=sluid(n), user="alice", nonce=7)


def test_each_eligible_unheld_pending_job_gets_its_priority_and_weighted_factors() -> None:
    scenario = given(
        queued(sluid(1), spec(qos="q")),
        queued(sluid(2), spec(qos="r", nice=20), time_ms=T0 + DAY_MS // 2),
        queued(sluid(3), spec(qos="q", hold=True)),
        queued(sluid(4), spec(qos="q", begin_time_ms=T0 + 2 * DAY_MS)),
        config=CONFIG,
    )
    [fact] = scenario.when(_ask(), T0 + DAY_MS).facts
    assert isinstance(fact, PrioritiesComputed)
    assert (fact.request_sluid, fact.nonce, fact.user, fact.reuses) == (sluid(90), 7, "alice", "")
    assert fact.weights == {"age": 1000, "fairshare": 0, "jobsize": 0, "partition": 0, "qos": 100}
    assert fact.job_sluids == (sluid(1), sluid(2))  # held and not yet eligible: not listed
    assert fact.age == (1000, 500) and fact.qos == (100, 50) and fact.nice == (0, 20)
    assert fact.priorities == (1100, 530)  # the pass's own: the factors less nice
    assert fact.fairshare == fact.jobsize == fact.partition == (0, 0)


def test_a_second_request_within_ten_seconds_reuses_the_answer() -> None:
    scenario = given(queued(sluid(1), spec(qos="q")), config=CONFIG)
    [first] = scenario.when(_ask(90), T0).facts
    scenario.state = evolve(scenario.state, first)
    [again] = scenario.when(_ask(91), T0 + 9_000).facts
    assert again.reuses == first.event_sluid and again.job_sluids == ()
    [later] = scenario.when(_ask(92), T0 + 10_000).facts
    assert later.reuses == "" and later.job_sluids == (sluid(1),)


def test_an_operators_priority_is_shown_with_the_formulas_factors() -> None:
    from scheduler.records import JobPrioritySet
    from tests.unit.core.gwt import M

    scenario = given(queued(sluid(1), spec(qos="q")), queued(sluid(2), spec(qos="q")),
                     JobPrioritySet(**M, job_sluid=sluid(2), priority=50_000), config=CONFIG)
    [fact] = scenario.when(_ask(), T0).facts
    assert fact.job_sluids == (sluid(2), sluid(1))  # it sorts first
    assert fact.priorities == (50_000, 100) and fact.admin_priorities == (50_000, 0)
    assert fact.qos == (100, 100)
