"""An array task's SLURM_ARRAY_* values are the whole array's, as submitted, even once tasks
have ended and been purged from the shard (Slurm keeps them for the array's life). Before, they
were computed over the tasks the shard still held: after MinJobAge purged tasks 1 and 3 of
``--array=1-5:2``, task 5 saw COUNT 1, MIN 5 and an array id of its own (found 2026-12-07)."""

from __future__ import annotations

from scheduler import JobQueued, LaunchRun, evolve, node_commands
from tests.unit.core.gwt import M, given, nodes, sluid, spec
from tests.unit.core.test_foundation import started

ARRAY, T1, T3, T5 = sluid(9), sluid(1), sluid(3), sluid(5)


def _task(job_sluid: str, job_id: int, task_id: int) -> JobQueued:
    return JobQueued(**M, job_sluid=job_sluid, job_id=job_id, spec=spec(array="1-5:2"),
                     array_job_sluid=ARRAY, array_task_id=task_id)


def _launch(*tasks: JobQueued) -> LaunchRun:
    state = given(nodes("n", 1), *tasks).state
    fact = started(T5, 12, ("n1",))
    state = evolve(state, fact)
    [launch] = [c for c in node_commands(state, fact) if isinstance(c, LaunchRun)]
    return launch


def test_the_arrays_values_once_its_first_tasks_are_purged() -> None:
    launch = _launch(_task(T5, 12, 5))  # tasks 1 (job 10) and 3 (job 11) purged
    assert (launch.array_job_id, launch.array_task_id, launch.array_task_count,
            launch.array_task_min, launch.array_task_max) == (10, 5, 3, 1, 5)


def test_the_same_values_while_every_task_is_held() -> None:
    launch = _launch(_task(T1, 10, 1), _task(T3, 11, 3), _task(T5, 12, 5))
    assert (launch.array_job_id, launch.array_task_count, launch.array_task_min,
            launch.array_task_max) == (10, 3, 1, 5)
