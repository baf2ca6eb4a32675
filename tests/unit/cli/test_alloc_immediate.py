"""srun's and salloc's ``-I[SECONDS]``/``--immediate[=SECONDS]``: the allocation is cancelled
and the command says Slurm's ``Unable to allocate resources: Requested nodes are busy`` (exit 1)
unless it starts within SECONDS (none: at once). Both were usage errors (``srun: invalid option
-- 'I'``, ``salloc: unrecognized option '--immediate'``), seen live 2026-12-08."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from cli import run_alloc
from cli.client import Decision
from cli.main import _parse, _parser
from cli.run_alloc import NotImmediateError, run_allocated, wait_started
from cli.run_step import immediate_seconds


def _args(*words: str, command: str = "run") -> argparse.Namespace:
    return _parse(_parser(command), [command, *words])


@pytest.mark.parametrize(("words", "seconds", "command"), [
    (["-I", "hostname", "-f"], 0.0, ["hostname", "-f"]),  # never the command's first word
    (["-N", "1", "--immediate", "python", "-c", "x"], 0.0, ["python", "-c", "x"]),
    (["-I5", "hostname"], 5.0, ["hostname"]),
    (["--immediate=7", "true"], 7.0, ["true"]),
    (["true", "-I"], None, ["true", "-I"]),  # the command's own -I
])
@pytest.mark.parametrize("verb", ["run", "alloc"])
def test_the_forms_of_the_option(words: list[str], seconds: float | None, command: list[str],
                                 verb: str) -> None:
    args = _args(*words, command=verb)
    assert (immediate_seconds(args), args.command) == (seconds, command)


def test_a_value_that_is_no_number_is_refused() -> None:
    with pytest.raises(ValueError, match="immediate"):
        immediate_seconds(_args("--immediate=soon", "true"))


class _Queued:
    class contact:  # noqa: N801 -- the client's attribute
        @staticmethod
        def left() -> float:
            return 60.0

        @staticmethod
        def lost() -> None:
            return None

    def get(self, path: str, timeout_s: float = 0.0) -> dict[str, Any]:
        del path, timeout_s
        return {"decisions": {}}  # never started


def test_waiting_gives_up_after_the_seconds() -> None:
    with pytest.raises(NotImmediateError):
        wait_started(_Queued(), "sJ", 5, "srun", quiet=True, give_up_s=0)  # type: ignore[arg-type]


def test_srun_cancels_the_allocation_it_gives_up(monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    cancelled: list[str] = []
    decision = Decision(job_sluid="sJ", state="PENDING", job_id=152)
    monkeypatch.setattr(run_alloc, "allocate", lambda *a: (_Queued(), decision))
    monkeypatch.setattr(run_alloc, "allocation_argv", lambda *a: [])
    monkeypatch.setattr(run_alloc, "cancel", lambda client, sluid, prog: cancelled.append(sluid))
    args = _args("-I", "hostname")
    assert run_allocated(args, object(), ["hostname"]) == 1  # type: ignore[arg-type]
    assert cancelled == ["sJ"]
    assert capsys.readouterr().err.splitlines() == [
        "srun: error: Unable to allocate resources: Requested nodes are busy"]
