"""The fold's fast copy of a job equals ``dataclasses.replace``."""

from __future__ import annotations

from dataclasses import fields, replace

import pytest

from scheduler.records import JobSpec
from scheduler.shard.model import Demand, Job, job_with

DEMAND = Demand(
    nodes_min=2, nodes_max=3, cpus=4, mem_mb=100, gpus=1, gpu_type="h100", exclusive=False
)
JOB = Job(
    job_sluid="s1",
    job_id=7,
    spec=JobSpec(name="x", user="u", command=("a",)),
    submit_ms=5,
    partition="main",
    qos="normal",
    account="a",
    time_limit_s=60,
    demand=DEMAND,
    nodes=("n1", "n2"),
    alloc=((4, 100, 1), (4, 100, 1)),
)


def test_job_with_equals_replace_for_every_field() -> None:
    before = replace(JOB)
    for f in fields(Job):
        value = getattr(JOB, f.name)
        other = (
            value + 1
            if isinstance(value, int) and not isinstance(value, bool)
            else (not value if isinstance(value, bool) else value)
        )
        changed = job_with(JOB, **{f.name: other})
        assert changed == replace(JOB, **{f.name: other})
        assert changed is not JOB and before == JOB  # the original is untouched
    assert job_with(JOB) == JOB


def test_job_with_sets_several_fields_in_any_order_as_replace_does() -> None:
    changes = {"state": "RUNNING", "reason": "None", "start_ms": 7, "nodes": ("n3",)}
    expected = replace(JOB, **changes)
    assert job_with(JOB, **changes) == expected
    assert job_with(JOB, **dict(reversed(changes.items()))) == expected
    assert job_with(job_with(JOB, start_ms=3), **changes) == expected


def test_job_with_refuses_an_unknown_field() -> None:
    with pytest.raises(TypeError):
        job_with(JOB, colour="red")
