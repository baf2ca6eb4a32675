"""The read-only HTTP JSON API over the views.

| path | answer |
|---|---|
| ``GET /v1/status`` | freshness: last fact time, per-shard sequence, lag |
| ``GET /v1/config`` | the configurations in force by kind (digest, SLUID, time; cluster: text) |
| ``GET /v1/reservations`` | the advanced reservations (window, nodes, users, accounts, flags) |
| ``GET /v1/jobs`` | jobs; filters ``state`` (a base state or a flag: ``EXPEDITING``), ``user``, |
| | ``account``, ``partition``, ``reason`` (comma lists); ``all=1`` adds ended jobs (every |
| | job ever, read from the store and written as read: ``projections.job_stream``) |
| ``GET /v1/jobs/<id or SLUID>`` | one job with all its runs |
| ``GET /v1/denials/<SLUID>`` | the last refused requests (``RequestDenied``) about a job or node |
| ``GET /v1/dead-letters/<SLUID>`` | the requests keyed by the SLUID that the intake dead-lettered |
| | (reason code and time; ``projections.dead_letter_index`` says who sees what) |
| ``GET /v1/nodes`` | nodes; filters ``state``, ``partition``, ``block`` |
| ``GET /v1/nodes/<name>`` | one node |
| ``GET /v1/decisions?ids=…&wait=S`` | held until the decisions about those SLUIDs are folded |
| | (``projections.decisions``: the long poll ``sluice submit`` waits on) |
| ``POST /v1/requests`` | a request produced by the API's producer, answered with its decision |
| | (``projections.relay``: mounted by ``projections.extras``) |

Readers may authenticate (``projections.api_auth``): with ``AuthRequired`` on, a job's command
and working directory are shown only to its owner and to operators (``PrivateData=jobs``).

Every answer carries ``freshness`` so a reader knows how current it is. Other routes can be
mounted with ``ApiServer.route`` (the OpenMetrics exporter mounts ``/metrics`` this way), and
POST routes with ``ApiServer.post_route``: the body must have a ``Content-Length`` of at most
the route's ``max_body`` (else 411 / 413, the body unread), errors are JSON ``{"error": …}``.
A body refused unread is discarded after the answer (a lingering close, at most
``LINGER_BYTES`` for ``LINGER_S``): closing on unread bytes makes the kernel reset the
connection, and a client still sending would see a broken pipe instead of the 413.
"""

from __future__ import annotations

import json
import logging
import os
import selectors
import socket
import threading
import time
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol
from urllib.parse import parse_qs, unquote, urlparse

from projections.api_auth import ApiViewer, Viewer, private_denial, private_view
from projections.dead_letter_index import letters_for
from projections.decisions import decisions
from projections.job_stream import every_job_answer
from projections.peer_shares import PeerShares, peer_share
from projections.relay_gate import Peer
from projections.sealed_scripts import opened_script
from projections.service import ProjectionService
from projections.views import ACTIVE_STATES
from projections.walk_gate import BUSY_ANSWER, WalkGate
from scheduler.shard.reasons import NodeReason
from schemas.digits import LONG_DIGITS, ascii_whole

__all__ = ["ApiServer", "PostRoute", "peer_share"]

log = logging.getLogger(__name__)

Handler = Callable[[str, dict[str, list[str]]], tuple[int, str, bytes]]
READ_TIMEOUT_S = 30.0
"""How long the server waits for a client to send its request (a silent one is dropped)."""
LINGER_S = 2.0
LINGER_BYTES = 64 << 20
"""A refused body is read and discarded for at most this long and this much (a lingering close)."""


PAUSED_REASON = NodeReason.STATE_DIR_PAUSED
"""A node suspected with this reason's start takes no commands (its state directory)."""

MAX_CONNECTIONS = 256
"""Connections served at once (a thread each, as slurmctld's 256 RPC threads); one more is
answered ``503`` at once and closed, so slow or long-polling clients cannot pile up threads
without bound."""
_BUSY = (b"HTTP/1.0 503 Service Unavailable\r\nContent-Type: application/json\r\n"
         b"Connection: close\r\nRetry-After: 1\r\nContent-Length: 64\r\n\r\n"
         b'{"error": "the API serves too many connections; retry shortly"}\n')
