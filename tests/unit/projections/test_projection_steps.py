"""The views of job steps, batch scripts and array ids (issue 15): rows ``steps``, ``script``
(one job at a time, private) and ``array_job_id`` (ID_TASK)."""

from __future__ import annotations

from projections.api_auth import Viewer, private_view
from projections.views import Views
from tests.unit.projections.ledger_builder import LedgerBuilder


def fold(b: LedgerBuilder) -> Views:
    views = Views()
    for written in b.facts:
        views.apply(*written)
    return views


def step_ids(job: str, run: str, step: str, step_id: int) -> dict[str, object]:
    return {"job_sluid": job, "job_id": 1, "run_sluid": run, "step_sluid": step,
            "step_id": step_id}


def test_steps_go_from_running_to_their_end_with_the_worst_exit() -> None:
    b = LedgerBuilder()
    b.node("n1")
    b.node("n2")
    job = b.queued(nodes_min=2)
    run = b.started(job, ["n1", "n2"])
    first, second = b.sluid(), b.sluid()
    b.fact("StepStarted", **step_ids(job, run, first, 0), user="alice", nodes=["n1", "n2"],
           tasks_per_node=[2, 2], cpus_per_task=1, command=["/usr/bin/python3", "x.py"],
           workdir="/w", env={}, io_address="n1:1", io_token="t")
    b.fact("StepTasksExited", **step_ids(job, run, first, 0), node_name="n2", exit_code=3,
           signal=0)
    b.fact("StepEnded", **step_ids(job, run, first, 0), state="FAILED", exit_code=3, signal=0,
           reason="a task on n2 ended with exit code 3", unfinished_nodes=["n1"])
    b.fact("StepStarted", **step_ids(job, run, second, 1), user="alice", nodes=["n1"],
           tasks_per_node=[1], cpus_per_task=1, command=["true"], workdir="/w", env={},
           io_address="n1:1", io_token="t")
    steps = fold(b).jobs[job]["steps"]
    assert [(s["step_id"], s["state"], s["exit_code"], s["ntasks"], s["name"]) for s in steps] \
        == [(0, "FAILED", 3, 4, "python3"), (1, "RUNNING", 0, 1, "true")]


def test_the_script_is_kept_for_the_job_and_private_to_its_owner() -> None:
    b = LedgerBuilder()
    job = b.queued(script="#!/bin/sh\nsrun hostname\n")
    views = fold(b)
    row = views.jobs[job]
    assert row["script"] == "#!/bin/sh\nsrun hostname\n"
    assert "script" in private_view(row, Viewer("alice"), True, ())
    assert "script" not in private_view(row, Viewer("mallory"), True, ())


def test_array_tasks_carry_the_arrays_job_id() -> None:
    b = LedgerBuilder()
    array = b.sluid()
    ids = []
    for task in (0, 1, 2):
        job = b.sluid()
        ids.append(job)
        b.job_ids[job] = len(b.job_ids) + 5
        b.fact("JobQueued", job_sluid=job, job_id=b.job_ids[job],
               spec={**b.specs.get(job, {}), "user": "alice", "array": "0-2"},
               array_job_sluid=array, array_task_id=task)
    views = fold(b)
    assert [(views.jobs[j]["array_job_id"], views.jobs[j]["array_task_id"]) for j in ids] == [
        (5, 0), (5, 1), (5, 2)]
    assert views.job("5_2") is views.jobs[ids[2]]
    assert views.job("5_9") is None and views.job("6_1") is None


def _pending(b: LedgerBuilder, job: str, run: str, step: str) -> None:
    ids = {k: v for k, v in step_ids(job, run, step, 0).items() if k != "step_id"}
    b.fact("StepPending", **ids, user="alice", nodes=["n1"], tasks_per_node=[1],
           cpus_per_task=1, command=["/bin/sleep", "9"], workdir="/w", env={},
           io_address="n1:1", io_token="t", exact=True, reason="Requested nodes are busy")


def test_a_waiting_step_is_a_pending_row_without_an_id_until_its_start_numbers_it() -> None:
    b = LedgerBuilder()
    b.node("n1")
    job = b.queued()
    run = b.started(job, ["n1"])
    step = b.sluid()
    _pending(b, job, run, step)
    [row] = fold(b).jobs[job]["steps"]
    assert (row["state"], row["step_id"], row["nodes"], row["ntasks"], row["reason"]) == (
        "PENDING", -1, [], 1, "Requested nodes are busy")
    b.fact("StepStarted", **step_ids(job, run, step, 3), user="alice", nodes=["n1"],
           tasks_per_node=[1], cpus_per_task=1, command=["/bin/sleep", "9"], workdir="/w",
           env={}, io_address="n1:1", io_token="t", alloc_cpus=[1], alloc_mem_mb=[0],
           alloc_gpus=[0], waited=True)
    [row] = fold(b).jobs[job]["steps"]
    assert (row["state"], row["step_id"], row["nodes"], row["alloc_cpus"], row["reason"]) == (
        "RUNNING", 3, ["n1"], [1], "")


def test_a_step_that_ended_while_it_waited_keeps_no_id_and_sacct_does_not_list_it() -> None:
    from cli.history_cmd import _run_steps

    b = LedgerBuilder()
    b.node("n1")
    job = b.queued()
    run = b.started(job, ["n1"])
    step = b.sluid()
    _pending(b, job, run, step)
    b.fact("StepEnded", **step_ids(job, run, step, -1), state="CANCELLED", exit_code=0,
           signal=0, reason="cancelled by alice", unfinished_nodes=[])
    row = fold(b).jobs[job]
    assert [(s["state"], s["step_id"]) for s in row["steps"]] == [("CANCELLED", -1)]
    assert _run_steps(row, {"run_sluid": run}) == []
