"""Gang-aware hot swap: an expediting job keeps its healthy nodes and replaces the lost one
beside them (same block, same segment), then falls back to any placement after HotSwapWait."""

from __future__ import annotations

import dataclasses

from scheduler import ConfigApplied, JobPending, JobSpec, JobStarted, evolve
from scheduler.records import Fact, Segment
from scheduler.requeue.hotswap import hot_swap_on
from tests.unit.core.gwt import (
    T0,
    M,
    Scenario,
    given,
    node_sluid,
    nodes,
    queued,
    restamp,
    schedule_pass,
)
from tests.unit.core.requeue_fixtures import (
    EXPEDITE_ON,
    J1,
    J2,
    J3,
    epilog,
    exited,
    node_failed,
    run_of,
    running,
)
from tests.unit.core.test_foundation import state_changed

HOT = EXPEDITE_ON + "HotSwap: yes\nHotSwapWait: 60\n"
BLOCKS = "BlockName=b1 Nodes=n[1-4]\nBlockName=b2 Nodes=n[5-8]\nBlockSizes=4,8\n"
GANG = JobSpec(user="alice", command=("train",), nodes_min=3, exclusive=True, requeue="expedite")


def _topology(text: str) -> ConfigApplied:
    return ConfigApplied(**M, config_sluid="s0000000000001", kind="topology", digest="", text=text)


def _started(job_sluid: str, job_id: int, names: tuple[str, ...], *segments: Segment) -> Fact:
    return JobStarted(
        **M,
        job_sluid=job_sluid,
        job_id=job_id,
        run_sluid=run_of(job_id),
        restart_count=0,
        nodes=names,
        node_sluids=tuple(node_sluid(n) for n in names),
        segments=segments,
        partition="main",
        user="alice",
        time_limit_s=0,
        submit_ms=T0,
    )


def _gang_lost_n2(*extra: Fact | list[Fact], config: str = HOT, segments: bool = True) -> Scenario:
    """J1 ran on n1-n3 (block b1); n2 failed; the survivors' epilogs are in: J1 is requeued."""
    seg = (Segment(index=0, group="b1", nodes=("n1", "n2", "n3")),) if segments else ()
    scenario = given(
        nodes("n", 8),
        _topology(BLOCKS),
        queued(J1, GANG),
        _started(J1, 1, ("n1", "n2", "n3"), *seg),
        *extra,
        config=config,
    )
    scenario.when(node_failed("n2")).evolved()
    scenario.when(epilog(J1, 1, "n1")).evolved()
    scenario.when(epilog(J1, 1, "n3")).evolved()
    assert scenario.state.jobs[J1].expediting
    return scenario


def _n4_busy() -> list[Fact]:
    return running(J3, 3, ("n4",), dataclasses.replace(GANG, nodes_min=1, requeue="yes"))


def test_the_lost_node_is_replaced_inside_the_same_block() -> None:
    scenario = _gang_lost_n2()
    [start] = scenario.when(schedule_pass(), T0 + 1).matching(JobStarted)
    assert start.nodes == ("n1", "n3", "n4")
    assert start.segments == (Segment(index=0, group="b1", nodes=("n1", "n3", "n4")),)
    assert start.restart_count == 1


def test_without_a_replacement_in_the_block_it_waits_with_hot_swap_and_keeps_its_nodes() -> None:
    short = JobSpec(user="bob", command=("x",), time_limit_s=60, exclusive=True)
    scenario = _gang_lost_n2(_n4_busy(), queued(J2, short, job_id=2))
    outcome = scenario.when(schedule_pass(), T0 + 1)
    starts = outcome.matching(JobStarted)
    assert [s.job_sluid for s in starts] == [J2]
    assert not {"n1", "n3"} & set(starts[0].nodes)  # the kept nodes are J1's
    assert [p.reason for p in outcome.matching(JobPending) if p.job_sluid == J1] == ["HotSwap"]