_WALKS = frozenset({"/v1/history", "/v1/usage"})
"""Routes that read every job ever stored (with ``/v1/jobs?all=1``): ``projections.walk_gate``."""
_YOURS = (b"HTTP/1.0 503 Service Unavailable\r\nContent-Type: application/json\r\n"
          b"Connection: close\r\nRetry-After: 1\r\nContent-Length: 75\r\n\r\n"
          b'{"error": "the API serves too many of your connections; retry shortly"}\n')


class _BoundedServer(ThreadingHTTPServer):
    """``ThreadingHTTPServer`` serving at most :data:`MAX_CONNECTIONS` connections at once,
    at most :func:`peer_share` of them for one peer (``projections.peer_shares``: one user's
    idle or trickling sockets, a byte every 29 s keeps a slot, took all 256 slots, and every
    other user's command was answered 503)."""

    daemon_threads = True
    request_queue_size = 128
    """The listen backlog (``socketserver``'s default is 5: a burst of clients beyond it, a
    script's parallel calls, waited on SYN retries)."""

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler],
                 limit: int = MAX_CONNECTIONS) -> None:
        self.slots = threading.BoundedSemaphore(limit)
        self.shares = PeerShares(limit)
        self.local = threading.local()  # the connection's budget peer, in its own thread
        self._wake_r, self._wake_w = os.pipe()  # before the bind, whose failure closes them
        super().__init__(address, handler)
        self._closing = threading.Event()
        self._served = threading.Event()
        self._served.set()

    def serve_until_shutdown(self) -> None:
        """``serve_forever`` without its poll: socketserver's loop wakes every 0.5 s to see
        whether ``shutdown`` was asked (two wake-ups a second of an idle views process, issue
        17); this one sleeps until a connection comes or :meth:`shutdown` writes to its pipe."""
        self._served.clear()
        try:
            with selectors.DefaultSelector() as selector:
                selector.register(self, selectors.EVENT_READ)
                selector.register(self._wake_r, selectors.EVENT_READ)
                while not self._closing.is_set():
                    for key, _ in selector.select():
                        if key.fileobj is self and not self._closing.is_set():
                            # socketserver's own step of serve_forever (accept, verify,
                            # process_request: a thread per connection)
                            self._handle_request_noblock()  # type: ignore[attr-defined]
        finally:
            self._served.set()

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        """socketserver's entry point, served by :meth:`serve_until_shutdown` (which
        :meth:`shutdown` stops; no poll interval)."""
        self.serve_until_shutdown()

    def shutdown(self) -> None:
        """Stop :meth:`serve_until_shutdown` and wait until it has returned."""
        self._closing.set()
        os.write(self._wake_w, b"\0")
        self._served.wait()

    def server_close(self) -> None:
        super().server_close()
        os.close(self._wake_r)
        os.close(self._wake_w)
        self.shares.close()

    def _busy(self, request: Any, answer: bytes) -> None:
        try:  # in the accepting thread: a few bytes, never a wait for the client
            request.settimeout(0.5)
            request.sendall(answer)
        except OSError:
            pass
        self.shutdown_request(request)

    def process_request(self, request: Any, client_address: Any) -> None:
        peer, budget = self.shares.peers(request, client_address)
        if not self.shares.take(peer):
            self._busy(request, _YOURS)
            return
        if not self.slots.acquire(blocking=False):
            self.shares.release(peer)
            self._busy(request, _BUSY)
            return
        try:
            super().process_request(request, (client_address, peer, budget))
        except BaseException:
            self.slots.release()
            self.shares.release(peer)
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        address, peer, budget = client_address
        self.local.budget = budget
        try:
            super().process_request_thread(request, address)
        finally:
            self.slots.release()
            self.shares.release(peer)


class PostRoute(Protocol):
    """A POST route: the body it reads at most, and its handler."""

    @property
    def max_body(self) -> int: ...

    def handle(self, query: dict[str, list[str]], headers: Mapping[str, str], body: bytes,
               viewer: Viewer, peer: Peer | None) -> tuple[int, dict[str, Any]]:
        """The answer; ``peer`` is whose budget the request takes (None: root's or the
        views' own user's). A ``429`` answer's ``retry_after_s`` becomes ``Retry-After``."""
        ...


