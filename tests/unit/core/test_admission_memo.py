"""The registered-nodes fit check remembers its answer only while the nodes stay the same."""

from __future__ import annotations

import dataclasses

from scheduler.config.model import PartitionConfig
from scheduler.jobs import admission
from scheduler.jobs.node_filter import node_filter
from scheduler.shard.model import Demand, Node


def n_nodes_of_1_cpu(count: int) -> list[Node]:
    return [Node(node_sluid=f"s{i}", name=f"n{i:02d}", cpus=1, mem_mb=1024, gpus=0, gpu_type="")
            for i in range(count)]


def demand_of(cpus: int) -> Demand:
    return Demand(nodes_min=1, nodes_max=1, cpus=cpus, mem_mb=100, gpus=0,
                            gpu_type="", exclusive=False)


def check(nodes: list[Node], cpus: int, part: PartitionConfig | None = None) -> object:
    return admission._fit_registered(demand_of(cpus), node_filter("", "", ""),
                                     part or PartitionConfig(name="main"), nodes)


def fresh(nodes: list[Node], cpus: int, part: PartitionConfig | None = None) -> object:
    return admission._fit_registered_now(demand_of(cpus), node_filter("", "", ""),
                                         part or PartitionConfig(name="main"), nodes)


def test_the_remembered_answer_follows_a_node_that_grew_joined_or_left() -> None:
    nodes = n_nodes_of_1_cpu(4)
    assert check(nodes, 2) == fresh(nodes, 2) is not None  # nothing holds 2 CPUs
    assert check(nodes, 2) == fresh(nodes, 2)  # asked again: the remembered answer
    grown = [*nodes[:3], dataclasses.replace(nodes[3], cpus=2)]
    assert check(grown, 2) is None
    assert check(grown, 2) == fresh(grown, 2)
    joined = [*nodes, Node(node_sluid="s9", name="n09", cpus=8, mem_mb=1024, gpus=0,
                           gpu_type="")]
    assert check(joined, 4) is None
    assert check(nodes, 4) == fresh(nodes, 4) is not None  # it left again


def test_the_answer_is_per_partition_and_per_demand() -> None:
    nodes = n_nodes_of_1_cpu(3)
    only_n00 = PartitionConfig(name="small", nodes=("n00",))
    assert check(nodes, 1) is None
    assert check(nodes, 1, only_n00) is None
    assert check(nodes, 3, only_n00) == fresh(nodes, 3, only_n00) is not None
    assert check(nodes, 1, PartitionConfig(name="none", nodes=("zz",))) is None  # no members
