"""Run by a Slurm shim (``squeue``, ``scancel``…), the CLI's errors begin as Slurm's do
(``squeue: error: …``), and a job id the views do not know is said in scancel's and scontrol's
words; the shim's variable goes no further than the call."""

from __future__ import annotations

import os
import sys
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


@pytest.mark.parametrize("words", [["hold", "99999"], ["release", "99999"],
                                   ["requeue", "99999"]])
def test_scontrol_hold_release_requeue_of_an_unknown_job_say_scontrols_line(
        words: list[str], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from cli import admin, submit

    monkeypatch.setattr(submit, "Client", _NoJobs)
    monkeypatch.setattr(admin, "Client", _NoJobs)
    monkeypatch.setenv(ENV, "scontrol")
    assert main(["scontrol", *words]) == 1
    assert capsys.readouterr().err == "Invalid job id specified for job 99999\n"


def test_a_refused_cancel_is_said_in_scancels_words(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    class _Bobs(_NoJobs):
        def job(self, ref: str) -> dict[str, Any]:
            return {"job_sluid": "sJOB12", "job_id": 12, "user": "bob"}

    def refused(client: Any, verb: str, ref: str, subject: str, name: str,
                record: dict[str, Any], say: Any) -> bool:
        print(say({"reason": "NotOwner", "detail": "alice may not cancel job 12 of bob"}),
              file=sys.stderr)
        return False

    monkeypatch.setattr(job_control, "Client", _Bobs)
    monkeypatch.setattr(job_control, "decided", refused)
    monkeypatch.setenv(ENV, "scancel")
    assert main(["cancel", "12"]) == 1
    assert capsys.readouterr().err == (
        "scancel: error: Kill job error on job id 12: Access/permission denied (NotOwner: "
        "alice may not cancel job 12 of bob)\n")


def test_a_refused_hold_is_said_in_scontrols_words() -> None:
    denial = {"reason": "NotOwner", "detail": "alice may not hold job 12 of bob"}
    assert job_control.refusal_line(denial, "12", "hold") == (
        "Access/permission denied for job 12 (NotOwner: alice may not hold job 12 of bob)")
    plain = {"reason": "Whatever", "detail": "d"}
    assert job_control.refusal_line(plain, "12", "hold") == "sluice hold: 12: refused: Whatever: d"


def test_sbatch_says_error_before_its_own_errors(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["submit", "--sbatch", "nonexist.sh"]) == 1
    assert capsys.readouterr().err == "sbatch: error: Unable to open file nonexist.sh\n"
    (tmp_path / "plain.sh").write_text("hostname\n")
    assert main(["submit", "--sbatch", "plain.sh"]) == 1
    assert capsys.readouterr().err.startswith(
        "sbatch: error: This does not look like a batch script.")


def test_scancel_of_an_ended_job_is_an_error_as_slurms(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    class _Ended(_NoJobs):
        def job(self, ref: str) -> dict[str, Any]:
            return {"job_sluid": f"sJOB{ref}", "job_id": int(ref), "user": "alice",
                    "state": "COMPLETED" if ref == "8" else "RUNNING"}

    sent: list[str] = []
    monkeypatch.setattr(job_control, "Client", _Ended)
    monkeypatch.setattr(job_control, "decided", lambda *args: sent.append(args[2]) or True)
    monkeypatch.setenv(ENV, "scancel")
    assert main(["cancel", "8", "9"]) == 1
    assert sent == ["9"]
    assert capsys.readouterr().err == (
        "scancel: error: Kill job error on job id 8: Job/step already completing or completed\n")


def test_sbatch_wait_prints_nothing_after_its_submitted_line() -> None:
    """Slurm's sbatch --wait only exits with the job's status; a script taking the last word
    of its output got 'FAILED' from Sluice's 'Job 30 ended FAILED (exit code 3)' line."""
    import argparse

    from cli.submit import _says_ends

    assert not _says_ends(argparse.Namespace(parsable=False, sbatch=True))
    assert not _says_ends(argparse.Namespace(parsable=True, sbatch=False))
    assert _says_ends(argparse.Namespace(parsable=False, sbatch=False))  # sluice submit -W


def test_percent_all_is_every_field_with_bars_as_squeue_and_sinfo_build_it() -> None:
    from cli.formats import Column, parse_percent

    codes = {"i": ("job_id", "JOBID"), "A": ("array", "ARRAY_JOB_ID"), "a": ("acct", "ACCOUNT")}
    assert parse_percent("%all", codes, "-o") == [
        Column("acct", "ACCOUNT"), "|", Column("job_id", "JOBID"), "|",
        Column("array", "ARRAY_JOB_ID")]


def test_a_refused_requeue_is_said_in_scontrols_words() -> None:
    pending = {"reason": "JobNotRunning", "detail": "job is PENDING"}
    assert job_control.refusal_line(pending, "35_2", "requeue") == (
        "Job is pending execution for job 35_2 (JobNotRunning: job is PENDING)")
    ended = {"reason": "JobNotRunning", "detail": "job is COMPLETED"}
    assert job_control.refusal_line(ended, "8", "requeue").startswith(
        "Job/step already completing or completed for job 8 ")
    off = {"reason": "RequeueDisabled", "detail": "submitted with no requeue"}
    assert job_control.refusal_line(off, "9", "requeue").startswith(
        "Requested operation is presently disabled for job 9 ")


@pytest.mark.parametrize(("argv", "said"), [
    (["queue", "--bogus"], "squeue: unrecognized option '--bogus'"),
    (["queue", "--bogus=3"], "squeue: unrecognized option '--bogus'"),
    (["queue", "-Z"], "squeue: invalid option -- 'Z'"),
    (["queue", "-o"], "squeue: error: argument -o/--format: expected one argument"),
])
def test_a_usage_error_under_a_shim_is_said_as_slurms_getopt_says_it(
        argv: list[str], said: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(ENV, "squeue")
    with pytest.raises(SystemExit) as ended:
        main(argv)
    assert ended.value.code == 1
    assert capsys.readouterr().err == f'{said}\nTry "squeue --help" for more information\n'
    with pytest.raises(SystemExit) as ended:  # as sluice: argparse's usage and status 2
        main(argv)
    assert ended.value.code == 2
    assert capsys.readouterr().err.startswith("usage: sluice queue")


def test_sacct_of_a_job_id_that_is_no_number_is_fatal_as_slurms(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(ENV, "sacct")
    assert main(["history", "-j", "12,abc"]) == 1
    assert capsys.readouterr().err == "sacct: fatal: Bad job/step specified: abc\n"


def test_srun_without_a_command_is_fatal_as_slurms(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(ENV, "srun")
    assert main(["run"]) == 1
    assert capsys.readouterr().err == "srun: fatal: No command given to execute.\n"
    assert main(["run"]) == 2  # sluice run: a usage error