_DEAD_LETTERS = "/v1/dead-letters/"


def _content_length(text: str) -> int | None:
    """The length a ``Content-Length`` header says (ASCII digits; more than 19 of them: more
    than any body is allowed), or None."""
    if len(text) > LONG_DIGITS and text.isascii() and text.isdigit():
        return 1 << 63
    return ascii_whole(text)


def _matches(row: dict[str, Any], query: dict[str, list[str]], keys: tuple[str, ...]) -> bool:
    for key in keys:
        wanted = {v for item in query.get(key, []) for v in item.split(",") if v}
        if not wanted or str(row.get(key, "")) in wanted:
            continue
        if key == "state" and wanted & set(row.get("flags", [])):
            continue
        if key == "partition" and wanted & set(str(row.get(key, "")).split(",")):
            continue  # a job pending in several partitions (-p a,b), as squeue's filter
        return False
    return True


class ApiServer:
    """Serves the views of one ``ProjectionService`` on ``host:port`` in a thread."""

    def __init__(self, service: ProjectionService, host: str, port: int,
                 viewers: ApiViewer | None = None, max_connections: int = MAX_CONNECTIONS,
                 ) -> None:
        self.service = service
        self.routes: dict[str, Handler] = {}
        self.posts: dict[str, PostRoute] = {}
        self.viewers = viewers
        self.walks = WalkGate()  # the whole history: one walk per peer (walk_gate)
        api = self

        class _Handler(BaseHTTPRequestHandler):
            timeout = READ_TIMEOUT_S
            # An answer goes out as one segment (headers and body buffered, flushed by
            # http.server after the handler), and Nagle off: the body written alone after
            # the headers waited for the client's delayed ACK (up to 40 ms on Linux).
            wbufsize = 1 << 16
            disable_nagle_algorithm = True

            def _viewer(self, path: str) -> Viewer:
                return (api.viewers.viewer(dict(self.headers.items()), path)
                        if api.viewers is not None else Viewer())

            def do_GET(self) -> None:
                url = urlparse(self.path)
                query = parse_qs(url.query)
                every = (url.path.rstrip("/") == "/v1/jobs" and query.get("all", [""])[0] == "1"
                         and not query.get("array", [""])[0])
                if every or url.path.rstrip("/") in _WALKS:  # the whole history: gated
                    with api.walks.walk(getattr(api.httpd.local, "budget", None)) as allowed:
                        if not allowed:
                            self.close_connection = True
                            self._answer(503, "application/json", json.dumps(
                                {"error": BUSY_ANSWER}).encode(), "1")
                        elif every and "/v1/jobs" not in api.routes:
                            self._stream(query, self._viewer(url.path))
                        else:
                            self._get(url.path, query)
                    return
                self._get(url.path, query)

            def _get(self, path: str, query: dict[str, list[str]]) -> None:
                try:
                    status, content_type, body = api.dispatch(path, query, self._viewer(path))
                except Exception as exc:  # a bug: a 500 with the error, not a dropped reader
                    log.exception("GET %s failed", path[:200])
                    status, content_type = 500, "application/json"
                    body = json.dumps({"error": f"InternalError: {type(exc).__name__} (the "
                                                "views' log has the details)"}).encode()
                self._answer(status, content_type, body)

            def do_POST(self) -> None:
                url = urlparse(self.path)
                route = api.posts.get(url.path.rstrip("/"))
                status, payload = 404, {"error": f"no POST route {url.path}"}
                length_text = self.headers.get("Content-Length", "")
                length = _content_length(length_text)
                if route is not None and length is None:
                    status, payload = 411, {"error": "a Content-Length is required"}
                elif route is not None and length is not None and length > route.max_body:
                    status, payload = 413, {"error": f"the body is {length_text[:40]} bytes, "
                                                     f"more than the limit of {route.max_body}"}
                elif route is not None and length is not None:
                    try:
                        body = self.rfile.read(length)
                    except OSError:  # the client went silent (READ_TIMEOUT_S) or away
                        self.close_connection = True
                        return
                    if len(body) != length:
                        status, payload = 400, {"error": "the body ended early"}
                    else:
                        status, payload = api.post(route, url.query, dict(self.headers.items()),
                                                   body, self._viewer(url.path),
                                                   getattr(api.httpd.local, "budget", None))
                if status != 200 or route is None:
                    self.close_connection = True  # a body left unread must not be parsed
                retry = payload.get("retry_after_s") if status == 429 else None
                self._answer(status, "application/json", json.dumps(payload).encode(),
                             str(retry) if isinstance(retry, int) else "")
                if status in (404, 413) and length is not None:
                    self._linger(length)

            def _stream(self, query: dict[str, list[str]], viewer: Viewer) -> None:
                """Every job ever, written as it is read (``projections.job_stream``): no
                ``Content-Length``, the connection's end ends the answer."""
                keys = ("state", "user", "account", "partition", "reason")
                pieces = every_job_answer(api.service, lambda row: _matches(row, query, keys),
                                          viewer)
                self.close_connection = True
                try:
                    first = next(pieces)  # the walk: a failure is still a 500, not a cut answer
                except Exception as exc:
                    log.exception("GET /v1/jobs?all=1 failed")
                    self._answer(500, "application/json", json.dumps({
                        "error": f"InternalError: {type(exc).__name__} (the views' log has "
                                 "the details)"}).encode())
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Connection", "close")
                self.end_headers()
                try:
                    self.wfile.write(first)
                    for piece in pieces:
                        self.wfile.write(piece)
                except OSError:  # the reader went away or stopped reading (READ_TIMEOUT_S)
                    return
                except Exception:  # a bug mid-answer: the cut JSON tells the reader
                    log.exception("GET /v1/jobs?all=1 failed while it was written")

            def _linger(self, unread: int) -> None:
                """Let the client finish sending the body it was refused, then close."""
                deadline = time.monotonic() + LINGER_S
                left = min(unread, LINGER_BYTES)
                try:
                    self.wfile.flush()
                    self.connection.shutdown(socket.SHUT_WR)
                    while left > 0 and (wait := deadline - time.monotonic()) > 0:
                        self.connection.settimeout(wait)
                        chunk = self.connection.recv(min(left, 1 << 16))
                        if not chunk:
                            break
                        left -= len(chunk)
                except OSError:  # gone, or too slow: close anyway
                    return

            def _answer(self, status: int, content_type: str, body: bytes,
                        retry_after: str = "") -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                if retry_after:
                    self.send_header("Retry-After", retry_after)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_: Any) -> None:
                return

        self.httpd = _BoundedServer((host, port), _Handler, max_connections)
        self.thread = threading.Thread(target=self.httpd.serve_until_shutdown, daemon=True)

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def route(self, path: str, handler: Handler) -> None:
        """Mount ``handler`` at ``path`` (exact match)."""
        self.routes[path] = handler

    def post_route(self, path: str, route: PostRoute) -> None:
        """Mount a POST ``route`` at ``path`` (exact match, no trailing slash)."""
        self.posts[path] = route

    def post(self, route: PostRoute, query: str, headers: dict[str, str], body: bytes,
             viewer: Viewer, peer: Peer | None = None) -> tuple[int, dict[str, Any]]:
        """Run a POST route; a bug it hits is a 500 with the error, logged, not a dropped
        connection."""
        try:
            return route.handle(parse_qs(query), headers, body, viewer, peer)
        except Exception as exc:
            log.exception("POST route failed")
            return 500, {"error": f"InternalError: {type(exc).__name__}: {exc}"}

    def dispatch(self, path: str, query: dict[str, list[str]],
                 viewer: Viewer | None = None) -> tuple[int, str, bytes]:
        if path in self.routes:
            return self.routes[path](path, query)
        if path.rstrip("/") == "/v1/decisions":  # a long poll: waits without the views' lock
            code, payload = decisions(self.service, query, viewer or Viewer())
            return code, "application/json", json.dumps(payload).encode()
        with self.service.lock:
            views = self.service.views
            who = viewer or Viewer()
            if path.startswith(_DEAD_LETTERS):  # who sees what: projections.dead_letter_index
                code, payload = 200, {"dead_letters": letters_for(
                    self.service.dead_letter_index, views,
                    unquote(path.removeprefix(_DEAD_LETTERS).rstrip("/")), who)}
            else:
                code, payload = self._views(path.rstrip("/"), query)
            if "jobs" in payload:
                payload["jobs"] = [private_view(j, who, views.private_jobs, views.privileged)
                                   for j in payload["jobs"]]
            if "job" in payload:
                payload["job"] = opened_script(
                    private_view(payload["job"], who, views.private_jobs, views.privileged),
                    self.service.settings)
            if "denials" in payload:
                subject = (views.job(unquote(path.rstrip("/").rsplit("/", 1)[-1])) or {})
                owner = str(subject.get("user") or "")
                payload["denials"] = [private_denial(d, who, views.private_jobs,
                                                     views.privileged, owner)
                                      for d in payload["denials"]]
            payload["freshness"] = self.service.freshness()
        return code, "application/json", json.dumps(payload).encode()

    def _views(self, path: str, query: dict[str, list[str]]) -> tuple[int, dict[str, Any]]:
        views = self.service.views
        parts = [unquote(part) for part in path.split("/")[1:]]  # as the client quoted them
        if parts == ["v1", "status"]:  # and the nodes whose daemon takes no commands
            return 200, {"paused_nodes": [
                {"name": name, "reason": str(row["suspect"])}
                for name, row in sorted(views.nodes.items())
                if str(row.get("suspect") or "").startswith(PAUSED_REASON)]}
        if parts == ["v1", "config"]:
            return 200, {"config": dict(views.configs)}
        if parts == ["v1", "reservations"]:
            return 200, {"reservations": sorted(views.reservations.values(),
                                                key=lambda row: row["name"])}
        if parts == ["v1", "jobs"]:
            every = query.get("all", ["0"])[0] == "1"
            array = query.get("array", [""])[0]
            # every job ever is read from the store one row at a time; the active ones are
            # all in memory (only ended jobs leave it); an array's tasks, ended or not
            rows = (iter(views.array_tasks(array)) if array
                    else views.every_job(pausing=True) if every else iter(views.jobs.values()))
            every = every or bool(array)
            jobs = [
                row for row in rows
                if (every or row["state"] in ACTIVE_STATES)
                and _matches(row, query, ("state", "user", "account", "partition", "reason"))
            ]
            jobs.sort(key=lambda row: (row.get("job_id") or 0, row["job_sluid"]))
            # batch scripts are shown one job at a time (/v1/jobs/<id>), not in lists
            jobs = [{k: v for k, v in row.items() if k != "script"} if "script" in row else row
                    for row in jobs]
            return 200, {"jobs": jobs}
        if len(parts) == 3 and parts[:2] == ["v1", "jobs"]:
            job = views.job(parts[2])
            return (200, {"job": job}) if job else (404, {"error": f"no job {parts[2]}"})
        if len(parts) == 3 and parts[:2] == ["v1", "denials"]:
            return 200, {"denials": list(views.denials.get(parts[2], []))}
        if parts == ["v1", "nodes"]:
            nodes = [row for row in views.nodes.values()
                     if _matches(row, query, ("state", "block"))]
            wanted = {p for item in query.get("partition", []) for p in item.split(",") if p}
            if wanted:
                nodes = [n for n in nodes if wanted & set(n.get("partitions", []))]
            nodes.sort(key=lambda row: row["name"])
            # a node's state timeline (sreport's, up to 1,024 entries) is in /v1/usage and
            # /v1/nodes/<name>, not in lists: sinfo of 10,000 nodes would carry them all
            return 200, {"nodes": [{k: v for k, v in row.items() if k != "timeline"}
                                   for row in nodes]}
        if len(parts) == 3 and parts[:2] == ["v1", "nodes"]:
            node = views.nodes.get(parts[2])
            return (200, {"node": node}) if node else (404, {"error": f"no node {parts[2]}"})
        return 404, {"error": f"no route {path}"}
