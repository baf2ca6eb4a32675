"""``--export`` with Slurm's meanings (cli/export.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cli.export import job_environment, submitter_umask

UMASK = {"SLURM_UMASK": submitter_umask()}
SHELL = {"PATH": "/usr/bin", "HOME": "/home/a", "KAFKA_BOOTSTRAP": "b:9092",
         "SLUICE_JWT": "token", "SLUICE_HOME": "/x", "TOKEN": "t"}


def test_all_is_the_submitters_environment_without_sluices_own_settings() -> None:
    expected = {"PATH": "/usr/bin", "HOME": "/home/a", "TOKEN": "t", **UMASK,
                "SLURM_SUBMIT_DIR": str(Path.cwd())}
    assert job_environment([], SHELL) == expected
    assert job_environment(["ALL"], SHELL) == expected
    assert job_environment(["ALL,EXTRA=1"], SHELL) == {**expected, "EXTRA": "1"}


def test_none_and_name_lists_give_only_what_is_named() -> None:
    here = {**UMASK, "SLURM_SUBMIT_DIR": str(Path.cwd())}
    assert job_environment(["NONE"], SHELL) == here
    assert job_environment(["A=1,TOKEN"], SHELL) == {"A": "1", "TOKEN": "t", **here}
    assert job_environment(["A=1", "B=x=y"], SHELL) == {"A": "1", "B": "x=y", **here}
    assert job_environment(["SLUICE_JWT"], SHELL) == {"SLUICE_JWT": "token", **here}


def test_every_mode_carries_the_directory_it_was_submitted_from_as_sbatch_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Slurm's SLURM_SUBMIT_DIR is where sbatch ran, not --chdir, whatever --export is (the
    node gave the working directory); a value inherited from a job or named is replaced."""
    monkeypatch.chdir(tmp_path)
    inside = {**SHELL, "SLURM_SUBMIT_DIR": "/outer/job"}
    for export in ([], ["ALL"], ["NONE"], ["A=1"], ["SLURM_SUBMIT_DIR=/x"],
                   ["ALL,SLURM_SUBMIT_DIR=/x"]):
        assert job_environment(export, inside)["SLURM_SUBMIT_DIR"] == str(tmp_path.resolve())


def test_none_and_lists_keep_the_submitters_slurm_variables_as_sbatch_does() -> None:
    shell = {**SHELL, "SLURM_CONF": "/etc/slurm.conf", "SLURMD_X": "1", "SLURPY": "no"}
    env = job_environment(["NONE"], shell)
    assert (env["SLURM_CONF"], env["SLURMD_X"]) == ("/etc/slurm.conf", "1")
    assert "SLURPY" not in env and "HOME" not in env
    assert job_environment(["SLURM_CONF=/mine"], shell)["SLURM_CONF"] == "/etc/slurm.conf"


def test_every_mode_carries_the_submitters_umask_as_sbatch_does() -> None:
    """The node starts the job under it (its output was world-readable under the daemon's
    022 for a user whose umask is 077: tests/unit/node/test_exec_helper.py)."""
    old = os.umask(0o077)
    try:
        assert submitter_umask() == "0077"
        for export in ([], ["NONE"], ["A=1"]):
            assert job_environment(export, SHELL)["SLURM_UMASK"] == "0077"
        inside = {**SHELL, "SLURM_UMASK": "0027"}  # submitted from a job: its own stays
        assert job_environment(["NONE"], inside)["SLURM_UMASK"] == "0027"
    finally:
        os.umask(old)


def test_bad_export_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="ALL and NONE"):
        job_environment(["ALL,NONE"], SHELL)
    with pytest.raises(ValueError, match="not NAME=VALUE"):
        job_environment(["=1"], SHELL)
