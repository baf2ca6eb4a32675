"""The worker's metrics server against strangers (``agents.metrics_server``): idle and
trickling connections, more connections than it serves, a process out of descriptors.

Red team, 7 Dec 2026: prometheus_client's server took a thread and a descriptor of the worker
per connection, for ever; ``nobody`` grew the worker to 5,400 threads, and once its
descriptors ran out every request was refused ``AuthUnavailable`` (no socket to munged) while
the accepting thread spun on ``EMFILE``."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agents.metrics_server import serve


def _app(environ: dict[str, Any], start: Callable[..., Any]) -> Iterable[bytes]:
    start("200 OK", [("Content-Type", "text/plain")])
    return [b"sluice_up 1\n"]


@pytest.fixture
def server() -> Iterator[Callable[..., int]]:
    started: list[Any] = []

    def start(**options: Any) -> int:
        httpd = serve(_app, 0, "127.0.0.1", **options)
        started.append(httpd)
        return int(httpd.server_address[1])

    yield start
    for httpd in started:
        httpd.server_close()


def _idle(port: int, count: int) -> list[socket.socket]:
    socks = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        sock.sendall(b"GET /metrics HTTP/1.1\r\n")  # half a request, never the rest
        socks.append(sock)
    return socks


def _scrape(port: int) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
        return answer


def test_idle_connections_take_at_most_the_limits_threads_and_the_rest_are_answered_503(
    server: Callable[..., int],
) -> None:
    port = server(limit=4, deadline_s=30)
    before = threading.active_count()
    socks = _idle(port, 60)
    time.sleep(0.5)
    try:
        assert threading.active_count() - before <= 4
        busy = 0
        for sock in socks:
            sock.settimeout(0.2)
            with contextlib.suppress(TimeoutError):
                busy += sock.recv(100).startswith(b"HTTP/1.0 503")
        assert busy >= 56
    finally:
        for sock in socks:
            sock.close()


def test_a_silent_or_trickling_client_is_dropped_at_its_deadline_and_scrapes_go_on(
    server: Callable[..., int],
) -> None:
    port = server(limit=2, deadline_s=1.0)
    silent, trickling = _idle(port, 2)
    time.sleep(0.2)
    assert _scrape(port).startswith(b"HTTP/1.0 503")
    for _ in range(4):  # a byte every 0.3 s: each read is quick, the whole request is not
        time.sleep(0.3)
        try:
            trickling.sendall(b"X")
        except OSError:
            break
    silent.settimeout(3)
    trickling.settimeout(3)
    assert silent.recv(100) == b""
    assert trickling.recv(100) == b""
    answer = _scrape(port)
    assert answer.startswith(b"HTTP/1.0 200") and answer.endswith(b"sluice_up 1\n")


_OUT_OF_DESCRIPTORS = textwrap.dedent("""
    import resource, sys, time
    from agents.metrics_server import serve
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
    httpd = serve(lambda e, s: (s("200 OK", []), [b""])[1], 0, "127.0.0.1")
    held = []
    try:
        while True:
            held.append(open("/dev/null"))
    except OSError:
        pass
    print(httpd.server_address[1], flush=True)
    sys.stdin.readline()
    start = resource.getrusage(resource.RUSAGE_SELF)
    time.sleep(1.5)
    end = resource.getrusage(resource.RUSAGE_SELF)
    print(end.ru_utime + end.ru_stime - start.ru_utime - start.ru_stime, flush=True)
""")


def test_a_worker_out_of_descriptors_does_not_spin_on_accept() -> None:
    child = subprocess.Popen([sys.executable, "-c", _OUT_OF_DESCRIPTORS], text=True,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    try:
        port = int(child.stdout.readline())
        waiting = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(3)]
        child.stdin.write("go\n")
        child.stdin.flush()
        cpu_s = float(child.stdout.readline())
        assert cpu_s < 0.5, f"{cpu_s:.2f} s of CPU in 1.5 s with connections it cannot accept"
        for sock in waiting:
            sock.close()
    finally:
        child.kill()
        child.wait()


_PYTHON = "/usr/bin/python3"  # the users may not enter the virtualenv's home (/root is 0700)
_RECONNECT = """
import socket, sys, time
port = int(sys.argv[1])
socks = []
end = time.monotonic() + 120  # never outlives its test by long, whatever kills it or not
while time.monotonic() < end:  # as many connections as it can, each a half request; reconnect
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(b"GET /metrics HTTP/1.1\\r\\n")
        socks.append(s)
    except OSError:
        pass
    if len(socks) > 40:
        socks.pop(0).close()
"""
_SCRAPE = """
import socket, sys
with socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10) as s:
    s.sendall(b"GET /metrics HTTP/1.0\\r\\n\\r\\n")
    print(s.recv(64).split(b"\\r\\n")[0].decode(), flush=True)
"""


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("runuser") is None or not Path(_PYTHON).exists(),
    reason="running processes as other users needs root, runuser and a system python3")
def test_one_user_reconnecting_without_pause_leaves_the_other_users_scrapes_served(
    server: Callable[..., int],
) -> None:
    """Red team, 7 Dec 2026: one local user reconnecting without pause kept all 16 slots
    busy, so Prometheus, ``sluice status`` and ``sdiag`` were answered 503; each peer (a
    local uid) now holds at most a quarter of the slots."""
    port = server(limit=16, deadline_s=30)
    attacker = subprocess.Popen(["runuser", "-u", "nobody", "--", _PYTHON, "-c", _RECONNECT,
                                 str(port)], cwd="/", start_new_session=True)
    try:
        time.sleep(2.0)  # its connections fill what it may hold
        for _ in range(5):
            scrape = subprocess.run(["runuser", "-u", "daemon", "--", _PYTHON, "-c", _SCRAPE,
                                     str(port)], check=False, cwd="/", capture_output=True,
                                    text=True,
                                    timeout=30)
            assert scrape.stdout.strip() == "HTTP/1.0 200 OK"
            time.sleep(0.2)
    finally:  # the group: killing runuser alone left its python looping at 100 % of a core
        os.killpg(attacker.pid, signal.SIGKILL)
        attacker.wait()
