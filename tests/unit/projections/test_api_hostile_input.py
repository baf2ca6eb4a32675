"""The views' HTTP API answers hostile input with a 4xx, never a hang or a dropped connection."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest

from projections.api_auth import Viewer
from projections.decisions import decisions
from projections.http import ApiServer
from projections.service import ProjectionService
from streams.settings import Settings


@pytest.fixture()
def service(tmp_path: Path) -> ProjectionService:
    return ProjectionService(Settings(home=tmp_path))


def test_a_wait_that_is_not_a_number_is_refused_not_waited_on_for_ever(
        service: ProjectionService) -> None:
    # float("nan") parses, and every comparison with it is false: the long poll never ended
    for text in ("nan", "NaN", "-nan"):
        code, payload = decisions(service, {"ids": ["x"], "wait": [text]}, Viewer())
        assert code == 400, payload
        assert "wait" in payload["error"]


@pytest.mark.parametrize("ref", ["9" * 5000, "\u00b2", "\u00b2_1", "1_\u00b2", "\u0663",
                                 "1_" + "9" * 5000])
def test_a_job_id_that_is_not_a_plain_number_is_a_404(service: ProjectionService,
                                                      ref: str) -> None:
    server = ApiServer(service, "127.0.0.1", 0)
    try:
        code, _type, body = server.dispatch(f"/v1/jobs/{ref}", {})
    finally:
        server.httpd.server_close()
    assert code == 404
    assert json.loads(body)["error"] == f"no job {ref}"


@pytest.mark.parametrize("ref", ["\u00b2", "9" * 5000])
def test_sacct_history_of_a_job_id_that_is_not_a_plain_number_is_empty(
        service: ProjectionService, ref: str) -> None:
    from projections.extras import history
    assert history(service.views, {"job": [ref]})["runs"] == []


def _exchange(server: ApiServer, request: bytes) -> bytes:
    server.start()
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as conn:
        conn.sendall(request)
        answer = b""
        while chunk := conn.recv(1 << 16):
            answer += chunk
    return answer


def test_a_content_length_of_thousands_of_digits_is_answered_not_dropped(
        service: ProjectionService) -> None:
    class Route:
        max_body = 100

        def handle(self, *_: object) -> tuple[int, dict[str, object]]:
            return 200, {}

    server = ApiServer(service, "127.0.0.1", 0)
    server.post_route("/v1/requests", Route())
    try:
        answer = _exchange(server, b"POST /v1/requests HTTP/1.1\r\nHost: x\r\nContent-Length: "
                           + b"9" * 5000 + b"\r\n\r\n")
    finally:
        server.stop()
    assert answer.startswith(b"HTTP/1.0 413 "), answer[:100]


def test_a_get_route_that_raises_is_a_500_naming_the_error_not_a_dropped_connection(
        service: ProjectionService) -> None:
    def broken(_path: str, _query: dict[str, list[str]]) -> tuple[int, str, bytes]:
        raise RuntimeError("boom: a detail that stays in the log")

    server = ApiServer(service, "127.0.0.1", 0)
    server.route("/broken", broken)
    try:
        answer = _exchange(server, b"GET /broken HTTP/1.1\r\nHost: x\r\n\r\n")
    finally:
        server.stop()
    assert answer.startswith(b"HTTP/1.0 500 "), answer[:100]
    assert json.loads(answer.split(b"\r\n\r\n", 1)[1]) == {
        "error": "InternalError: RuntimeError (the views' log has the details)"}


def test_connections_beyond_the_limit_are_answered_busy_and_the_slots_come_back(
        service: ProjectionService) -> None:
    """Idle or long-polling clients hold a thread each: past the limit the next one gets a 503
    at once (no thread), and a slot is free again as soon as a held connection closes."""
    server = ApiServer(service, "127.0.0.1", 0, max_connections=2)
    server.start()
    held = [socket.create_connection(("127.0.0.1", server.port), timeout=5) for _ in range(2)]
    try:
        time.sleep(0.3)  # both accepted and holding their threads (no request sent)
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as extra:
            answer = extra.recv(4096)
        assert answer.startswith(b"HTTP/1.0 503 "), answer[:60]
        body = answer.split(b"\r\n\r\n", 1)[1]
        assert json.loads(body)["error"].startswith("the API serves too many connections")
        held.pop().close()
        deadline = time.monotonic() + 5
        while True:
            with socket.create_connection(("127.0.0.1", server.port), timeout=10) as conn:
                conn.sendall(b"GET /v1/nothing-here HTTP/1.1\r\nHost: x\r\n\r\n")
                answer = conn.recv(4096)
            if not answer.startswith(b"HTTP/1.0 503 ") or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert answer.startswith(b"HTTP/1.0 404 "), answer[:60]
    finally:
        for sock in held:
            sock.close()
        server.stop()
