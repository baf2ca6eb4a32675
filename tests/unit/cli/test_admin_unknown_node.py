"""``scontrol update NodeName=X State=DRAIN|RESUME`` of a node there is not: Slurm's
``Invalid node name specified``, exit 1, nothing sent (it was sent, ignored by the shard, and
the command exited 0 as if the node were drained). Views that do not answer still let an
operator's drain through (nothing to wait for)."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from cli import admin
from cli.client import ApiError, ApiUnavailableError
from cli.main import main

KNOWN = {"n1": "sN1"}


class Views:
    down = False
    sent: ClassVar[list[tuple[str, dict[str, Any]]]] = []

    def __init__(self, settings: Any) -> None:
        del settings

    def get(self, path: str) -> dict[str, Any]:
        if Views.down:
            raise ApiUnavailableError("the views do not answer")
        name = path.rsplit("/", 1)[1]
        if name not in KNOWN:
            raise ApiError(f"no node {name}")
        return {"node": {"name": name, "node_sluid": KNOWN[name]}}

    def send(self, key: str, name: str, record: dict[str, Any]) -> None:
        Views.sent.append((name, record))


@pytest.fixture(autouse=True)
def views(monkeypatch: pytest.MonkeyPatch) -> None:
    Views.down, Views.sent = False, []
    monkeypatch.setattr(admin, "Client", Views)

    def decided(client: Any, verb: str, ref: str, subject: str, name: str,
                record: dict[str, Any], say: Any = None) -> bool:
        client.send("", name, record)
        return True

    monkeypatch.setattr(admin, "decided", decided)


@pytest.mark.parametrize("argv", [["drain", "-r", "x"], ["resume"]])
def test_an_unknown_node_is_refused_and_the_known_ones_go_on(
        argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*argv, "n9", "n1"]) == 1
    assert [record["name"] for _, record in Views.sent] == ["n1"]
    assert "n9: Invalid node name specified" in capsys.readouterr().err


def test_views_that_do_not_answer_still_let_a_drain_through() -> None:
    Views.down = True
    assert main(["drain", "-r", "x", "n9"]) == 0
    assert [record["name"] for _, record in Views.sent] == ["n9"]


def test_scontrol_says_slurm_updates_error_line(monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    from cli.slurm_program import ENV

    monkeypatch.setenv(ENV, "scontrol")
    assert main(["scontrol", "update", "NodeName=n9", "State=RESUME"]) == 1
    assert capsys.readouterr().err == (
        "slurm_update error: Invalid node name specified (n9)\n")
