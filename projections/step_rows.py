"""Job steps in the views: each job row's ``steps``, folded from the step facts.

A step row: ``step_id``, ``step_sluid``, ``run_sluid``, ``state`` (RUNNING, then COMPLETED,
FAILED, CANCELLED or NODE_FAIL), ``start_ms``, ``end_ms``, ``exit_code``, ``signal``,
``reason``, ``nodes``, ``ntasks``, ``name`` (the command's first word), ``alloc_cpus`` (the
CPUs it holds on each node), ``overlap``. ``sluice history`` shows them as ``ID.0``, ``ID.1``
after the run's ``ID.batch`` (sacct). A job keeps its last :data:`STEPS_KEPT` steps.

A step that waits for the job's resources (``StepPending``) has a row too, for its srun:
``state`` PENDING, ``step_id`` -1 (a step gets its id when it starts, as Slurm's), no nodes and
``reason`` the shard's; its ``StepStarted`` makes it a RUNNING step with its id, and a
``StepEnded`` before that (the run ended, srun cancelled it) ends it with ``step_id`` still -1:
a step that never ran, which sacct, scontrol and scancel do not show (Slurm has no record of
it).
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Any

__all__ = ["STEPS_KEPT", "step_ended", "step_pending", "step_started", "step_tasks_exited"]

STEPS_KEPT = 1000
Row = dict[str, Any]


def _step(job: Row, r: Row) -> Row | None:
    return next((s for s in reversed(job.get("steps", [])) if s["step_sluid"] == r["step_sluid"]),
                None)


def step_pending(job: Row, r: Row) -> None:
    """A StepPending: a PENDING step row, without an id (-1) or nodes yet."""
    if _step(job, r) is not None:
        return
    _append(job, {**_row(r), "step_id": -1, "state": "PENDING", "start_ms": 0, "nodes": [],
                  "reason": r.get("reason", ""), "pending_ms": r["time_ms"]})


def step_started(job: Row, r: Row) -> None:
    """A StepStarted: a new RUNNING step row (the PENDING one made RUNNING, if it waited)."""
    step = _step(job, r)
    if step is not None and step["state"] != "PENDING":
        return
    row = {**_row(r), "step_id": r["step_id"], "state": "RUNNING", "start_ms": r["time_ms"],
           "nodes": list(r["nodes"]), "alloc_cpus": list(r.get("alloc_cpus") or []),
           "overlap": bool(r.get("overlap"))}
    if step is not None:
        step.update(row, reason="")
        return
    _append(job, row)


def _row(r: Row) -> Row:
    command = list(r.get("command") or [])
    return {"step_sluid": r["step_sluid"], "run_sluid": r["run_sluid"], "end_ms": 0,
            "exit_code": 0, "signal": 0, "reason": "",
            "ntasks": sum(r.get("tasks_per_node") or []),
            "cpus_per_task": r.get("cpus_per_task", 1),
            "name": PurePath(command[0]).name if command else ""}


def _append(job: Row, row: Row) -> None:
    steps = job.setdefault("steps", [])
    steps.append(row)
    del steps[:-STEPS_KEPT]


def step_tasks_exited(job: Row, r: Row) -> None:
    """A StepTasksExited: the worst exit so far (the step may go on on other nodes)."""
    step = _step(job, r)
    if step is not None and step["state"] == "RUNNING" and r["exit_code"] > step["exit_code"]:
        step["exit_code"] = r["exit_code"]
    if step is not None and r.get("signal") and not step["signal"]:
        step["signal"] = r["signal"]


def step_ended(job: Row, r: Row) -> None:
    """A StepEnded: the step's final state and exit code."""
    step = _step(job, r)
    if step is None or step["state"] not in ("RUNNING", "PENDING"):
        return
    step.update(state=r["state"], end_ms=r["time_ms"], reason=r.get("reason", ""),
                exit_code=max(step["exit_code"], r["exit_code"]),
                signal=step["signal"] or r.get("signal", 0))
