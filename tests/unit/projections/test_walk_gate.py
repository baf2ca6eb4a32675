"""Walks of the whole job history (``/v1/jobs?all=1``, ``/v1/history``, ``/v1/usage``): one at
a time per user, a few at a time in all (``projections.walk_gate``). Before, one user could keep
64 of them going (a quarter of the API's connections), each a second of CPU at 100,000 jobs,
every one taking the views' lock in turns with everybody's ``squeue``."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from projections.http import ApiServer
from projections.service import ProjectionService
from projections.walk_gate import BUSY_ANSWER, WalkGate
from streams.settings import Settings
from tests.unit.projections.test_api_connection_share import _as, needs_users

_GET = """
import socket, sys
with socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=30) as s:
    s.sendall(("GET " + sys.argv[2] + " HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n")
              .encode())
    print(s.recv(4096).decode(errors="replace").replace("\\r\\n", " | "), flush=True)
"""


def test_one_walk_per_peer_and_a_few_in_all_root_never_held() -> None:
    gate = WalkGate(limit=2)
    alice, bob, carol = ("uid", 1001), ("uid", 1002), ("uid", 1003)
    with gate.walk(alice) as first, gate.walk(alice) as again:
        assert first and not again
        with gate.walk(bob) as second, gate.walk(carol) as third, gate.walk(None) as root:
            assert second and not third and root
    with gate.walk(alice) as later:  # the walks ended with their blocks
        assert later


@needs_users
def test_a_users_second_walk_waits_for_the_first_and_another_user_walks_meanwhile(
        tmp_path: Path) -> None:
    service = ProjectionService(Settings(home=tmp_path))
    server = ApiServer(service, "127.0.0.1", 0)
    release, entered = threading.Event(), threading.Semaphore(0)

    def slow_history(_path: str, _query: dict[str, Any]) -> tuple[int, str, bytes]:
        entered.release()
        release.wait(30)
        return 200, "application/json", b'{"jobs": []}'

    server.route("/v1/history", slow_history)
    server.start()
    try:
        first = _as("nobody", _GET, server.port, "/v1/history")
        assert entered.acquire(timeout=30)  # nobody's first walk is under way
        second = _as("nobody", _GET, server.port, "/v1/jobs?all=1")
        out, _ = second.communicate(timeout=30)
        assert out.startswith("HTTP/1.0 503") and "Retry-After: 1" in out
        assert BUSY_ANSWER in out
        other = _as("daemon", _GET, server.port, "/v1/history")
        assert entered.acquire(timeout=30)  # daemon's walk is not held back by nobody's
        release.set()
        out, _ = other.communicate(timeout=30)
        assert out.startswith("HTTP/1.0 200")
        out, _ = first.communicate(timeout=30)
        assert out.startswith("HTTP/1.0 200")
    finally:
        release.set()
        server.stop()


def test_the_client_asks_again_while_the_walk_is_busy(monkeypatch: pytest.MonkeyPatch) -> None:
    """``busy_wait_s``: sacct, sreport and ``scontrol show job`` ask again after the busy
    answer's second instead of failing."""
    from cli import client as client_module

    answers = [(503, {"error": BUSY_ANSWER}), (503, {"error": BUSY_ANSWER}),
               (200, {"jobs": [1]})]
    client = client_module.Client(Settings())
    monkeypatch.setattr(client, "_http", lambda *_a, **_k: answers.pop(0))
    monkeypatch.setattr(client_module, "BUSY_RETRY_S", 0.01)
    monkeypatch.setattr(client_module, "WALK_WAIT_S", 5.0)
    assert client.get("/v1/jobs?all=1&user=alice")["jobs"] == [1]
    answers[:] = [(503, {"error": BUSY_ANSWER})]
    with pytest.raises(client_module.ApiBusyError):  # not a walk: said at once
        client.get("/v1/nodes")
    answers[:] = [(503, {"error": BUSY_ANSWER})]
    with pytest.raises(client_module.ApiBusyError):
        client.get("/v1/history", busy_wait_s=0)
