"""``--export`` with Slurm's meanings (cli/export.py)."""

from __future__ import annotations

import pytest

from cli.export import job_environment

SHELL = {"PATH": "/usr/bin", "HOME": "/home/a", "KAFKA_BOOTSTRAP": "b:9092",
         "SLUICE_JWT": "token", "SLUICE_HOME": "/x", "TOKEN": "t"}


def test_all_is_the_submitters_environment_without_sluices_own_settings() -> None:
    expected = {"PATH": "/usr/bin", "HOME": "/home/a", "TOKEN": "t"}
    assert job_environment([], SHELL) == expected
    assert job_environment(["ALL"], SHELL) == expected
    assert job_environment(["ALL,EXTRA=1"], SHELL) == {**expected, "EXTRA": "1"}


def test_none_and_name_lists_give_only_what_is_named() -> None:
    assert job_environment(["NONE"], SHELL) == {}
    assert job_environment(["A=1,TOKEN"], SHELL) == {"A": "1", "TOKEN": "t"}
    assert job_environment(["A=1", "B=x=y"], SHELL) == {"A": "1", "B": "x=y"}
    assert job_environment(["SLUICE_JWT"], SHELL) == {"SLUICE_JWT": "token"}  # named: passed


def test_bad_export_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="ALL and NONE"):
        job_environment(["ALL,NONE"], SHELL)
    with pytest.raises(ValueError, match="not NAME=VALUE"):
        job_environment(["=1"], SHELL)
