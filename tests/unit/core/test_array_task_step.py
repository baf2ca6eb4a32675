"""An array task gets all six of Slurm's array variables, ``SLURM_ARRAY_TASK_STEP`` too.

slurmctld sets the step from the ``--array`` text as submitted (the number after its first
``:``, else 1: ``_create_job_array`` in ``job_mgr.c``), with COUNT, MIN and MAX over the array's
ids. Before, the launch carried no step and the node set no ``SLURM_ARRAY_TASK_STEP``, so a
script computing its rank as ``(ID - MIN) / STEP`` divided by nothing (found 2026-12-07)."""

from __future__ import annotations

import pytest

from agents.node.environment import run_environment
from scheduler import JobQueued, LaunchRun, evolve, node_commands
from scheduler.jobs.arrays import array_step
from scheduler.records.wire_commands import to_wire_launch_run
from tests.unit.core.gwt import M, given, nodes, sluid, spec
from tests.unit.core.test_foundation import started

ARRAY = sluid(90)


@pytest.mark.parametrize(("text", "step"), [
    ("1-9:3", 3), ("1,5,7", 1), ("0-15", 1), ("1-9:3%2", 3), ("1-5,10-20:2", 2), ("7", 1),
])
def test_the_step_is_the_number_after_the_first_colon_else_one(text: str, step: int) -> None:
    assert array_step(text) == step


def _array_env(text: str, ids: tuple[int, ...], task: int) -> dict[str, str]:
    """The batch step's environment of task ``task`` of ``--array=text`` (ids ``ids``, job
    ids from 10), from the LaunchRun the shard derives, as the node daemon reads it."""
    tasks = [JobQueued(**M, job_sluid=sluid(i + 1), job_id=10 + i, spec=spec(array=text),
                       array_job_sluid=ARRAY, array_task_id=t) for i, t in enumerate(ids)]
    state = given(nodes("n", 1), *tasks).state
    index = ids.index(task)
    fact = started(sluid(index + 1), 10 + index, ("n1",))
    state = evolve(state, fact)
    [launch] = [c for c in node_commands(state, fact) if isinstance(c, LaunchRun)]
    env = run_environment(to_wire_launch_run(launch), "n1")
    return {k: v for k, v in env.items() if k.startswith("SLURM_ARRAY_")}


def test_a_stepped_range_gets_its_step_and_the_arrays_count_min_and_max() -> None:
    assert _array_env("1-9:3", (1, 4, 7), 4) == {
        "SLURM_ARRAY_JOB_ID": "10", "SLURM_ARRAY_TASK_ID": "4", "SLURM_ARRAY_TASK_COUNT": "3",
        "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "7", "SLURM_ARRAY_TASK_STEP": "3",
    }


def test_a_list_gets_step_one_as_in_slurm() -> None:
    assert _array_env("1,5,7", (1, 5, 7), 7) == {
        "SLURM_ARRAY_JOB_ID": "10", "SLURM_ARRAY_TASK_ID": "7", "SLURM_ARRAY_TASK_COUNT": "3",
        "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "7", "SLURM_ARRAY_TASK_STEP": "1",
    }
