"""The worker's ``/metrics`` over HTTP, bounded against whoever can reach its port.

prometheus_client's own server (``ThreadingWSGIServer``) starts a thread per connection and
waits for a request without a timeout. Any local user could therefore open thousands of idle
connections to the worker's metrics port: each held a thread and a descriptor of the worker
for ever (red team, 7 Dec 2026: 5,400 threads in two minutes from ``nobody``; while they
drained, the worker's consumer group and health agent stalled for 37 s). Once the worker's
descriptors ran out (its ``RLIMIT_NOFILE``, 1,024 by default under systemd), the intake could
not open munged's socket and refused **every** request ``AuthUnavailable``, and the accepting
thread spun on ``EMFILE`` at full CPU. This server:

1. serves at most :data:`MAX_CONNECTIONS` connections at once (a scraper, ``sluice status``
   and ``sdiag`` need a few); one more is answered ``503`` at once, from the accepting thread,
   without waiting for the client, and closed;
2. gives each connection :data:`DEADLINE_S` in all to send its request (a client that sends
   nothing, or a byte at a time, is dropped then), and the answer the rest of that time (at
   least :data:`MIN_WRITE_S`);
3. sleeps :data:`EMFILE_PAUSE_S` after an ``accept`` that failed for want of descriptors or
   memory, instead of trying again at once (the listening socket stays readable);
4. logs nothing per connection (a dropped client is no event worth a traceback);
5. gives each peer (a local uid, or a remote address) at most a quarter of the connections
   (``projections.peer_shares``, as the views' API): one local user reconnecting without
   pause held all 16 slots, and every scrape (Prometheus, ``sluice status``, ``sdiag``) was
   answered ``503`` while it lasted; one more connection of a peer holding its share is
   answered ``503`` (``too many of your connections``) and closed. Root and the worker's own
   user have no share.
"""

from __future__ import annotations

import errno
import io
import socket
import threading
import time
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler

from prometheus_client.exposition import ThreadingWSGIServer

from projections.peer_shares import PeerShares

__all__ = ["DEADLINE_S", "MAX_CONNECTIONS", "serve"]

MAX_CONNECTIONS = 16
"""Connections served at once; one more is answered 503."""
DEADLINE_S = 10.0
"""A connection's whole time: its request, then its answer."""
MIN_WRITE_S = 1.0
"""The least time an answer is given to be sent, whatever is left of the deadline."""
EMFILE_PAUSE_S = 0.1
"""The accepting thread's pause after ``accept`` failed for want of descriptors."""
_OUT_OF = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
_BUSY = (b"HTTP/1.0 503 Service Unavailable\r\nContent-Type: text/plain\r\n"
         b"Connection: close\r\nRetry-After: 1\r\nContent-Length: 40\r\n\r\n"
         b"the metrics serve too many connections\r\n")
_YOURS = (b"HTTP/1.0 503 Service Unavailable\r\nContent-Type: text/plain\r\n"
          b"Connection: close\r\nRetry-After: 1\r\nContent-Length: 48\r\n\r\n"
          b"the metrics serve too many of your connections\r\n")


class _DeadlineReader(io.RawIOBase):
    """A socket's reads, refused once the connection's deadline has passed."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        super().__init__()
        self.sock = sock
        self.deadline = deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the client did not send its request in time")
        self.sock.settimeout(left)
        return self.sock.recv_into(buffer)


class _DeadlineWriter(io.RawIOBase):
    """A socket's writes, each given what is left of the deadline (at least
    :data:`MIN_WRITE_S`: an answer is short, one or two writes)."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        super().__init__()
        self.sock = sock
        self.deadline = deadline

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self.sock.settimeout(max(self.deadline - time.monotonic(), MIN_WRITE_S))
        self.sock.sendall(data)
        return len(data)


class _Handler(WSGIRequestHandler):
    """wsgiref's handler with the connection's deadline on its reads and writes; quiet."""

    deadline_s = DEADLINE_S

    def setup(self) -> None:
        super().setup()
        self.rfile.close()
        deadline = time.monotonic() + self.deadline_s
        self.rfile = io.BufferedReader(_DeadlineReader(self.request, deadline))
        self.wfile = _DeadlineWriter(self.request, deadline)  # type: ignore[assignment]

    def log_message(self, format: str, *args: Any) -> None:
        return


class _BoundedServer(ThreadingWSGIServer):
    """At most ``limit`` connections at once (a thread each), see the module docstring."""

    request_queue_size = 64

    def __init__(self, address: tuple[str, int], handler: type[_Handler],
                 limit: int = MAX_CONNECTIONS) -> None:
        self.slots = threading.BoundedSemaphore(limit)
        self.shares = PeerShares(limit)
        super().__init__(address, handler)

    def get_request(self) -> tuple[socket.socket, Any]:
        try:
            return super().get_request()
        except OSError as exc:
            if exc.errno in _OUT_OF:
                time.sleep(EMFILE_PAUSE_S)  # the listener stays readable: no spin meanwhile
            raise

    def _busy(self, request: Any, answer: bytes) -> None:
        try:  # a few bytes into an empty send buffer: never a wait for the client
            request.setblocking(False)
            request.send(answer)
        except OSError:
            pass
        self.shutdown_request(request)

    def process_request(self, request: Any, client_address: Any) -> None:
        peer, _ = self.shares.peers(request, client_address)
        if not self.shares.take(peer):
            self._busy(request, _YOURS)
            return
        if not self.slots.acquire(blocking=False):
            self.shares.release(peer)
            self._busy(request, _BUSY)
            return
        try:
            super().process_request(request, (client_address, peer))
        except BaseException:
            self.slots.release()
            self.shares.release(peer)
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        address, peer = client_address
        try:
            super().process_request_thread(request, address)
        finally:
            self.slots.release()
            self.shares.release(peer)

    def server_close(self) -> None:
        super().server_close()
        self.shares.close()

    def handle_error(self, request: Any, client_address: Any) -> None:
        return  # a client that timed out or went away: nothing to report


def serve(app: Any, port: int, addr: str = "127.0.0.1", *, limit: int = MAX_CONNECTIONS,
          deadline_s: float = DEADLINE_S) -> ThreadingWSGIServer:
    """Serve the WSGI ``app`` on ``addr:port`` from a daemon thread; return the server.

    Its thread waits for a connection without a poll interval: ``serve_forever`` wakes every
    0.5 s to see whether a ``shutdown`` was asked (two wake-ups a second of an idle worker,
    issue 17), and nobody shuts this server down (the thread ends with the process)."""
    family = socket.getaddrinfo(addr, port, type=socket.SOCK_STREAM)[0][0]
    server = type("MetricsServer", (_BoundedServer,), {"address_family": family})
    handler = type("MetricsHandler", (_Handler,), {"deadline_s": deadline_s})
    httpd: ThreadingWSGIServer = server((addr, port), handler, limit)  # as make_server does
    httpd.set_app(app)
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": None},
                     name="metrics", daemon=True).start()
    return httpd
