"""The batch script of srun's own allocation (:mod:`cli.run_alloc`): hold it for one step.

Run on the allocation's batch host as ``python -I -m cli.alloc_hold`` (the job's environment
names the job and run). It waits until the run's first step has ended and exits with that
step's status: the highest task exit code, else 128 + the signal that ended a task, else 1
when the step ended on a node failure or was cancelled. Srun starts the step as soon as it
sees the job start; a step that does not start within :data:`FIRST_STEP_S` (srun was killed
before it could) ends the allocation, exit 1, rather than hold its nodes until the time limit.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

__all__ = ["FIRST_STEP_S", "main", "step_status"]

FIRST_STEP_S = 60.0
"""How long the allocation waits for srun's step before it gives the nodes back."""
_POLL_S = (0.25, 2.0)
"""The first and the longest wait between two looks at the job (growing by half each time): a
short step gives its nodes back at once, a long one costs a request every 2 s."""


def step_status(step: dict[str, Any]) -> int | None:
    """The exit status of an ended step (its views row); None while it runs or waits."""
    if step.get("state") in ("RUNNING", "PENDING"):
        return None
    if int(step.get("exit_code") or 0) > 0:
        return int(step["exit_code"])
    if int(step.get("signal") or 0) > 0:
        return 128 + int(step["signal"])
    return 0 if step.get("state") == "COMPLETED" else 1


def main() -> int:
    """Wait for the run's first step; exit with its status."""
    from cli.client import ApiError, Client
    from streams.settings import Settings

    job_sluid = os.environ.get("SLUICE_JOB_SLUID", "")
    run_sluid = os.environ.get("SLUICE_RUN_SLUID", "").partition(".")[0]
    if not job_sluid or not run_sluid:
        print("alloc_hold: not inside an allocation", file=sys.stderr)
        return 1
    client = Client(Settings.from_env())
    deadline = time.monotonic() + FIRST_STEP_S
    pause = _POLL_S[0]
    while True:
        try:
            job = client.get(f"/v1/jobs/{job_sluid}")["job"]
        except ApiError:
            job = {}  # the views restart: ask again
        step = next((s for s in job.get("steps") or [] if s.get("run_sluid") == run_sluid),
                    None)
        if step is not None:
            status = step_status(step)
            if status is not None:
                return status
        elif time.monotonic() > deadline:
            print(f"alloc_hold: no step started within {FIRST_STEP_S:g} s: the allocation "
                  "ends", file=sys.stderr)
            return 1
        time.sleep(pause)
        pause = min(pause * 1.5, _POLL_S[1])


if __name__ == "__main__":
    sys.exit(main())
