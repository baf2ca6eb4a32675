"""What the Slurm-style commands read from the views: an array named by its SLUID, the spec's
node options, and the partitions a cluster ConfigApplied announces."""

from __future__ import annotations

from projections.views import Views
from tests.unit.projections.ledger_builder import SPEC_DEFAULTS, LedgerBuilder


def fold(b: LedgerBuilder) -> Views:
    views = Views()
    for name, record in b.facts:
        views.apply(name, record)
    return views


def test_an_arrays_sluid_names_its_first_task_and_the_options_are_kept() -> None:
    b = LedgerBuilder()
    array = b.sluid()
    spec = {**SPEC_DEFAULTS, "array": "0-2", "constraint": "ssd", "nodelist": "n[1-2]",
            "signal": "B:USR1@60", "mail_type": "END"}
    tasks = [b.sluid() for _ in range(3)]
    for task_id, task in enumerate(tasks):
        b.fact("JobQueued", job_sluid=task, job_id=7 + task_id, spec=spec,
               array_job_sluid=array, array_task_id=task_id)
    views = fold(b)
    first = views.job(array)
    assert first is not None and (first["job_id"], first["array_task_id"]) == (7, 0)
    assert (first["constraint"], first["nodelist"], first["signal_spec"],
            first["mail_type"]) == ("ssd", "n[1-2]", "B:USR1@60", "END")
    assert views.job(b.sluid()) is None


def test_a_cluster_config_announces_its_partitions() -> None:
    b = LedgerBuilder()
    b.fact("ConfigApplied", config_sluid=b.sluid(), kind="cluster", digest="d", text="",
           default_partition="gpu", blocks={}, private_jobs=False, privileged=[],
           partition_names=["gpu", "debug"], partition_states=["UP", "DRAIN"],
           partition_max_times=[3600, 0], partition_nodes=["", "n[1-2]"])
    parts = fold(b).configs["cluster"]["partitions"]
    unrecorded = {"default_time_s": 0, "max_nodes": 0, "allow_qos": [], "priority_tier": 1,
                  "priority_job_factor": 1}  # a fact before release v4's partition fields
    assert parts == [
        {"name": "gpu", "default": True, "state": "UP", "max_time_s": 3600, "nodes": None,
         **unrecorded},
        {"name": "debug", "default": False, "state": "DRAIN", "max_time_s": 0,
         "nodes": ["n1", "n2"], **unrecorded},
    ]


ADMIN_CLUSTER = """\
Nodes:
  - NodeName: n[1-3]
    CPUs: 8
Partitions:
  - PartitionName: batch
    Nodes: n[1-2]
    Default: YES
    MaxTime: 1-00:00:00
    DefaultTime: 60
    MaxNodes: 6
  - PartitionName: debug
    Nodes: n3
    MaxTime: 30
    PriorityTier: 10
    PriorityJobFactor: 2
    AllowQos: [normal, high]
QOS:
  - Name: normal
  - Name: high
"""


def test_a_cluster_config_moves_the_registered_nodes_into_its_partitions() -> None:
    """``scontrol show node`` (Partitions=) and ``/v1/nodes?partition=`` read a node row's
    partitions: they once kept the ones of the node's registration (``main`` of the embedded
    default) after a configuration moved the node into ``batch``."""
    b = LedgerBuilder()
    for name in ("n1", "n2", "n3", "n4"):
        b.node(name)
    b.config("cluster", ADMIN_CLUSTER)
    views = fold(b)
    assert [views.nodes[n]["partitions"] for n in ("n1", "n2", "n3", "n4")] == [
        ["batch"], ["batch"], ["debug"], []]
    b.config("cluster", "")  # the embedded default: one partition of every node
    views = fold(b)
    assert {n: views.nodes[n]["partitions"] for n in ("n1", "n3")} == {
        "n1": ["main"], "n3": ["main"]}


def test_a_cluster_configs_partitions_carry_what_scontrol_show_partition_prints() -> None:
    b = LedgerBuilder()
    b.config("cluster", ADMIN_CLUSTER)
    batch, debug = fold(b).configs["cluster"]["partitions"]
    assert (batch["default_time_s"], batch["max_nodes"], batch["allow_qos"],
            batch["priority_tier"], batch["priority_job_factor"]) == (3600, 6, [], 1, 1)
    assert (debug["default_time_s"], debug["max_nodes"], debug["allow_qos"],
            debug["priority_tier"], debug["priority_job_factor"]) == (0, 0, ["normal", "high"],
                                                                      10, 2)
