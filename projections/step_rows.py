"""Job steps in the views: each job row's ``steps``, folded from the step facts.

A step row: ``step_id``, ``step_sluid``, ``run_sluid``, ``state`` (RUNNING, then COMPLETED,
FAILED, CANCELLED or NODE_FAIL), ``start_ms``, ``end_ms``, ``exit_code``, ``signal``,
``reason``, ``nodes``, ``ntasks``, ``name`` (the command's first word). ``sluice history``
shows them as ``ID.0``, ``ID.1`` after the run's ``ID.batch`` (sacct). A job keeps its last
:data:`STEPS_KEPT` steps.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Any

__all__ = ["STEPS_KEPT", "step_ended", "step_started", "step_tasks_exited"]

STEPS_KEPT = 1000
Row = dict[str, Any]


def _step(job: Row, r: Row) -> Row | None:
    return next((s for s in reversed(job.get("steps", [])) if s["step_sluid"] == r["step_sluid"]),
                None)


def step_started(job: Row, r: Row) -> None:
    """A StepStarted: a new RUNNING step row."""
    if _step(job, r) is not None:
        return
    command = list(r.get("command") or [])
    steps = job.setdefault("steps", [])
    steps.append({
        "step_id": r["step_id"], "step_sluid": r["step_sluid"], "run_sluid": r["run_sluid"],
        "state": "RUNNING", "start_ms": r["time_ms"], "end_ms": 0, "exit_code": 0,
        "signal": 0, "reason": "", "nodes": list(r["nodes"]),
        "ntasks": sum(r.get("tasks_per_node") or []), "cpus_per_task": r.get("cpus_per_task", 1),
        "name": PurePath(command[0]).name if command else "",
    })
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
    if step is None or step["state"] != "RUNNING":
        return
    step.update(state=r["state"], end_ms=r["time_ms"], reason=r.get("reason", ""),
                exit_code=max(step["exit_code"], r["exit_code"]),
                signal=step["signal"] or r.get("signal", 0))
