"""What a submission prints: from ``sbatch`` Slurm's own line exactly (``Submitted batch job 42``,
sbatch.c), which scripts cut with ``awk '{print $NF}'``; ``--parsable`` the id alone; the native
``sluice submit`` adds the job's SLUID in parentheses."""

from __future__ import annotations

from typing import Any

import pytest

from cli import submit
from cli.client import Decision
from cli.main import main


class _Queues:
    def __init__(self, settings: Any) -> None:
        del settings

    def connect(self) -> None:
        pass

    def submit(self, spec: dict[str, Any]) -> Decision:
        del spec
        return Decision("s009M97K30P91S", "PENDING", 42, row={"job_id": 42})


@pytest.mark.parametrize(("argv", "line"), [
    (["submit", "--sbatch", "--wrap", "true"], "Submitted batch job 42"),
    (["submit", "--sbatch", "--parsable", "--wrap", "true"], "42"),
    (["submit", "--wrap", "true"], "Submitted batch job 42 (s009M97K30P91S)"),
    (["submit", "--parsable", "--wrap", "true"], "42"),
])
def test_sbatch_prints_slurms_line_and_sluice_submit_the_sluid_too(
        argv: list[str], line: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(submit, "Client", _Queues)
    assert main(argv) == 0
    assert capsys.readouterr().out == line + "\n"
