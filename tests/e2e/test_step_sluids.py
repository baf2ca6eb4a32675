"""Two sruns of one job that mint the same step SLUID (``srun a & srun b &`` in a batch script
can, 1 in 512 times, in the same millisecond): the second is refused by name
(``StepSluidInUse``) and starts again under a new SLUID; the first runs on untouched. Real
broker, worker, views and node daemon; the colliding srun runs in this process, its first mint
made to return the SLUID the other step holds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agents.node.step_io import StepServer
from cli.main import main
from schemas import SluidGenerator
from tests.e2e.harness import LocalSystem
from tests.e2e.ledger import TEST_USER

pytestmark = [pytest.mark.kafka, pytest.mark.e2e]


def _job(system: LocalSystem, sluid: str) -> dict[str, Any]:
    return dict(system.client.get(f"/v1/jobs/{sluid}")["job"])


def test_an_srun_whose_step_sluid_another_srun_holds_runs_under_a_new_one(
    system: LocalSystem, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    system.start_core()
    system.start_nodes(1)
    system.wait_nodes_idle(1)
    job = system.client.sluids.new()
    system.client.send(job, "SubmitJob", {"job_sluid": job, "spec": {
        "user": TEST_USER, "nodes_min": 1, "command": ["sleep", "300"],
        "workdir": str(tmp_path), "time_limit_s": 600}})
    runs = system.wait(lambda: _job(system, job).get("runs"), 60, "the job to run")
    run = runs[0]["run_sluid"]

    taken = system.client.sluids.new()  # the other srun's step, open while ours starts
    other = StepServer("a" * 32, taken, nodes=frozenset({"n01"}))
    try:
        system.client.send(job, "StartStep", {
            "job_sluid": job, "run_sluid": run, "step_sluid": taken, "user": TEST_USER,
            "nodes": ["n01"], "tasks_per_node": [1], "cpus_per_task": 1,
            "command": ["sleep", "60"], "workdir": str(tmp_path), "env": {},
            "io_address": f"127.0.0.1:{other.port}", "io_token": "a" * 32, "input": "none"})
        system.wait(lambda: [s for s in _job(system, job).get("steps", [])
                             if s["step_sluid"] == taken and s["state"] == "RUNNING"],
                    60, "the other srun's step")

        for key, value in system.settings.as_env().items():
            monkeypatch.setenv(key, value)
        monkeypatch.setenv("SLUICE_JOB_SLUID", job)
        monkeypatch.setenv("SLUICE_RUN_SLUID", run)
        first = iter([taken])
        mint = SluidGenerator.new
        monkeypatch.setattr(SluidGenerator, "new", lambda self: next(first, "") or mint(self))
        # --overlap: beside the other srun's step, which holds the job's only CPU, ours runs
        # at once only so (without it, it would wait for that step to end: Slurm 20.11+)
        status = main(["run", "--input", "none", "--overlap", "--", "echo", "our own step"])
        out = capsys.readouterr()
        assert status == 0, out.out + out.err + system.log_tail()
        assert "our own step" in out.out
    finally:
        other.close()

    denials = system.client.denials(job)
    assert [d["reason"] for d in denials if d["request"] == "StartStep"] == ["StepSluidInUse"]

    def ours_done() -> dict[str, Any] | None:
        steps = {s["step_sluid"]: s for s in _job(system, job).get("steps", [])}
        ours = [s for sluid, s in steps.items() if sluid != taken]
        return steps if len(ours) == 1 and ours[0]["state"] == "COMPLETED" else None

    steps = system.wait(ours_done, 30, "our step to complete in the views")
    assert steps[taken]["state"] == "RUNNING"  # the other srun's step runs on