def test_a_replacement_freed_in_the_block_completes_the_gang() -> None:
    scenario = _gang_lost_n2(_n4_busy())
    scenario.when(schedule_pass(), T0 + 1).evolved()
    scenario.when(exited(J3, 3, "n4", 0), T0 + 2).evolved()
    [start] = scenario.when(schedule_pass(), T0 + 3).matching(JobStarted)
    assert start.nodes == ("n1", "n3", "n4")


def test_after_hot_swap_wait_it_takes_any_placement_the_topology_allows() -> None:
    scenario = _gang_lost_n2(_n4_busy())
    scenario.when(schedule_pass(), T0 + 1).evolved()
    [start] = scenario.when(schedule_pass(), T0 + 61_000).matching(JobStarted)
    assert set(start.nodes) <= {"n5", "n6", "n7", "n8"}


def test_without_hot_swap_an_expediting_job_goes_wherever_the_topology_places_it() -> None:
    scenario = _gang_lost_n2(_n4_busy(), config=EXPEDITE_ON)
    [start] = scenario.when(schedule_pass(), T0 + 1).matching(JobStarted)
    assert set(start.nodes) <= {"n5", "n6", "n7", "n8"}


def test_the_job_can_turn_hot_swap_off_and_the_partition_can_turn_it_on() -> None:
    off = dataclasses.replace(GANG, hot_swap="no")
    scenario = given(nodes("n", 4), queued(J1, off), config=HOT)
    assert not hot_swap_on(scenario.state.config, scenario.state.jobs[J1])
    partition = (
        EXPEDITE_ON + "Partitions:\n  - PartitionName: main\n    Default: YES\n    HotSwap: yes\n"
    )
    job = dataclasses.replace(scenario.state.jobs[J1], spec=GANG)
    assert hot_swap_on(given(config=partition).state.config, job)


def test_each_segment_keeps_its_nodes_and_block() -> None:
    wide = dataclasses.replace(GANG, nodes_min=4, segment=2, spread_segments=True)
    segments = (
        Segment(index=0, group="b1", nodes=("n1", "n2")),
        Segment(index=1, group="b2", nodes=("n5", "n6")),
    )
    scenario = given(
        nodes("n", 8),
        _topology(BLOCKS),
        queued(J1, wide),
        _started(J1, 1, ("n1", "n2", "n5", "n6"), *segments),
        config=HOT,
    )
    scenario.when(node_failed("n2")).evolved()
    for name in ("n1", "n5", "n6"):
        scenario.when(epilog(J1, 1, name)).evolved()
    [start] = scenario.when(schedule_pass(), T0 + 1).matching(JobStarted)
    first, second = start.segments
    assert first.group == "b1" and "n1" in first.nodes and set(first.nodes) <= {"n1", "n3", "n4"}
    assert second == Segment(index=1, group="b2", nodes=("n5", "n6"))


def test_without_a_topology_the_kept_nodes_come_first_then_the_first_free_nodes() -> None:
    scenario = given(
        nodes("n", 4), queued(J1, GANG), _started(J1, 1, ("n2", "n3", "n4")), config=HOT
    )
    scenario.when(node_failed("n3")).evolved()
    scenario.when(epilog(J1, 1, "n2")).evolved()
    scenario.when(epilog(J1, 1, "n4")).evolved()
    [start] = scenario.when(schedule_pass(), T0 + 1).matching(JobStarted)
    assert start.nodes == ("n2", "n4", "n1")


def test_a_kept_node_that_is_drained_meanwhile_is_not_kept() -> None:
    scenario = _gang_lost_n2(_n4_busy())
    scenario.state = evolve(
        scenario.state, restamp(scenario.state, state_changed("n3", "DRAIN", "x"))
    )
    outcome = scenario.when(schedule_pass(), T0 + 1)
    assert outcome.matching(JobStarted) == []
    assert [p.reason for p in outcome.matching(JobPending) if p.job_sluid == J1] == ["HotSwap"]
