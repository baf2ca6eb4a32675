"""Run by a Slurm shim (``squeue``, ``scancel``…), the CLI's errors begin as Slurm's do
(``squeue: error: …``), and a job id the views do not know is said in scancel's and scontrol's
words; the shim's variable goes no further than the call."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from cli import job_control
from cli.client import NoSuchJobError
from cli.main import main
from cli.slurm_program import ENV, in_slurm_words

SHIMS = Path(__file__).resolve().parents[3] / "cli" / "slurm_compat" / "bin"


@pytest.mark.parametrize(("line", "said"), [
    ("sluice queue: error: Invalid user: x", "squeue: error: Invalid user: x"),
    ("sluice queue: -w: bad list", "squeue: error: -w: bad list"),
    ("sluice nodes confirm-down: no", "squeue: error: no"),
    ("sluice: no views", "squeue: error: no views"),
    ("sluice queue: warning: late", "squeue: warning: late"),
    ("squeue: error: already so", "squeue: error: already so"),
    ("srun: job 5 queued and waiting", "srun: job 5 queued and waiting"),
    ("usage: sluice queue [-u USER]", "usage: sluice queue [-u USER]"),
])
def test_a_sluice_prefix_becomes_the_programs_error(line: str, said: str) -> None:
    assert in_slurm_words(line, "squeue") == said


def test_every_shim_names_itself_to_the_cli() -> None:
    for shim in SHIMS.iterdir():
        execs = [w for w in shim.read_text().splitlines() if " exec " in f" {w.strip()}"]
        assert execs, shim.name
        assert all(f"{ENV}={shim.name} exec " in line for line in execs), shim.name


class _NoJobs:
    def __init__(self, settings: Any) -> None:
        del settings

    def job(self, ref: str) -> dict[str, Any]:
        raise NoSuchJobError(f"no job {ref}")


def test_scancel_of_an_unknown_job_says_slurms_error_and_the_variable_is_gone(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(job_control, "Client", _NoJobs)
    monkeypatch.setenv(ENV, "scancel")
    assert main(["cancel", "99999"]) == 1
    assert ENV not in os.environ  # a job submitted or a command run from here never sees it
    assert capsys.readouterr().err == (
        "scancel: error: Kill job error on job id 99999: Invalid job id specified\n")
    assert main(["cancel", "99999"]) == 1  # run as sluice: its own name
    assert capsys.readouterr().err == (
        "sluice cancel: Kill job error on job id 99999: Invalid job id specified\n")


def test_scontrol_update_of_an_unknown_job_says_scontrols_line(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(job_control, "Client", _NoJobs)
    monkeypatch.setenv(ENV, "scontrol")
    assert main(["scontrol", "update", "JobId=99999", "JobName=x"]) == 1
    assert capsys.readouterr().err == "Invalid job id specified for job 99999\n"


def test_a_usage_error_under_scontrol_is_scontrols(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(ENV, "scontrol")
    assert main(["scontrol", "update", "JobId=5"]) != 0
    err = capsys.readouterr().err
    assert err.startswith("scontrol: error: "), err
    assert "sluice" not in err.splitlines()[0], err
