"""``-n`` tasks over ``-N`` nodes, Slurm's way: each node in turn takes the CPUs it has free,
leaving one task for each node after it (``-N2 -n5`` on idle 4-CPU nodes: 4 CPUs and 1)."""

from __future__ import annotations

import pytest

from scheduler import JobStarted
from scheduler.jobs.task_layout import layout_tasks, spread_tasks
from tests.unit.core.gwt import given, nodes, queued, schedule_pass, sluid, spec

J1, J2 = sluid(1), sluid(2)


def _started(outcome_facts: list[object]) -> list[JobStarted]:
    return [f for f in outcome_facts if isinstance(f, JobStarted)]


@pytest.mark.parametrize(("rooms", "ntasks", "want"), [
    ([4, 4], 5, [4, 1]),
    ([4, 4], 8, [4, 4]),
    ([4, 4], 4, [3, 1]),  # as Slurm: -N2 -n4 on idle 4-CPU nodes runs 3 tasks and 1
    ([4, 4, 4], 5, [3, 1, 1]),
    ([2, 4], 5, [2, 3]),
    ([4, 4], 1, [1, 1]),
])
def test_spread_fills_each_node_leaving_one_task_for_each_after_it(
        rooms: list[int], ntasks: int, want: list[int]) -> None:
    assert spread_tasks(ntasks, rooms) == want


@pytest.mark.parametrize(("cpus", "ntasks", "per_task", "want"), [
    ([4, 1], 5, 1, [4, 1]),
    ([4, 4], 5, 1, [3, 2]),  # exclusive whole nodes: dealt in turns (Slurm's 3,2)
    ([4, 2], 3, 2, [2, 1]),
    ([1, 1], 3, 1, [2, 1]),  # over-subscribed: in turns over every node
])
def test_layout_deals_tasks_in_turns_up_to_each_nodes_cpus(
        cpus: list[int], ntasks: int, per_task: int, want: list[int]) -> None:
    assert layout_tasks(ntasks, cpus, per_task) == want


def test_n5_on_two_4_cpu_nodes_gets_4_and_1_cpus_and_the_fold_holds_them() -> None:
    outcome = given(nodes("n", 2, cpus=4), queued(J1, spec(nodes_min=2, ntasks=5))).when(
        schedule_pass())
    (started,) = _started(outcome.facts)
    assert (started.alloc_cpus, started.nodes) == ((4, 1), ("n1", "n2"))
    state = outcome.evolved()
    assert state.jobs[J1].alloc == ((4, 0, 0), (1, 0, 0))
    index = state.built_index()
    assert index is not None and index.free_cpus.tolist() == [0, 3]


def test_the_cpus_left_by_a_spread_job_run_another() -> None:
    outcome = given(nodes("n", 2, cpus=4), queued(J1, spec(nodes_min=2, ntasks=5)),
                    queued(J2, spec(ntasks=3))).when(schedule_pass())
    first, second = _started(outcome.facts)
    assert (first.alloc_cpus, second.nodes, second.alloc_cpus) == ((4, 1), ("n2",), (3,))


def test_mem_per_cpu_follows_each_nodes_cpus_and_cpus_per_task_counts() -> None:
    outcome = given(nodes("n", 2, cpus=4, mem_mb=4000),
                    queued(J1, spec(nodes_min=2, ntasks=3, cpus_per_task=2,
                                    mem_per_cpu_mb=500))).when(schedule_pass())
    (started,) = _started(outcome.facts)
    assert (started.alloc_cpus, started.alloc_mem_mb) == ((4, 2), (2000, 1000))


@pytest.mark.parametrize("fields", [
    {"ntasks_per_node": 3, "ntasks": 5},  # --ntasks-per-node: the same on every node
    {"exclusive": True, "ntasks": 5},  # whole nodes
    {"ntasks": 2},  # one task a node
])
def test_uniform_shares_stay_uniform(fields: dict[str, object]) -> None:
    outcome = given(nodes("n", 2, cpus=4), queued(J1, spec(nodes_min=2, **fields))).when(
        schedule_pass())
    (started,) = _started(outcome.facts)
    assert len(set(started.alloc_cpus)) == 1


def test_gpus_of_the_whole_job_keep_the_even_spread() -> None:
    """``-N2 -n5 --gpus-per-task=1`` (5 GPUs of the job, 3 on each node): spread 4+1, node 1
    ran 4 tasks on 3 GPUs; the even share (3+3 CPUs, tasks 3,2) gives each task its GPU.
    ``--gpus-per-node`` is a node's count whatever its tasks, and spreads as before."""
    outcome = given(nodes("n", 2, cpus=4, gpus=4),
                    queued(J1, spec(nodes_min=2, nodes_max=2, ntasks=5, gpus=5))).when(
        schedule_pass())
    (started,) = _started(outcome.facts)
    assert (started.alloc_cpus, started.alloc_gpus) == ((3, 3), (3, 3))
    assert layout_tasks(5, list(started.alloc_cpus)) == [3, 2]
    per_node = given(nodes("n", 2, cpus=4, gpus=4),
                     queued(J1, spec(nodes_min=2, nodes_max=2, ntasks=5, gpus_per_node=2))).when(
        schedule_pass())
    (started,) = _started(per_node.facts)
    assert (started.alloc_cpus, started.alloc_gpus) == ((4, 1), (2, 2))


def test_test_only_counts_the_cpus_a_start_would_hold() -> None:
    """sbatch --test-only of a job that starts later (both nodes busy until J2's limit): the
    tasks' CPUs when they spread (5 for -N2 -n5), the even share's when GPUs of the whole job
    keep it (6 for -N2 -n5 -G 5, as its start holds 3+3)."""
    from scheduler.records import JobTestAnswered, TestSubmitJob
    from tests.unit.core.gwt import started

    def answered(**fields: object) -> int:
        outcome = given(
            nodes("n", 2, cpus=4, gpus=4),
            queued(J2, spec(nodes_min=2, nodes_max=2, ntasks=8, time_limit_s=600)),
            started(J2, ("n1", "n2"), 600, 2),
        ).when(TestSubmitJob(job_sluid=J1, nonce=1,
                             spec=spec(nodes_min=2, nodes_max=2, ntasks=5, **fields)))
        [answer] = outcome.facts
        assert isinstance(answer, JobTestAnswered) and not answer.reason, answer
        assert answer.start_ms > outcome.state.now_ms, answer
        return answer.cpus

    assert (answered(), answered(gpus=5)) == (5, 6)
