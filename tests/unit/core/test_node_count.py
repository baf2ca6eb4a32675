"""A job without ``-N`` (or with a range) gets the node count its tasks need, decided at admission
and recorded in its ``JobQueued`` (``scheduler.jobs.node_count``): Slurm's ``sbatch -n 5`` on
4-CPU nodes runs on two nodes; Sluice refused it (found by a tester, 2026-12-07)."""

from __future__ import annotations

from typing import Any

from scheduler import decide, evolve, initial_state, schedule
from scheduler.records import (
    JobQueued,
    JobRejected,
    JobStarted,
    JobTestAnswered,
    RequestDenied,
    StartStep,
    StepStarted,
    SubmitJob,
)
from scheduler.records import TestSubmitJob as WillRunRequest
from tests.unit.core.gwt import (
    CLUSTER,
    SHARD,
    T0,
    Scenario,
    given,
    nodes,
    registered,
    sluid,
    spec,
)

J1 = sluid(1)
FOUR_CPUS = nodes("n", 3, cpus=4)


def _queued(scenario: Scenario, **fields: Any) -> JobQueued:
    [fact] = scenario.when(SubmitJob(job_sluid=J1, spec=spec(**fields))).facts
    assert isinstance(fact, JobQueued), fact
    return fact


def _refused(scenario: Scenario, **fields: Any) -> JobRejected:
    [fact] = scenario.when(SubmitJob(job_sluid=J1, spec=spec(**fields))).facts
    assert isinstance(fact, JobRejected), fact
    return fact


def test_tasks_without_a_node_count_get_the_fewest_nodes_that_hold_them() -> None:
    """``-n 5`` on 4-CPU nodes: two nodes of 3 tasks' CPUs; ``-n 3 -c 2``: two of 4 CPUs;
    ``-n 9``: three; ``-n 3 -c 3``: three (a task is never split over nodes)."""
    scenario = given(FOUR_CPUS)
    for fields, count, cpus in (({"ntasks": 5}, 2, 3), ({"ntasks": 3, "cpus_per_task": 2}, 2, 4),
                                ({"ntasks": 9}, 3, 3), ({"ntasks": 3, "cpus_per_task": 3}, 3, 3)):
        fact = _queued(scenario, **fields)
        assert (fact.spec.nodes_min, fact.spec.nodes_max, fact.cpus_per_node) == (count, 0, cpus)
        assert fact.spec == spec(**fields, nodes_min=count)


def test_a_job_that_fits_as_asked_is_queued_unchanged() -> None:
    scenario = given(FOUR_CPUS)
    for fields in ({"ntasks": 4}, {"ntasks": 2, "cpus_per_task": 2}, {"nodes_min": 2, "ntasks": 5},
                   {"nodes_min": 1, "nodes_max": 3, "ntasks": 4}):
        assert _queued(scenario, **fields).spec == spec(**fields)


def test_an_exact_node_count_is_kept_and_refused_when_too_small() -> None:
    """``-N 1 -n 5`` (the CLI sends 1-1) and ``-N 2 -n 9``: refused, as Slurm does."""
    scenario = given(FOUR_CPUS)
    for fields in ({"nodes_min": 1, "nodes_max": 1, "ntasks": 5}, {"nodes_min": 2, "ntasks": 9}):
        assert _refused(scenario, **fields).reason == "RequestedNodeConfigUnavailable"


def test_a_node_range_lets_the_job_use_up_to_its_maximum() -> None:
    """``-N 1-3 -n 6``: two nodes of 3 CPUs at least, up to three; ``-N 1-2 -n 12`` cannot."""
    scenario = given(FOUR_CPUS)
    fact = _queued(scenario, nodes_min=1, nodes_max=3, ntasks=6)
    assert (fact.spec.nodes_min, fact.spec.nodes_max, fact.cpus_per_node) == (2, 3, 3)
    refused = _refused(scenario, nodes_min=1, nodes_max=2, ntasks=12)
    assert refused.reason == "RequestedNodeConfigUnavailable"


def test_ntasks_per_node_stays_the_most_tasks_a_node_gets() -> None:
    """``-n 8 --ntasks-per-node 2`` on 4-CPU nodes (8 CPUs do not fit one): four nodes of 2."""
    scenario = given(nodes("n", 4, cpus=4))
    fact = _queued(scenario, ntasks=8, ntasks_per_node=2)
    assert (fact.spec.nodes_min, fact.cpus_per_node) == (4, 2)


def test_on_mixed_nodes_the_count_is_the_fewest_the_large_nodes_allow() -> None:
    """One 6-CPU and four 2-CPU nodes, ``-n 8``: 2 or 3 nodes would need 4 or 3 CPUs on each
    (one node has them), so four nodes of 2; two 8-CPU nodes among them hold ``-n 12`` on 2."""
    mixed = given(registered("big", cpus=6), nodes("s", 4, cpus=2))
    fact = _queued(mixed, ntasks=8)
    assert (fact.spec.nodes_min, fact.cpus_per_node) == (4, 2)
    large = given(nodes("big", 2, cpus=8), nodes("s", 4, cpus=2))
    fact = _queued(large, ntasks=12)
    assert (fact.spec.nodes_min, fact.cpus_per_node) == (2, 6)


