"""What the health agent reads off the heartbeats topic: a ``NodeHeartbeat``, or the reason of
a dead letter (garbage used to be logged and dropped without one)."""

from __future__ import annotations

from agents.health import read_heartbeat
from schemas import encode

BEAT = {"node_sluid": "s009M93ZYTBN36", "name": "node01", "time_ms": 1, "runs": []}


def test_a_heartbeat_is_read() -> None:
    beat = read_heartbeat(encode("NodeHeartbeat", BEAT))
    assert not isinstance(beat, str)
    assert (beat["node_sluid"], beat["name"], beat["runs"]) == ("s009M93ZYTBN36", "node01", [])


def test_garbage_truncation_no_value_and_other_records_are_named_reasons() -> None:
    value = encode("NodeHeartbeat", BEAT)
    other = encode("DrainNode", {"name": "node01", "reason": "x"})
    assert str(read_heartbeat(value[:-3])).startswith("Undecodable: ")
    assert str(read_heartbeat(b"\x00garbage")).startswith("Undecodable: ")
    assert str(read_heartbeat(None)).startswith("EmptyRecord: ")
    assert read_heartbeat(other) == "NotAHeartbeat: a DrainNode on the heartbeats topic"
