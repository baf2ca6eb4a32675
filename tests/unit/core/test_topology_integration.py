"""The pass places jobs through the topology plugins once a topology is applied."""

from __future__ import annotations

from scheduler import (
    ApplyConfig,
    ConfigApplied,
    JobPending,
    JobRejected,
    JobStarted,
    decide,
    evolve,
)
from scheduler.records import Segment
from tests.unit.core.gwt import T0, given, nodes, queued, registered, schedule_pass, sluid, spec

BLOCKS = "BlockName=b1 Nodes=n[1-4]\nBlockName=b2 Nodes=n[5-8]\nBlockSizes=4,8\n"


def _with_topology(text: str) -> object:
    scenario = given(
        nodes("n", 8), queued(sluid(1)), queued(sluid(2), spec(nodes_min=4), time_ms=T0 + 1)
    )
    [applied] = decide(
        scenario.state, ApplyConfig(config_sluid=sluid(90), kind="topology", text=text), T0
    )
    assert isinstance(applied, ConfigApplied)
    scenario.state = evolve(scenario.state, applied)
    return scenario


def test_without_a_topology_nodes_are_taken_in_order() -> None:
    outcome = given(
        nodes("n", 8), queued(sluid(1)), queued(sluid(2), spec(nodes_min=4), time_ms=T0 + 1)
    ).when(schedule_pass())
    starts = [f for f in outcome.facts if isinstance(f, JobStarted)]
    assert [s.nodes for s in starts] == [("n1",), ("n2", "n3", "n4", "n5")]


def test_a_block_topology_keeps_a_four_node_job_inside_one_free_block() -> None:
    scenario = _with_topology(BLOCKS)
    outcome = scenario.when(schedule_pass(), T0 + 2)  # type: ignore[attr-defined]
    single, wide = [f for f in outcome.facts if isinstance(f, JobStarted)]
    blocks = {"b1": ("n1", "n2", "n3", "n4"), "b2": ("n5", "n6", "n7", "n8")}
    [segment] = wide.segments
    assert wide.nodes == blocks[segment.group] and segment == Segment(
        index=0, group=segment.group, nodes=wide.nodes
    )
    assert not set(single.nodes) & set(wide.nodes)


def test_a_bad_topology_file_is_rejected_with_its_line() -> None:
    state = given(nodes("n", 2)).state
    [fact] = decide(
        state,
        ApplyConfig(
            config_sluid=sluid(91),
            kind="topology",
            text="BlockName=b1 Nodes=n[1-2]\nBlockSizes=x\n",
            source="topology.conf",
        ),
        T0,
    )
    assert isinstance(fact, JobRejected) and fact.reason == "InvalidConfig"
    assert "topology.conf:" in fact.detail


TWO_TOPOLOGIES = """\
- topology: blocks
  cluster_default: true
  block:
    block_sizes: [4]
    blocks:
      - block: b1
        nodes: n[1-4]
      - block: b2
        nodes: n[5-8]
- topology: plain
  flat: true
"""


def test_a_partition_can_name_its_own_topology() -> None:
    config = (
        "Partitions:\n  - PartitionName: main\n    Default: YES\n"
        "  - PartitionName: loose\n    Topology: plain\n"
    )
    scenario = given(
        nodes("n", 8),
        queued(sluid(1), spec(nodes_min=2)),
        queued(sluid(2), spec(nodes_min=3, partition="loose"), time_ms=T0 + 1),
        queued(sluid(3), spec(nodes_min=3), time_ms=T0 + 2),
        config=config,
    )
    [applied] = decide(
        scenario.state,
        ApplyConfig(config_sluid=sluid(92), kind="topology", text=TWO_TOPOLOGIES),
        T0,
    )
    scenario.state = evolve(scenario.state, applied)
    outcome = scenario.when(schedule_pass(), T0 + 3)
    first, loose = (f for f in outcome.facts if isinstance(f, JobStarted))
    # main places through the blocks, "loose" is flat (first fit, no segments); then no block
    # has 3 free nodes left, so main's 3-node job waits
    assert first.segments and first.segments[0].nodes == first.nodes
    assert loose.job_sluid == sluid(2) and not loose.segments
    assert loose.nodes == ("n1", "n2", "n3")
    [pending] = [f for f in outcome.facts if isinstance(f, JobPending)]
    assert (pending.job_sluid, pending.reason) == (sluid(3), "Resources")


ALPHA = "- topology: alpha\n  flat: {alpha_step_rank: true}\n"


def _leading_zero_cluster(topology: str | None) -> list[JobStarted]:
    # The node index orders n010 before n10 (equal numbers, then the name); the flat plugin's
    # name order (topology.hostlist.natural_key) puts n10 first: only a plugin ranking by
    # name tells the two apart.
    scenario = given(
        *registered("n010"), *registered("n10"), queued(sluid(1), spec(nodes_min=2))
    )
    if topology is not None:
        [applied] = decide(
            scenario.state, ApplyConfig(config_sluid=sluid(90), kind="topology", text=topology), T0
        )
        assert isinstance(applied, ConfigApplied)
        scenario.state = evolve(scenario.state, applied)
    outcome = scenario.when(schedule_pass(), T0 + 2)
    return [f for f in outcome.facts if isinstance(f, JobStarted)]


def test_a_flat_topology_with_alpha_step_rank_ranks_the_job_nodes_by_name() -> None:
    [start] = _leading_zero_cluster(ALPHA)
    assert start.nodes == ("n10", "n010")  # the batch host is the first by name


def test_without_alpha_step_rank_the_job_nodes_keep_node_order() -> None:
    [start] = _leading_zero_cluster(None)
    assert start.nodes == ("n010", "n10")
