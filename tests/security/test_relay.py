"""``POST /v1/requests`` (projections.relay) on a system ``sluice up`` started, with munge:
``sluice submit`` goes through it, and it adds no trust: the identity still comes from the
credential the intake checks, never from the record or from the relay.

Reuses ``tests.security.test_attacks``'s system (real broker, real munged, ``runuser``).
"""

from __future__ import annotations

import http.client
import json
from typing import Any

import pytest

from agents.auth.signer import RequestSigner
from schemas import SluidGenerator, encode
from tests.security.test_attacks import UpSystem, _signed_as_nobody, up

pytestmark = [pytest.mark.kafka, pytest.mark.e2e]
__all__ = ["up"]  # the module's system (a fixture)

HTTP_NAMES = {"sluice-request-id": "Sluice-Request-Id", "sluice-auth": "Sluice-Auth"}


def relay(up: UpSystem, body: bytes, headers: dict[str, str], wait: float = 30.0
          ) -> tuple[int, dict[str, Any]]:
    host, _, port = up.settings.api.rpartition(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=wait + 30)
    try:
        connection.request("POST", f"/v1/requests?wait={wait}", body=body, headers=headers)
        answer = connection.getresponse()
        return answer.status, json.loads(answer.read())
    finally:
        connection.close()


def submission(up: UpSystem, user: str) -> tuple[str, dict[str, Any]]:
    sluid = SluidGenerator(up.settings.cluster_id).new()
    spec = {"user": user, "command": ["true"], "workdir": "/tmp", "hold": True}
    return sluid, {"job_sluid": sluid, "spec": spec}


def as_http(kafka_headers: list[tuple[str, bytes]], key: str) -> dict[str, str]:
    return {"Sluice-Key": key,
            **{HTTP_NAMES[k]: v.decode() for k, v in kafka_headers if k in HTTP_NAMES}}


def test_sluice_submit_as_another_user_goes_through_the_relay_and_the_job_is_theirs(
        up: UpSystem) -> None:
    # no broker this client could reach: only the relay can have produced the request
    answer = up.sluice("submit", "--parsable", "-H", "--", "true", as_user="nobody",
                       extra={"KAFKA_BOOTSTRAP": "127.0.0.1:9", "USER": "root"})
    assert answer.returncode == 0, answer.stdout + answer.stderr
    job = up.job(answer.stdout.strip())
    assert job["user"] == "nobody" and job["state"] == "PENDING"


def test_a_relayed_submission_claiming_another_user_is_refused(up: UpSystem) -> None:
    sluid, record = submission(up, "root")  # nobody's credential, root's name in the record
    headers = _signed_as_nobody(up, "SubmitJob", record)
    status, payload = relay(up, encode("SubmitJob", record), as_http(headers, sluid))
    assert status == 200, payload
    assert payload["sent"]["offset"] >= 0
    denial = payload["decisions"][sluid]["denial"]
    assert denial["reason"] == "UserMismatch"
    assert "job" not in payload["decisions"][sluid]


def test_a_relayed_submission_without_a_credential_or_with_a_moved_one_is_denied(
        up: UpSystem) -> None:
    bare, bare_record = submission(up, "")
    status, payload = relay(up, encode("SubmitJob", bare_record), {"Sluice-Key": bare})
    # AuthRequired is on: refused by the relay itself, never produced (no fact in the ledger)
    assert status == 401 and payload["reason"] == "Unauthenticated", payload
    moved, moved_record = submission(up, "")
    other = encode("SubmitJob", {**moved_record, "spec": {**moved_record["spec"],
                                                          "command": ["id"]}})
    signed_other = RequestSigner(up.settings).headers(other)  # root's, for other bytes
    status, payload = relay(up, encode("SubmitJob", moved_record),
                            as_http(signed_other, moved))
    assert status == 200, payload
    assert "denial" in payload["decisions"][moved]
    assert up.denials("SubmitJob", moved)
    assert not up.denials("SubmitJob", bare)  # decided after it would have been


def test_the_relay_answers_bad_input_with_a_clear_error_and_sends_nothing(
        up: UpSystem) -> None:
    sluid, record = submission(up, "")
    value = encode("SubmitJob", record)
    status, payload = relay(up, value, {})
    assert status == 400 and "Sluice-Key" in payload["error"]
    status, payload = relay(up, b"not a record", {"Sluice-Key": sluid})
    assert status == 400 and "single-object" in payload["error"]
    fact = encode("JobHeld", {"event_sluid": sluid, "shard": "x", "shard_seq": 1, "time_ms": 0,
                              "job_sluid": sluid, "admin": False})
    status, payload = relay(up, fact, {"Sluice-Key": sluid})
    assert status == 400 and "not a request" in payload["error"]
    limit = up.settings.max_request_bytes
    status, payload = relay(up, b"\xc3\x01" + b"0" * limit, {"Sluice-Key": sluid})
    assert status == 413 and str(limit) in payload["error"]
    signed = as_http(RequestSigner(up.settings).headers(value), sluid)  # root's, these bytes
    status, payload = relay(up, value, signed)  # the same job, well-formed: queued
    assert status == 200, payload
    assert payload["decisions"][sluid]["job"]["state"] == "PENDING"
    assert payload["decisions"][sluid]["job"]["user"] == "root"
