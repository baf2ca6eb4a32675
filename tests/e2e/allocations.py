"""What the tests of srun's and salloc's own allocations share: a user's environment outside
any job (Slurm's command names first on ``PATH``) and the allocation's job by its name."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from agents.node.environment import COMPAT_BIN
from tests.e2e.harness import LocalSystem

__all__ = ["ended_named", "job_named", "outside_env"]


def outside_env(system: LocalSystem) -> dict[str, str]:
    """The system's client settings, outside any job, with sbatch/srun/salloc… on ``PATH``."""
    env = {**os.environ, **system.settings.as_env()}
    for name in ("SLUICE_PYTHON", "SLUICE_JOB_SLUID", "SLUICE_RUN_SLUID"):
        env.pop(name, None)
    env["PATH"] = f"{COMPAT_BIN}:{Path(sys.executable).parent}:{env.get('PATH', '')}"
    return env


def job_named(system: LocalSystem, name: str) -> dict[str, object]:
    """The job named ``name`` with its runs and steps ({} while the views do not have it)."""
    jobs = system.client.get("/v1/jobs?all=1")["jobs"]
    found = [j for j in jobs if j["name"] == name]
    assert len(found) <= 1, found
    return dict(system.client.get(f"/v1/jobs/{found[0]['job_sluid']}")["job"]) if found else {}


def ended_named(system: LocalSystem, name: str) -> dict[str, object]:
    """The job named ``name`` once it has ended (waits up to 120 s)."""
    def ended() -> dict[str, object] | None:
        job = job_named(system, name)
        return job if job and job["state"] not in ("PENDING", "RUNNING", "COMPLETING") else None

    return dict(system.wait(ended, 120, f"the allocation {name} to end"))
