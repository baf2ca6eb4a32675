"""cli.api_http, the CLI's HTTP/1.1 exchange with the views' API: against Python's own
http.server (what the API runs) and against servers that answer badly."""

from __future__ import annotations

import _socket
import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from cli.api_http import ProtocolError, connect, exchange, parse_answer


class _Echo(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.dumps({"method": self.command, "path": self.path,
                           "auth": self.headers.get("Sluice-Auth"),
                           "body": self.rfile.read(length).decode()}).encode()
        self.send_response(201 if self.command == "POST" else 200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer  # noqa: N815 - http.server's names

    def log_message(self, format: str, *args: object) -> None:
        return None


@pytest.fixture
def server() -> Iterator[int]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()


def test_a_get_and_a_post_reach_http_server_with_their_headers_and_body(server: int) -> None:
    status, body = exchange(connect("127.0.0.1", server, 5), "GET", "127.0.0.1",
                            "/v1/jobs?state=PENDING", {"Sluice-Auth": "tok"}, None)
    assert status == 200
    assert json.loads(body) == {"method": "GET", "path": "/v1/jobs?state=PENDING",
                                "auth": "tok", "body": ""}
    status, body = exchange(connect("127.0.0.1", server, 5), "POST", "127.0.0.1",
                            "/v1/requests", {}, b'{"a": 1}')
    assert (status, json.loads(body)["body"]) == (201, '{"a": 1}')


def test_nothing_listening_is_an_oserror_at_connect() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(OSError):
        connect("127.0.0.1", port, 2)


def test_connect_tries_each_address_of_a_name_as_create_connection_does() -> None:
    """``localhost`` may name ::1 first: a server on 127.0.0.1 alone is still reached, and
    the socket is the C type the ``socket`` module's class extends."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        sock = connect("localhost", server.getsockname()[1], 2)
        try:
            assert isinstance(sock, _socket.socket)
            assert sock.gettimeout() == 2
            assert sock.getpeername()[:2] == server.getsockname()
        finally:
            sock.close()


@pytest.mark.parametrize(("headers", "path"), [
    ({"Sluice-Auth": "tok\r\nX-User: root"}, "/v1/jobs"),
    ({"X-Evil:": "v"}, "/v1/jobs"),
    ({}, "/v1/jobs HTTP/1.1\r\nX-User: root"),
    ({}, "v1/jobs"),
])
def test_a_header_or_path_that_would_smuggle_a_line_is_refused(
        server: int, headers: dict[str, str], path: str) -> None:
    with pytest.raises(ValueError, match="invalid"):
        exchange(connect("127.0.0.1", server, 5), "GET", "127.0.0.1", path, headers, None)


@pytest.mark.parametrize(("answer", "expected"), [
    (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}trailing", (200, b"{}")),
    (b"HTTP/1.0 404 Not Found\r\n\r\n{\"error\": \"x\"}", (404, b'{"error": "x"}')),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n",
     (200, b"abcde")),
])
def test_answers_are_read_by_length_by_chunks_or_to_the_end(
        answer: bytes, expected: tuple[int, bytes]) -> None:
    assert parse_answer(answer) == expected


@pytest.mark.parametrize("answer", [
    b"", b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n", b"SSH-2.0-OpenSSH\r\n\r\n",
    b"HTTP/1.1 2x OK\r\n\r\n", b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n{}",
    b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n{}",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n9\r\nabc",
])
def test_an_answer_that_is_not_readable_http_is_a_protocol_error(answer: bytes) -> None:
    with pytest.raises(ProtocolError):
        parse_answer(answer)


def test_a_server_that_never_answers_times_out() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        sock = connect("127.0.0.1", listener.getsockname()[1], 0.3)
        with pytest.raises(OSError):  # socket.timeout is an OSError
            exchange(sock, "GET", "127.0.0.1", "/v1/jobs", {}, None)
