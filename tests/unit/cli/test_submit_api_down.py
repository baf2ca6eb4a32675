"""A job sent to Kafka while the views' API does not answer was accepted, maybe: ``sluice
submit`` says it was sent and names its SLUID to check, never "is the system up?" alone (the
user resubmitted, and the first job ran too)."""

from __future__ import annotations

from typing import Any

import pytest

from cli.client import Client, _NotConnectedError
from cli.submit import _refusal
from streams.settings import Settings

SPEC: dict[str, Any] = {"user": "alice", "command": ["true"], "workdir": "/tmp"}


class ApiDown(Client):
    """Kafka takes every record; the views' API never answers."""

    def __init__(self, relay: bool) -> None:
        super().__init__(Settings(auth="none", relay=relay, cluster_id=3))
        self.sent: list[bytes] = []

    def _produce(self, signed: Any) -> None:
        self.sent += [value for _name, value, _key, _headers in signed]

    def send_many(self, requests: Any) -> None:
        self._produce([(n, v, k, []) for n, v, k in self._encode(requests)])

    def _http(self, method: str, path: str, headers: dict[str, str], body: bytes | None,
              timeout_s: float) -> tuple[int, dict[str, Any]]:
        raise _NotConnectedError("the views' API at 127.0.0.1:1 does not answer")


@pytest.mark.parametrize("relay", [True, False])
def test_a_sent_job_whose_decision_cannot_be_read_is_unknown_not_an_error(relay: bool) -> None:
    client = ApiDown(relay)
    decision = client.submit(SPEC, wait_s=0.0)
    assert len(client.sent) == 1  # it went to Kafka
    assert decision.state == "UNKNOWN" and "does not answer" in decision.detail
    said = _refusal(decision)
    assert decision.job_sluid in said and "sluice show job" in said
    assert "does not answer" in said


def test_a_burst_whose_decisions_cannot_be_read_is_unknown_each() -> None:
    client = ApiDown(relay=False)
    decisions = client.submit_many([SPEC, SPEC], wait_s=0.0)
    assert len(client.sent) == 2
    assert [d.state for d in decisions] == ["UNKNOWN", "UNKNOWN"]
