"""srun's listener (``StepServer``) against strangers: any local process can connect to it
(it listens on every interface, before any token is said). Red team, 2026-12-07: 4,000
connections each sending 262 kB without a newline grew a user's srun by 1 GB and 4,000
threads, and under a process limit killed its accept thread, so its nodes could no longer
join. Now a connection has a few seconds and 4 KiB for its hello, at most ``_GREETERS`` wait
at once (the oldest is pushed out: the step's own node, which says its hello at once, still
joins) and a joined node's message is bounded. Real sockets and threads."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time

from agents.node import step_io
from agents.node.step_io import StepServer


def _hello(server: StepServer, node: str) -> socket.socket:
    conn = socket.create_connection(("127.0.0.1", server.port))
    conn.sendall((json.dumps({"hello": 1, "token": server.token, "node": node,
                              "step": server.step}) + "\n").encode())
    return conn


def test_strangers_cost_bounded_threads_and_the_node_still_joins() -> None:
    server = StepServer("tok", "sSTEP", "127.0.0.1", nodes=frozenset({"n1"}))
    before = threading.active_count()
    strangers = []
    try:
        for _ in range(step_io._GREETERS * 3):
            stranger = socket.create_connection(("127.0.0.1", server.port))
            stranger.sendall(b"x" * 20_000)  # no newline: a hello that never ends
            strangers.append(stranger)
        time.sleep(0.5)
        assert threading.active_count() - before <= step_io._GREETERS + 2
        node = _hello(server, "n1")
        node.sendall(b'{"t": 0, "fd": 1, "d": "hi\\n"}\n')
        assert server.messages.get(timeout=5) == {"t": 0, "fd": 1, "d": "hi\n", "node": "n1"}
        assert server.connected() == 1
        node.close()
    finally:
        for stranger in strangers:
            stranger.close()
        server.close()


def test_a_silent_stranger_is_dropped_after_the_hello_time() -> None:
    server = StepServer("tok", "sSTEP", "127.0.0.1")
    try:
        stranger = socket.create_connection(("127.0.0.1", server.port))
        stranger.settimeout(step_io._HELLO_S + 5)
        began = time.monotonic()
        assert stranger.recv(1) == b""  # closed by srun, not held for ever
        assert time.monotonic() - began < step_io._HELLO_S + 4
    finally:
        server.close()


def test_a_joined_nodes_endless_line_ends_its_connection_not_srun() -> None:
    server = StepServer("tok", "sSTEP", "127.0.0.1")
    try:
        node = _hello(server, "n1")
        deadline = time.monotonic() + 5
        while server.connected() != 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert server.connected() == 1
        with contextlib.suppress(OSError):  # srun may close first
            node.sendall(b"y" * (step_io._MESSAGE_LIMIT + 10))
        deadline = time.monotonic() + 10
        while server.connected() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert server.connected() == 0
        assert server.messages.empty()
        other = _hello(server, "n2")  # srun goes on serving
        other.sendall(b'{"t": 1, "exit": 0}\n')
        assert server.messages.get(timeout=5)["exit"] == 0
    finally:
        server.close()
