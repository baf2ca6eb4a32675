"""A job of ``-p a,b`` that can never run in one of its partitions (one partition admitting it
admits it) does not block that partition: it held every later job there at ``Priority``, for
good under ``sched/builtin`` (no backfill to start them), as Slurm does not (a partition is
failed for a job only when it is busy, not for ``ESLURM_REQUESTED_NODE_CONFIG_UNAVAILABLE``)."""

from __future__ import annotations

import pytest

from scheduler import JobPending, JobStarted
from tests.unit.core.gwt import given, queued, schedule_pass, sluid, spec, started
from tests.unit.core.test_partition_list import CONFIG, J1, J2, J3, _cluster

FIFO = CONFIG + "SchedulerType: sched/builtin\n"


@pytest.mark.parametrize("fields", [
    {"nodes_min": 2, "nodes_max": 2},  # b has one node
    {"nodelist": "a2"},  # a node of a alone
])
def test_a_partition_that_can_never_run_the_list_job_is_not_blocked(
        fields: dict[str, object]) -> None:
    """a is full (J1 runs on both its nodes); J2 (b first, tier 5) can run only in a; J3 of b,
    after it in the queue, starts on b's idle node."""
    outcome = given(
        _cluster(),
        queued(J1, spec(partition="a", nodes_min=2, nodes_max=2, ntasks=8), partition="a"),
        started(J1, ("a1", "a2"), 0, 1),
        queued(J2, spec(partition="a,b", **fields), partition="b,a"),
        queued(J3, spec(partition="b"), partition="b"),
        config=FIFO,
    ).when(schedule_pass())
    starts = {f.job_sluid: f.nodes for f in outcome.facts if isinstance(f, JobStarted)}
    pending = {f.job_sluid: f.reason for f in outcome.facts if isinstance(f, JobPending)}
    assert starts == {J3: ("b1",)}, (starts, pending)
    assert pending == {J2: "Resources"}


def test_a_partition_the_list_job_fits_but_is_busy_is_still_blocked() -> None:
    """a is full, b's node has 2 CPUs free of 4: J2 (4 tasks) could run in b, so J3 of b (one
    task, which would fit) waits behind it with Priority, as behind a job of b alone."""
    j4 = sluid(4)
    outcome = given(
        _cluster(),
        queued(J1, spec(partition="a", nodes_min=2, nodes_max=2, ntasks=8), partition="a"),
        started(J1, ("a1", "a2"), 0, 1),
        queued(j4, spec(partition="b", ntasks=2), partition="b"),
        started(j4, ("b1",), 0, 4),
        queued(J2, spec(partition="a,b", ntasks=4), partition="b,a"),
        queued(J3, spec(partition="b"), partition="b"),
        config=FIFO,
    ).when(schedule_pass())
    pending = {f.job_sluid: f.reason for f in outcome.facts if isinstance(f, JobPending)}
    assert not [f for f in outcome.facts if isinstance(f, JobStarted)]
    assert pending == {J2: "Resources", J3: "Priority"}
