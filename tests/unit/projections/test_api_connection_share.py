"""One local user holding the views' API connections open leaves the other users room.

Red team, 6 Dec 2026: the API served at most 256 connections at once for everybody, and a
client that sends a byte every 29 s (or reconnects every 30 s) keeps its slot, so one
unprivileged user with 256 idle sockets answered every other user's ``squeue``, ``sbatch`` and
``sbatch --wait`` with ``503`` for as long as they liked. Each user (the socket's owner on this
host, found with the kernel's sock_diag; a remote peer by its address) now holds at most a
share of the slots. The attacker here is a real process of another uid (``nobody``) and the
other user (``daemon``) a real one too.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from cli.client import _NOT_RELAYED, ApiUnavailableError, Client
from projections.http import ApiServer, peer_share
from projections.peer_uid import _request, diag_socket, tcp_peer_uid
from projections.service import ProjectionService
from streams.settings import Settings

PYTHON = "/usr/bin/python3"  # the users may not enter the virtualenv's home (/root is 0700)

needs_users = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("runuser") is None or not Path(PYTHON).exists(),
    reason="running processes as other users needs root, runuser and a system python3")

_HOLD = """
import select, socket, sys, time
port, count = int(sys.argv[1]), int(sys.argv[2])
socks = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(count)]
for s in socks:
    s.sendall(b"GET /v1/status HTTP/1.1\\r\\n")  # half a request: the slot stays held
time.sleep(1.0)
answered = select.select(socks, [], [], 0)[0]  # the busy ones got their 503 and were closed
print(count - len(answered), flush=True)
sys.stdin.read()
"""

_GET = """
import socket, sys
with socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10) as s:
    s.sendall(b"GET /v1/status HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n")
    print(s.recv(64).split(b"\\r\\n")[0].decode(), flush=True)
"""


@pytest.fixture()
def service(tmp_path: Path) -> ProjectionService:
    return ProjectionService(Settings(home=tmp_path))


def _as(user: str, script: str, *args: object, **kwargs: object) -> subprocess.Popen[str]:
    return subprocess.Popen(["runuser", "-u", user, "--", PYTHON, "-c", script,
                             *map(str, args)], stdout=subprocess.PIPE, text=True,
                            cwd="/", **kwargs)  # type: ignore[call-overload]


@needs_users
def test_a_user_holding_every_connection_open_leaves_the_other_users_served(
        service: ProjectionService) -> None:
    server = ApiServer(service, "127.0.0.1", 0, max_connections=8)
    server.start()
    attacker = _as("nobody", _HOLD, server.port, 20, stdin=subprocess.PIPE)
    try:
        assert attacker.stdout is not None
        held = int(attacker.stdout.readline())
        assert held == peer_share(8)  # the rest of its 20 were answered busy
        other = _as("daemon", _GET, server.port)
        out, _ = other.communicate(timeout=30)
        assert out.strip() == "HTTP/1.0 200 OK"
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as conn:
            conn.sendall(b"GET /v1/status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            assert conn.recv(64).startswith(b"HTTP/1.0 200 ")  # root, the service user
    finally:
        attacker.kill()
        attacker.wait()
        server.stop()


@needs_users
def test_the_peer_of_a_loopback_connection_is_the_uid_that_opened_it() -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    script = ("import socket, sys\n"
              "s = socket.create_connection(('127.0.0.1', int(sys.argv[1])))\n"
              "sys.stdin.read()\n")
    client = _as("nobody", script, listener.getsockname()[1], stdin=subprocess.PIPE)
    try:
        conn, _ = listener.accept()
        with conn:
            assert tcp_peer_uid(conn) == pwd.getpwnam("nobody").pw_uid
        with socket.create_connection(listener.getsockname()) as own:
            conn, _ = listener.accept()
            with conn:
                assert tcp_peer_uid(conn) == os.getuid()
            own.close()
    finally:
        client.kill()
        client.wait()
        listener.close()


def test_a_peer_that_is_not_a_tcp_socket_has_no_uid() -> None:
    left, right = socket.socketpair()  # a Unix socket: no TCP peer to look up
    with left, right:
        assert tcp_peer_uid(left) is None


def test_a_peer_holds_a_quarter_of_the_connections() -> None:
    assert (peer_share(256), peer_share(8), peer_share(2)) == (64, 2, 1)


def test_a_wait_answered_busy_polls_again_instead_of_failing(service: ProjectionService,
                                                             tmp_path: Path) -> None:
    """``sbatch --wait`` whose long poll found every slot taken failed at once ("the API
    serves too many connections"); it is no answer yet: the poll goes on, as when the views
    restart, and gets its answer once a slot is free."""
    server = ApiServer(service, "127.0.0.1", 0, max_connections=2)
    server.start()
    held = [socket.create_connection(("127.0.0.1", server.port), timeout=5) for _ in range(2)]
    client = Client(Settings(api=f"127.0.0.1:{server.port}", home=tmp_path,
                             contact_timeout_s=30.0))
    try:
        time.sleep(0.3)
        with pytest.raises(ApiUnavailableError, match="too many connections"):
            client.get("/v1/status")
        threading.Timer(1.0, lambda: [sock.close() for sock in held]).start()
        started = time.monotonic()
        found = client.decisions(["s0000000000001"], 2.0)
        assert found == {"s0000000000001": None}  # answered (undecided), not an error
        assert time.monotonic() - started >= 1.0
    finally:
        for sock in held:
            sock.close()
        server.stop()


def test_a_submission_the_relay_turns_away_unread_goes_to_kafka_instead(
        service: ProjectionService, tmp_path: Path) -> None:
    """A busy answer comes before the request is read: nothing was relayed, so the client
    produces the request itself (it failed: "the views' relay refused the request")."""
    server = ApiServer(service, "127.0.0.1", 0, max_connections=1)
    server.start()
    held = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    client = Client(Settings(api=f"127.0.0.1:{server.port}", home=tmp_path))
    try:
        time.sleep(0.3)
        answer = client._relay(b"s0000000000001", b"x", [], 1.0, False)
        assert answer is _NOT_RELAYED
    finally:
        held.close()
        server.stop()


def test_an_answer_left_unread_is_never_taken_for_the_next_connections() -> None:
    """The server asks through one netlink socket for its life: an answer an earlier lookup
    left unread must not name the next connection's uid (nor every later one's)."""
    listener = socket.create_server(("127.0.0.1", 0))
    clients = [socket.create_connection(listener.getsockname()) for _ in range(2)]
    first, _ = listener.accept()
    second, _ = listener.accept()
    diag = diag_socket()
    try:
        stale = _request(second)
        assert stale is not None
        diag.send(stale)  # its answer stays in the socket, unread
        assert tcp_peer_uid(first, diag) == os.getuid()
        assert tcp_peer_uid(second, diag) == os.getuid()
        clients[0].close()
        first.close()
        assert tcp_peer_uid(second, diag) == os.getuid()
    finally:
        for sock in (*clients, second, listener, diag):
            sock.close()
