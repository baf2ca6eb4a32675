"""What ``sluice up`` says of a node it gave up waiting for (cli/up_ready.py)."""

from __future__ import annotations

from cli.up_ready import _seen_as


def test_a_node_the_views_never_saw_is_said_to_be_unregistered() -> None:
    assert _seen_as(None, True, 1000) == "the views have no registration of it"


def test_a_node_out_of_service_shows_its_state_and_reason() -> None:
    row = {"state": "DOWN", "reason": "Not responding", "registered_ms": 2000}
    assert _seen_as(row, True, 1000) == "DOWN (Not responding)"
    assert _seen_as({"state": "INVALID_REG"}, True, 1000) == "INVALID_REG"


def test_a_node_in_service_from_an_earlier_start_is_said_so() -> None:
    seen = _seen_as({"state": "IDLE", "registered_ms": 500}, True, 9000)
    assert seen.startswith("in service, but registered before this start")
