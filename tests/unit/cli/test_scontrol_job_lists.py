"""scontrol's hold, uhold, release, requeue and requeuehold take a job list, as Slurm's:
comma-separated ids over one word or several (``scontrol release 45,46``). Before,
``45,46`` was looked up as one job ("no job 45,46", exit 1) and ``requeuehold`` was not
known (the usage line, exit 2) (found 2026-12-07)."""

from __future__ import annotations

import pytest

from cli import slurm_cmds
from cli.main import main


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    calls: list[list[str]] = []
    monkeypatch.setattr(slurm_cmds, "_sluice", lambda argv: calls.append(argv) or 0)
    return calls


@pytest.mark.parametrize(("words", "argv"), [
    (["release", "45,46"], ["release", "45", "46"]),
    (["hold", "45,46", "47"], ["hold", "45", "46", "47"]),
    (["uhold", "45"], ["hold", "--uhold", "45"]),
    (["requeue", "45,"], ["requeue", "45"]),
    (["requeuehold", "45,46"], ["requeue", "--hold", "45", "46"]),
    (["requeuehold", "State=SpecialExit", "45"], ["requeue", "--hold", "45"]),
    (["release", "45_[1,3],47"], ["release", "45_1", "45_3", "47"]),  # the tasks it names
    (["hold", "45_[2-3]"], ["hold", "45_2", "45_3"]),
])
def test_a_job_list_is_every_id_it_names(words: list[str], argv: list[str],
                                         sent: list[list[str]]) -> None:
    assert main(["scontrol", *words]) == 0
    assert sent == [argv]
