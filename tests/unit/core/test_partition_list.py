"""``sbatch -p a,b``: admitted when one of its partitions admits it, queued under the list
(highest PriorityTier first), started in the first partition where it can start, which its
run and the job keep (Slurm's multi-partition jobs)."""

from __future__ import annotations

from scheduler import Fact, JobPending, JobQueued, JobRejected, JobStarted, SubmitJob, decide
from tests.unit.core.gwt import T0, given, nodes, queued, schedule_pass, sluid, spec, started

J1, J2, J3 = sluid(1), sluid(2), sluid(3)
CONFIG = (
    "Nodes:\n  - NodeName: a[1-2]\n    CPUs: 4\n  - NodeName: b1\n    CPUs: 4\n"
    "Partitions:\n"
    "  - PartitionName: a\n    Nodes: a[1-2]\n    Default: YES\n"
    "  - PartitionName: b\n    Nodes: b1\n    PriorityTier: 5\n"
    "  - PartitionName: c\n    Nodes: a[1-2]\n    State: DOWN\n"
)


def _cluster() -> list[Fact]:
    return [*nodes("a", 2, cpus=4, partitions=("a",)), *nodes("b", 1, cpus=4, partitions=("b",))]


def _submitted(partition: str, **fields: object) -> JobQueued | JobRejected:
    state = given(_cluster(), config=CONFIG).state
    [fact] = decide(state, SubmitJob(job_sluid=J1, spec=spec(partition=partition, **fields)), T0)
    assert isinstance(fact, JobQueued | JobRejected)
    return fact


def test_a_list_is_queued_highest_tier_first_and_every_name_must_exist() -> None:
    fact = _submitted("a,b")
    assert isinstance(fact, JobQueued) and fact.partition == "b,a", fact
    refused = _submitted("a,nope")
    assert isinstance(refused, JobRejected) and refused.reason == "InvalidPartition", refused
    assert "nope" in refused.detail


def test_one_partition_that_admits_the_job_admits_it() -> None:
    """Two nodes exist only in a: b alone refuses -N 2, the list is admitted."""
    refused = _submitted("b", nodes_min=2, nodes_max=2)
    assert isinstance(refused, JobRejected)
    assert isinstance(_submitted("a,b", nodes_min=2, nodes_max=2), JobQueued)


def test_the_job_starts_in_the_first_partition_where_it_can_and_keeps_it() -> None:
    """b (tier 5) is full, so the job starts in a; its run and the job say a."""
    outcome = given(
        _cluster(),
        queued(J1, spec(partition="b", ntasks=4), partition="b"),
        queued(J2, spec(partition="a,b", ntasks=2), partition="b,a"),
        config=CONFIG,
    ).when(schedule_pass())
    started = {f.job_sluid: f for f in outcome.facts if isinstance(f, JobStarted)}
    assert (started[J1].partition, started[J2].partition) == ("b", "a")
    assert started[J2].nodes == ("a1",)
    assert outcome.evolved().jobs[J2].partition == "a"


def test_a_list_where_no_partition_can_start_it_waits_with_the_first_ones_reason() -> None:
    """Both partitions full (their jobs running): Resources, the first tried's."""
    outcome = given(
        _cluster(),
        queued(J1, spec(partition="a", nodes_min=2, nodes_max=2, ntasks=8), partition="a"),
        started(J1, ("a1", "a2"), 0, 1),
        queued(J2, spec(partition="b", ntasks=4), partition="b"),
        started(J2, ("b1",), 0, 2),
        queued(J3, spec(partition="a,b"), partition="b,a"),
        config=CONFIG,
    ).when(schedule_pass())
    pending = {f.job_sluid: f.reason for f in outcome.facts if isinstance(f, JobPending)}
    assert pending == {J3: "Resources"}


def test_a_down_partition_of_the_list_is_passed_over() -> None:
    outcome = given(_cluster(), queued(J1, spec(partition="c,a"), partition="c,a"),
                    config=CONFIG).when(schedule_pass())
    [started] = [f for f in outcome.facts if isinstance(f, JobStarted)]
    assert started.partition == "a"



def test_test_only_plans_the_earliest_start_of_the_list() -> None:
    from scheduler.records import JobTestAnswered, TestSubmitJob

    outcome = given(
        _cluster(),
        queued(J1, spec(partition="b", ntasks=4), partition="b"),
        started(J1, ("b1",), 0, 1),
        config=CONFIG,
    ).when(TestSubmitJob(job_sluid=J3, spec=spec(partition="b,a"), nonce=1))
    [answer] = outcome.facts
    assert isinstance(answer, JobTestAnswered) and not answer.reason, answer
    assert (answer.partition, answer.nodes) == ("a", "a1")
