"""scontrol's global options anywhere on the line (``-o`` one line a record, ``-d`` accepted),
``show jobid``, ``show step[s]`` of the running srun steps (they were refused as unrecognized
arguments, ignored, or showed the first id alone), and ``show job`` of several ids refused as
scontrol refuses them."""

from __future__ import annotations

from typing import Any

import pytest

from cli import scontrol_show, views
from cli.client import ApiError
from cli.main import main
from cli.scontrol_show import entity, global_options, one_line


def _job(job_id: int, **more: Any) -> dict[str, Any]:
    return {"job_id": job_id, "job_sluid": f"s{job_id}", "name": "x", "user": "nobody-here",
            "state": "RUNNING", "start_ms": 1_796_000_000_000, "submit_ms": 1_796_000_000_000,
            "nodes": ["node01"], "partition": "main", "run_sluid": f"r{job_id}",
            "time_limit_s": 60, **more}


STEP = {"step_id": 0, "step_sluid": "t0", "run_sluid": "r91", "state": "RUNNING",
        "start_ms": 1_796_000_100_000, "nodes": ["node01", "node02"], "ntasks": 2,
        "cpus_per_task": 1, "name": "hostname"}
JOBS = {"91": _job(91, steps=[STEP, {**STEP, "step_id": 1, "state": "COMPLETED"}]),
        "92": _job(92)}


class _Views:
    def __init__(self, settings: Any) -> None:
        del settings

    def get(self, path: str) -> dict[str, Any]:
        if path == "/v1/jobs":
            return {"jobs": list(JOBS.values())}
        ref = path.rpartition("/")[2]
        if ref not in JOBS:
            raise ApiError(f"no job {ref}")
        return {"job": JOBS[ref]}

    def job(self, ref: str) -> dict[str, Any]:
        return self.get(f"/v1/jobs/{ref}")["job"]


@pytest.fixture(autouse=True)
def _views(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(views, "Client", _Views)
    monkeypatch.setattr(scontrol_show, "Client", _Views)


def test_the_options_go_anywhere_and_the_entity_is_a_prefix() -> None:
    options, words = global_options(["-o", "show", "job", "91", "--details", "-Qd"])
    assert words == ["show", "job", "91"]
    assert (options.oneliner, options.details, options.quiet) == (True, True, True)
    assert [entity(w) for w in ("jobid=12", "j", "JOBS", "st", "steps", "s", "pa")] == [
        ("job", "12"), ("job", None), ("job", None), ("step", None), ("step", None),
        ("s", None), ("partition", None)]
    assert one_line("A=1 B=2\n   C=3\n\nA=4\n   C=5\n") == "A=1 B=2 C=3\nA=4 C=5\n"


@pytest.mark.parametrize("argv", [["-o", "show", "job", "91"], ["show", "job", "91", "-o"],
                                  ["--oneliner", "-d", "show", "jobid", "91"],
                                  ["show", "jobid=91", "--details", "--oneliner"]])
def test_oneliner_prints_the_record_on_one_line(argv: list[str],
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scontrol", *argv]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.startswith("JobId=91 JobName=x UserId=nobody-here ")
    assert " JobState=RUNNING " in out and "   " not in out


@pytest.mark.parametrize("argv", [["show", "job", "91", "92"], ["show", "jobid=91", "92"],
                                  ["-o", "show", "job", "91", "92"],
                                  ["show", "node", "node01", "node02"]])
def test_several_ids_are_refused_as_scontrol_refuses_them(
        argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """scontrol's ``_show_it`` takes one value: ``too many arguments for keyword:show``, exit 1,
    nothing shown (Sluice showed each record, exit 0: found 2026-12-07)."""
    assert main(["scontrol", *argv]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err == "too many arguments for keyword:show\n"
    assert main(["scontrol", "-Q", *argv]) == 1  # -Q: the error is not printed, the status is
    assert capsys.readouterr() == ("", "")


def test_show_steps_prints_the_running_srun_steps(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scontrol", "show", "steps"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("StepId=91.0 UserId=nobody-here StartTime=")
    assert lines[0].endswith(" TimeLimit=UNLIMITED")
    assert lines[1] == "   State=RUNNING Partition=main NodeList=node[01-02]"
    assert lines[2] == "   Nodes=2 CPUs=2 Tasks=2 Name=hostname Network=(null)"
    assert "StepId=91.1" not in "\n".join(lines)  # ended: no longer slurmctld's
    assert main(["scontrol", "-o", "show", "step", "91.0"]) == 0
    assert capsys.readouterr().out.count("\n") == 1
    assert main(["scontrol", "show", "step", "91.1"]) == 1
    assert capsys.readouterr().out == "Job step 91.1 not found\n"
    assert main(["scontrol", "show", "step", "92"]) == 1
    assert capsys.readouterr().out == "Job step 92. not found\n"
    assert main(["scontrol", "show", "step", "99"]) == 1
    assert "slurm_get_job_steps(99) failed: Invalid job id specified" in (
        capsys.readouterr().err)
