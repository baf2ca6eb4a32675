"""``scontrol show job|node`` of one the system does not have says it in scontrol's words, and
``-Q`` says nothing (exit 1 both ways). Before, it printed ``sluice: no job 99999``, also with
``-Q``, which docs/slurm-commands.md says drops that line (found 2026-12-07)."""

from __future__ import annotations

from typing import Any

import pytest

from cli import scontrol_show, views
from cli.client import ApiError
from cli.main import main


class _Views:
    def __init__(self, settings: Any) -> None:
        del settings

    def get(self, path: str) -> dict[str, Any]:
        if path.startswith("/v1/nodes?") or path == "/v1/nodes":
            return {"nodes": []}
        raise ApiError(f"no {path.split('/')[2][:-1]} {path.rpartition('/')[2]}")


@pytest.fixture(autouse=True)
def _views(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(views, "Client", _Views)
    monkeypatch.setattr(scontrol_show, "Client", _Views)


@pytest.mark.parametrize(("argv", "out", "err"), [
    (["show", "job", "99999"], "", "slurm_load_jobs error: Invalid job id specified\n"),
    (["show", "job", "abc"], "", "scontrol_print_job error: Invalid job id specified\n"),
    (["show", "node", "nodeX"], "Node nodeX not found\n", ""),
])
def test_what_is_not_there_is_said_as_scontrol_says_it(
        argv: list[str], out: str, err: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scontrol", *argv]) == 1
    assert capsys.readouterr() == (out, err)
    assert main(["scontrol", "-Q", *argv]) == 1
    assert capsys.readouterr() == ("", "")


def test_an_array_expression_is_refused_as_scontrol_show_job_refuses_it(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Slurm's scontrol_print_job takes digits, ``_`` and ``+`` only: ``35_[1-2]`` is
    ``Invalid job id specified`` there too (src/scontrol/info_job.c)."""
    assert main(["scontrol", "show", "job", "35_[1-2]"]) == 1
    assert capsys.readouterr() == ("", "scontrol_print_job error: Invalid job id specified\n")


def test_a_task_an_existing_array_lacks_is_not_found(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from cli import slurm_cmds

    def sluice(argv: list[str]) -> int:
        if argv == ["show", "job", "35"]:
            print("JobId=35 ArrayJobId=35 ArrayTaskId=1")
            return 0
        print(f"sluice: no job {argv[-1]}", file=__import__("sys").stderr)
        return 1

    monkeypatch.setattr(slurm_cmds, "_sluice", sluice)
    assert main(["scontrol", "show", "job", "35_09"]) == 1
    assert capsys.readouterr() == ("", "Job 35_9 not found\n")
    assert main(["scontrol", "show", "job", "36_1"]) == 1
    assert capsys.readouterr() == ("", "slurm_load_jobs error: Invalid job id specified\n")
