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
    assert parts == [
        {"name": "gpu", "default": True, "state": "UP", "max_time_s": 3600, "nodes": None},
        {"name": "debug", "default": False, "state": "DRAIN", "max_time_s": 0,
         "nodes": ["n1", "n2"]},
    ]
