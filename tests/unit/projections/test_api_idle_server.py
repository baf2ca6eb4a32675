"""The views' API server sleeps while nobody calls, and still stops at once (issue 17).

socketserver's ``serve_forever`` woke its thread every 0.5 s to see whether a shutdown was
asked; the server now waits on its socket and a pipe that ``stop`` writes to.
"""

from __future__ import annotations

import errno
import socket
import time
from pathlib import Path

from projections.http import ApiServer
from projections.service import ProjectionService
from streams.settings import Settings


def _switches(native_id: int) -> int:
    """The thread's context switches, voluntary and not (``/proc/self/task/TID/status``)."""
    status = Path(f"/proc/self/task/{native_id}/status").read_text()
    return sum(int(line.split()[1]) for line in status.splitlines()
               if "ctxt_switches:" in line)


def _status(port: int) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(b"GET /v1/status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        return conn.recv(64)


def test_an_idle_server_thread_does_not_wake_and_stops_at_once(tmp_path: Path) -> None:
    server = ApiServer(ProjectionService(Settings(home=tmp_path)), "127.0.0.1", 0)
    server.start()
    try:
        assert _status(server.port).startswith(b"HTTP/1.0 200 ")
        native_id = server.thread.native_id
        assert native_id is not None
        time.sleep(0.2)  # the answered connection's own wake-ups are over
        before = _switches(native_id)
        time.sleep(1.6)  # three polls of the old loop
        assert _switches(native_id) == before
        assert _status(server.port).startswith(b"HTTP/1.0 200 ")  # still serving
    finally:
        started = time.monotonic()
        server.stop()
    assert time.monotonic() - started < 1.0
    server.thread.join(1.0)
    assert not server.thread.is_alive()


def test_a_taken_port_is_an_os_error_not_a_crash_in_its_cleanup(tmp_path: Path) -> None:
    """The bind's failure closes the server, whose pipe was made after the bind: an
    AttributeError hid the 'Address already in use' behind a second traceback."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        try:
            ApiServer(ProjectionService(Settings(home=tmp_path)), "127.0.0.1", port)
        except OSError as exc:
            assert exc.errno == errno.EADDRINUSE
        else:
            raise AssertionError("bound a taken port")
