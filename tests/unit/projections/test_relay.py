"""``POST /v1/requests``: what the relay accepts and passes on (``parse_relay``), and the API
server's POST handling (lengths, limits, errors as JSON) with a real route over real HTTP."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from projections.api_auth import Viewer
from projections.http import ApiServer
from projections.relay import RelayRequest, parse_relay
from scheduler.records.names import REQUEST_NAMES
from schemas import encode

SLUID = "s000000000000A"
VALUE = encode("SubmitJob", {"job_sluid": SLUID, "spec": {"user": "", "command": ["true"],
                                                          "workdir": "/tmp"}})


def parse(headers: dict[str, str], body: bytes = VALUE, limit: int = 10_000
          ) -> RelayRequest | str:
    return parse_relay(headers, body, limit, REQUEST_NAMES.__contains__)


def test_a_submission_is_passed_on_with_its_key_and_only_the_two_credential_headers() -> None:
    parsed = parse({"sluice-key": SLUID, "Sluice-Auth": "munge MUNGE:abc:",
                    "Sluice-Request-Id": "s000000000000B", "Sluice-Identity": "root",
                    "sluice-seal": "00"})
    assert isinstance(parsed, RelayRequest)
    assert (parsed.name, parsed.key, parsed.value) == ("SubmitJob", SLUID.encode(), VALUE)
    assert dict(parsed.headers) == {"sluice-request-id": b"s000000000000B",
                                    "sluice-auth": b"munge MUNGE:abc:"}


def test_no_credential_header_is_invented() -> None:
    parsed = parse({"Sluice-Key": SLUID})
    assert isinstance(parsed, RelayRequest) and parsed.headers == ()


@pytest.mark.parametrize(("headers", "body", "words"), [
    ({}, VALUE, "Sluice-Key header"),
    ({"Sluice-Key": "s00000000000é"}, VALUE, "must be ASCII"),
    ({"Sluice-Key": SLUID, "Sluice-Auth": "jwt é"}, VALUE, "must be ASCII"),
    ({"Sluice-Key": SLUID}, b"{\"job\": 1}", "single-object encoding"),
    ({"Sluice-Key": SLUID}, b"\x00\x00\x00\x00\x01" + VALUE, "Confluent-framed"),
    ({"Sluice-Key": SLUID}, b"\xc3\x01" + b"\xff" * 8 + b"x", "not a Sluice record"),
    ({"Sluice-Key": SLUID}, encode("JobHeld", {"event_sluid": SLUID, "shard": "s",
                                               "shard_seq": 1, "time_ms": 0,
                                               "job_sluid": SLUID, "admin": False}),
     "JobHeld is not a request"),
])
def test_bad_input_is_refused_with_the_reason(headers: dict[str, str], body: bytes,
                                              words: str) -> None:
    refused = parse(headers, body)
    assert isinstance(refused, str) and words in refused


def test_the_size_limit_counts_key_and_value_as_the_intake_does() -> None:
    exact = len(VALUE) + len(SLUID)
    assert isinstance(parse({"Sluice-Key": SLUID}, limit=exact), RelayRequest)
    refused = parse({"Sluice-Key": SLUID}, limit=exact - 1)
    assert isinstance(refused, str) and f"{exact} bytes" in refused


class EchoRoute:
    """A POST route that answers with what it was given."""

    max_body = 16

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    def handle(self, query: dict[str, list[str]], headers: Mapping[str, str], body: bytes,
               viewer: Viewer, peer: object = None) -> tuple[int, dict[str, Any]]:
        if body == b"boom":
            raise RuntimeError("a bug")
        self.bodies.append(body)
        return 200, {"body": body.decode(), "query": query}


@pytest.fixture
def server() -> Iterator[tuple[ApiServer, EchoRoute]]:
    api = ApiServer(None, "127.0.0.1", 0)  # type: ignore[arg-type]  # no view is read
    route = EchoRoute()
    api.post_route("/v1/echo", route)
    api.start()
    try:
        yield api, route
    finally:
        api.stop()


def post(api: ApiServer, path: str, body: bytes | None, headers: dict[str, str] | None = None
         ) -> tuple[int, dict[str, Any]]:
    connection = http.client.HTTPConnection("127.0.0.1", api.port, timeout=10)
    try:
        connection.putrequest("POST", path)
        for key, value in (headers or {}).items():
            connection.putheader(key, value)
        if body is not None and "Content-Length" not in (headers or {}):
            connection.putheader("Content-Length", str(len(body)))
        connection.endheaders(body)
        answer = connection.getresponse()
        return answer.status, json.loads(answer.read())
    finally:
        connection.close()


def test_a_post_route_gets_the_body_and_query(server: tuple[ApiServer, EchoRoute]) -> None:
    api, _route = server
    assert post(api, "/v1/echo?wait=1", b"hello") == (
        200, {"body": "hello", "query": {"wait": ["1"]}})


def test_post_errors_are_json_and_an_oversized_body_is_not_read(
        server: tuple[ApiServer, EchoRoute]) -> None:
    api, route = server
    status, payload = post(api, "/v1/nothing", b"x")
    assert status == 404 and "no POST route" in payload["error"]
    status, payload = post(api, "/v1/echo", None)
    assert status == 411 and "Content-Length" in payload["error"]
    status, payload = post(api, "/v1/echo", b"x" * 17)
    assert status == 413 and "limit of 16" in payload["error"]
    status, payload = post(api, "/v1/echo", b"boom")
    assert status == 500 and "a bug" in payload["error"]
    assert route.bodies == []


def test_a_client_still_sending_a_refused_body_gets_the_413_not_a_reset(
        server: tuple[ApiServer, EchoRoute]) -> None:
    """8 MiB, far more than the sockets buffer: the server answers 413 before reading and
    then discards what the client still sends, so the client can finish and read the answer
    (closing on unread bytes resets the connection: a broken pipe mid-send, seen in CI)."""
    api, route = server
    for _ in range(3):
        status, payload = post(api, "/v1/echo", b"x" * (8 << 20))
        assert status == 413 and "limit of 16" in payload["error"]
    assert route.bodies == []
