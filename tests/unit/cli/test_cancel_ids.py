"""scancel's job ids (``_xlate_job_step_ids`` in Slurm's scancel): ranges of array tasks, commas,
``_*``; anything else refused in one line before anything is sent."""

from __future__ import annotations

from typing import Any

import pytest

from cli import job_control
from cli.job_control import expand_job_refs
from cli.main import main


@pytest.mark.parametrize(("words", "refs"), [
    (["20_[0-1,3]"], ["20_0", "20_1", "20_3"]),
    (["1,2,20_[1-2]"], ["1", "2", "20_1", "20_2"]),
    (["20_*"], ["20"]),
    (["12.3", "12_4.0"], ["12.3", "12_4.0"]),
    (["s009M97J8JTKA5"], ["s009M97J8JTKA5"]),
    (["7_[08-10]"], ["7_08", "7_09", "7_10"]),
])
def test_the_ids_scancel_takes(words: list[str], refs: list[str]) -> None:
    assert expand_job_refs(words) == refs


@pytest.mark.parametrize("bad", ["abc", "20_[x]", "12_", "-5", "12.x", "20_[1-", "1_2_3", "s-1"])
def test_anything_else_is_an_invalid_job_id(bad: str) -> None:
    with pytest.raises(ValueError, match="Invalid job id"):
        expand_job_refs([bad])


def test_a_range_too_large_for_one_call_is_refused() -> None:
    with pytest.raises(ValueError, match="more than 65535 job ids"):
        expand_job_refs(["5_[0-70000]"])


def test_cancel_sends_one_request_a_task_and_refuses_a_bad_id_before_sending(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    looked_up: list[str] = []

    class Views:
        def __init__(self, settings: Any) -> None:
            del settings

        def job(self, ref: str) -> dict[str, Any]:
            looked_up.append(ref)
            return {"job_sluid": f"sJOB{ref.replace('_', 'x')}", "job_id": ref}

    monkeypatch.setattr(job_control, "Client", Views)
    monkeypatch.setattr(job_control, "decided", lambda *args: True)
    assert main(["cancel", "20_[0-1,3]"]) == 0
    assert looked_up == ["20_0", "20_1", "20_3"]
    looked_up.clear()
    assert main(["cancel", "20_[0-1", "21"]) == 1
    assert looked_up == []
    err = capsys.readouterr().err
    assert err.strip() == "sluice cancel: Invalid job id 20_[0-1"