def test_a_segmented_job_gets_a_multiple_of_its_segment() -> None:
    scenario = given(nodes("n", 4, cpus=2))
    fact = _queued(scenario, ntasks=6, segment=2)
    assert fact.spec.nodes_min == 4  # 3 nodes would hold the tasks, not in segments of 2


def test_more_tasks_than_the_partition_holds_are_refused_with_the_count_needed() -> None:
    scenario = given(FOUR_CPUS)
    fact = _refused(scenario, ntasks=100)
    assert fact.reason == "NodeCountTooLarge"
    assert fact.detail.endswith(": 25 nodes asked, partition main has 3 that fit")
    assert _refused(scenario, cpus_per_task=8).reason == "RequestedNodeConfigUnavailable"


def test_the_recorded_count_is_what_a_replay_uses() -> None:
    """Folding the fact on a state without the nodes it was decided from (a replay reads the
    count, never derives it again) gives the same job."""
    scenario = given(FOUR_CPUS)
    queued = _queued(scenario, ntasks=5)
    job = evolve(scenario.state, queued).jobs[J1]
    assert (job.demand.nodes_min, job.demand.nodes_max, job.demand.cpus) == (2, 2, 3)
    replayed = evolve(initial_state(SHARD, CLUSTER, None), queued).jobs[J1]
    assert replayed.demand == job.demand and replayed.spec == job.spec


def test_test_only_answers_with_the_derived_count() -> None:
    [fact] = given(FOUR_CPUS).when(WillRunRequest(job_sluid=sluid(9), spec=spec(ntasks=5),
                                                 nonce=3)).facts
    assert isinstance(fact, JobTestAnswered) and not fact.reason, fact
    assert fact.nodes == "n[1-2]" and fact.cpus == 5  # Slurm's: its 5 tasks' CPUs (4+1)


def test_a_redelivered_submission_without_nonce_is_silent() -> None:
    """The queued spec differs from the submitted one by the count admission decided only."""
    scenario = given(FOUR_CPUS)
    queued = _queued(scenario, ntasks=5)
    again = given(FOUR_CPUS, queued).when(SubmitJob(job_sluid=J1, spec=spec(ntasks=5)))
    assert again.facts == []
    other = given(FOUR_CPUS, queued).when(SubmitJob(job_sluid=J1, spec=spec(ntasks=6)))
    assert [f.reason for f in other.facts if isinstance(f, JobRejected)] == ["DuplicateSubmission"]


def test_the_job_starts_on_its_nodes_and_its_steps_run_within_their_cpus() -> None:
    """It starts on two nodes holding 4 CPUs and 1 (Slurm's cons_tres: each node in turn
    takes what it has, leaving one task for the next); ``srun -n 5`` in it (its block layout
    4,1) starts, 3,2 needs 2 CPUs where the job holds 1 and is refused."""
    scenario = given(FOUR_CPUS)
    state = evolve(scenario.state, _queued(scenario, ntasks=5))
    facts = schedule(state, T0 + 1000)
    [start] = [f for f in facts if isinstance(f, JobStarted)]
    assert start.nodes == ("n1", "n2") and tuple(start.alloc_cpus) == (4, 1)
    for fact in facts:
        state = evolve(state, fact)
    run = state.jobs[J1].run_sluid

    def step(counts: tuple[int, int]) -> Any:
        request = StartStep(job_sluid=J1, run_sluid=run, step_sluid=sluid(40), user="alice",
                            nodes=("n1", "n2"), tasks_per_node=counts, cpus_per_task=1,
                            command=("hostname",), workdir="/w", env={}, io_address="n1:1",
                            io_token="t")
        [fact] = decide(state, request, T0 + 2000)
        return fact

    refused = step((3, 2))
    assert isinstance(refused, RequestDenied) and refused.reason == "TooManyRequestedCpus"
    assert isinstance(step((4, 1)), StepStarted)


def test_a_job_no_count_can_hold_tries_a_bounded_number_of_counts(monkeypatch: Any) -> None:
    """Memory no node has: no count fits. The search stops after ``_MAX_TRIES`` fit checks
    (one a count, each over the partition's nodes), not one a node of a large partition, and
    the job is refused as before."""
    from scheduler.jobs import node_count

    calls: list[int] = []
    real = node_count.demand_fits

    def counted(*args: Any) -> bool:
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(node_count, "demand_fits", counted)
    many = given(nodes("n", 400, cpus=4))
    [fact] = many.when(SubmitJob(job_sluid=J1, spec=spec(ntasks=400, mem_per_node_mb=10**9))).facts
    assert isinstance(fact, JobRejected), fact
    assert len(calls) <= node_count._MAX_TRIES + 1
