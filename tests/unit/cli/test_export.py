"""``--export`` with Slurm's meanings (cli/export.py)."""

from __future__ import annotations

import os

import pytest

from cli.export import job_environment, submitter_umask

UMASK = {"SLURM_UMASK": submitter_umask()}
SHELL = {"PATH": "/usr/bin", "HOME": "/home/a", "KAFKA_BOOTSTRAP": "b:9092",
         "SLUICE_JWT": "token", "SLUICE_HOME": "/x", "TOKEN": "t"}


def test_all_is_the_submitters_environment_without_sluices_own_settings() -> None:
    expected = {"PATH": "/usr/bin", "HOME": "/home/a", "TOKEN": "t", **UMASK}
    assert job_environment([], SHELL) == expected
    assert job_environment(["ALL"], SHELL) == expected
    assert job_environment(["ALL,EXTRA=1"], SHELL) == {**expected, "EXTRA": "1"}


def test_none_and_name_lists_give_only_what_is_named() -> None:
    assert job_environment(["NONE"], SHELL) == UMASK
    assert job_environment(["A=1,TOKEN"], SHELL) == {"A": "1", "TOKEN": "t", **UMASK}
    assert job_environment(["A=1", "B=x=y"], SHELL) == {"A": "1", "B": "x=y", **UMASK}
    assert job_environment(["SLUICE_JWT"], SHELL) == {"SLUICE_JWT": "token", **UMASK}


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
