"""``PrivateData=jobs``: a job whose launch failed names its working directory or output file in
its reason (the node's words); others see that it failed, not where.

Red team, 6 Dec 2026: with ``AuthRequired`` on, ``GET /v1/jobs`` hid alice's ``workdir`` and
``output`` from mallory, but the reason of her failed job read ``launch failed as alice:
working directory /home/alice/acquisition-target: Permission denied``.
"""

from __future__ import annotations

from projections.api_auth import Viewer, private_view
from projections.views import Views
from tests.unit.projections.ledger_builder import LedgerBuilder

SECRET = "/home/alice/acquisition-target"


def _failed(reason: str) -> dict[str, object]:
    b = LedgerBuilder()
    b.node("n1")
    job = b.queued(user="alice", workdir=SECRET, output=f"{SECRET}/out-%j")
    run = b.started(job, ["n1"])
    b.ended(job, run, state="FAILED", exit_code=126, reason=reason)
    views = Views()
    for written in b.facts:
        views.apply(*written)
    return views.jobs.get(job) or dict(views.job(job) or {})


def test_a_launch_failure_names_no_path_to_other_users() -> None:
    row = _failed(f"launch failed as alice: working directory {SECRET}: Permission denied")
    assert SECRET in row["reason"]  # the node's words, as the owner sees them
    assert private_view(row, Viewer("alice"), True, ())["reason"] == row["reason"]
    assert private_view(row, Viewer("root", service=True), True, ())["reason"] == row["reason"]
    for other in (Viewer("mallory"), Viewer()):
        seen = private_view(row, other, True, ())
        assert SECRET not in str(seen), seen
        assert seen["reason"] == "launch failed as alice"
        assert seen["state"] == "FAILED" and seen["exit_code"] == 126
    assert private_view(row, Viewer("mallory"), False, ())["reason"] == row["reason"]


def test_a_refused_launch_keeps_its_named_reason_only() -> None:
    row = _failed(f"launch refused: UnknownUser: no user alice on n1 ({SECRET})")
    assert private_view(row, Viewer("mallory"), True, ())["reason"] == "launch refused"


def test_scheduler_reasons_stay_as_they_are() -> None:
    row = _failed("NodeFail")
    assert private_view(row, Viewer("mallory"), True, ())["reason"] == "NodeFail"


def test_a_failed_steps_reason_and_command_name_are_private_too() -> None:
    """Red team, 7 Dec 2026: the steps' rows came back whole, so a step that could not enter
    alice's private directory named it to anyone, with the step's command name."""
    row = _failed("NodeFail")
    row["steps"] = [{"step_id": 0, "state": "FAILED", "exit_code": 126, "name": "secret-tool",
                     "reason": f"a task on n1 ended with exit code 126 (task 0 could not start: "
                               f"[Errno 13] working directory {SECRET}: Permission denied)"}]
    own = private_view(row, Viewer("alice"), True, ())
    assert own["steps"][0]["name"] == "secret-tool" and SECRET in own["steps"][0]["reason"]
    seen = private_view(row, Viewer("mallory"), True, ())
    assert SECRET not in str(seen) and "secret-tool" not in str(seen), seen
    assert seen["steps"][0]["reason"] == "a task on n1 ended with exit code 126"
    assert (seen["steps"][0]["state"], seen["steps"][0]["exit_code"]) == ("FAILED", 126)
    assert row["steps"][0]["name"] == "secret-tool"  # the views' own row is not changed
