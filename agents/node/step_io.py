"""How a job step's output and task exits reach srun: one TCP connection per node.

srun (``sluice run``) listens on an ephemeral port and names it in its ``StartStep``
(``io_address``, with a random ``io_token``); each node of the step connects, says who it is,
and sends newline-delimited JSON messages::

    {"hello": 1, "token": T, "node": N, "step": S}   first, once
    {"t": RANK, "fd": 1 | 2, "d": TEXT}               a line of a task's stdout or stderr
    {"t": RANK, "fd": 1, "b": BASE64}                 bytes of a task's terminal (``--pty``)
    {"t": RANK, "exit": CODE}                         a task ended (minus the signal that ended it)

srun drops a connection whose token or step is wrong (compared in constant time). The token
travels in the sealed request and in the shard's ledger and node commands, which only Sluice's
services read (docs/security.md); it stops a stray process on the network from feeding srun
output, it is not what authorizes the step (the shard does that: docs/steps.md). srun writes
its stdin back on the same connection (:mod:`agents.node.step_input`).
"""

from __future__ import annotations

import base64
import contextlib
import errno
import json
import logging
import queue
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import IO, Any

__all__ = ["StepOutput", "StepServer"]

log = logging.getLogger(__name__)

_LINE_LIMIT = 65_536
_CONNECT_TIMEOUT_S = 10.0
_JOIN_TIMEOUT_S = 5.0
_CLOSE_WAIT_S = 10.0
_QUEUE_LIMIT = 256  # messages (a line is at most 64 KiB): what srun may leave unread
_GREETERS = 128  # srun's connections that have not said their hello yet, at most
_HELLO_S = 3.0  # a node sends its hello as soon as it is connected
_HELLO_LIMIT = 4096
_MESSAGE_LIMIT = 1 << 20  # a line of 64 KiB, JSON-escaped (or base64), fits with room


class StepOutput:
    """The node's side: forwards its tasks' output and exits to srun.

    Nothing the daemon's loop calls waits on srun: the connection is made, and every message
    written, by one sender thread a step, from a bounded queue. srun is the user's own process
    and may stop reading (``kill -STOP``), read slowly or never accept: that holds its step's
    threads and, once the queue is full, its tasks' output pipes (the tasks block on a full
    pipe, as under Slurm when srun stops reading), never the loop, its heartbeats or another
    step. The loop's own messages (a task's start failure) are dropped when the queue is full;
    a task's exit is queued by a thread of its own once its output is forwarded; :meth:`close`
    lets what is queued go for up to ``_CLOSE_WAIT_S``, then cuts the connection.
    """

    def __init__(self, connect: Callable[[], socket.socket | None], step: str = "") -> None:
        self._step = step
        self._queue: queue.Queue[bytes | None] = queue.Queue(maxsize=_QUEUE_LIMIT)
        self._sock: socket.socket | None = None
        self._connected = threading.Event()  # set once connected, or once that failed
        self._threads: dict[int, list[threading.Thread]] = {}
        self._enders: list[threading.Thread] = []
        self._closing = False
        self._done = False  # the sender has ended: nothing more is sent
        threading.Thread(target=self._send_all, args=(connect,), name="step-io-send",
                         daemon=True).start()

    @property
    def unreachable(self) -> bool:
        """srun could not be reached (its connection was refused, timed out, or could not be
        tried): the step's owner (:class:`agents.node.steps.StepTable`) ends the step. An srun
        that went away after it was reached is not this: its output is dropped."""
        return self._connected.is_set() and self._sock is None

    @classmethod
    def connect(cls, address: str, token: str, node: str, step: str) -> StepOutput:
        """Connect to srun at ``host:port`` (in the sender thread); when it cannot be reached
        (:attr:`unreachable`), what is queued is dropped (logged)."""

        def connection() -> socket.socket | None:
            host, _, port = address.rpartition(":")
            try:
                sock = socket.create_connection((host, int(port)), timeout=_CONNECT_TIMEOUT_S)
                sock.settimeout(None)
            except (OSError, ValueError) as exc:
                log.warning("step %s: cannot reach srun at %s: %s", step, address, exc)
                return None
            return sock

        output = cls(connection, step)
        output._put({"hello": 1, "token": token, "node": node, "step": step}, wait=False)
        return output

    def _send_all(self, connect: Callable[[], socket.socket | None]) -> None:
        sock = connect()
        self._sock = sock
        self._connected.set()
        while (data := self._queue.get()) is not None:
            if sock is None:
                continue  # no srun, or it went away: what is queued is dropped
            try:
                sock.sendall(data)
            except OSError:  # srun went away (or the step was closed): keep draining
                sock.close()
                sock = None
        self._done = True
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _put(self, message: dict[str, Any], wait: bool = True) -> None:
        data = (json.dumps(message) + "\n").encode()
        while wait and not self._done:  # a pump: srun's pace holds its task's pipe alone
            try:
                self._queue.put(data, timeout=1.0)
                return
            except queue.Full:
                continue
        if self._done:
            return
        try:
            self._queue.put_nowait(data)
        except queue.Full:
            log.warning("step %s: srun reads nothing: a message was dropped", self._step)

    def line(self, rank: int, fd: int, data: bytes, wait: bool = True) -> None:
        """Send one line of task ``rank``'s stdout (1) or stderr (2); ``wait`` False (the
        daemon's loop): drop it rather than wait for srun."""
        self._put({"t": rank, "fd": fd, "d": data.decode("utf-8", errors="replace")}, wait)

    def incoming(self) -> IO[bytes] | None:
        """What srun writes on the connection (its stdin: :mod:`agents.node.step_input`), once
        connected (waits for the connection: call it from a thread of the step's own)."""
        self._connected.wait()
        sock = self._sock
        if sock is None:
            return None
        try:
            return sock.makefile("rb")
        except OSError:
            return None

    def forward_terminal(self, rank: int, terminal: IO[bytes]) -> None:
        """Forward what task ``rank`` writes to its pseudo-terminal, as it comes (a prompt
        has no newline), until the terminal's last user closes it."""

        def pump() -> None:
            with contextlib.suppress(OSError, ValueError):  # EIO: no process holds the pty
                while chunk := terminal.read(_LINE_LIMIT):
                    self._put({"t": rank, "fd": 1, "b": base64.b64encode(chunk).decode()})

        thread = threading.Thread(target=pump, name=f"step-pty-{rank}", daemon=True)
        thread.start()
        self._threads.setdefault(rank, []).append(thread)

    def forward(self, rank: int, fd: int, pipe: IO[bytes]) -> None:
        """Forward every line of ``pipe`` until its end, in a thread."""

        def pump() -> None:
            with contextlib.suppress(OSError, ValueError):
                while chunk := pipe.readline(_LINE_LIMIT):
                    self.line(rank, fd, chunk)

        thread = threading.Thread(target=pump, name=f"step-io-{rank}-{fd}", daemon=True)
        thread.start()
        self._threads.setdefault(rank, []).append(thread)

    def ended(self, rank: int, code: int, pipes: list[IO[bytes]]) -> None:
        """Task ``rank`` ended with ``code``: its last output first, then its exit (queued by
        a thread of its own once its pumps are done: the loop does not wait for them)."""
        pumps = self._threads.pop(rank, [])

        def end() -> None:
            for thread in pumps:
                thread.join(_JOIN_TIMEOUT_S)
            for pipe in pipes:
                with contextlib.suppress(OSError):
                    pipe.close()
            self._put({"t": rank, "exit": code})

        ender = threading.Thread(target=end, name=f"step-io-end-{rank}", daemon=True)
        ender.start()
        self._enders.append(ender)

    def close(self) -> None:
        """End the connection once what is queued (the tasks' exits) has gone, or after
        ``_CLOSE_WAIT_S`` whatever srun reads (in a thread: the loop does not wait)."""
        if self._closing:
            return
        self._closing = True
        enders = list(self._enders)

        def finish() -> None:
            deadline = time.monotonic() + _CLOSE_WAIT_S
            for ender in enders:
                ender.join(max(0.0, deadline - time.monotonic()))
            with contextlib.suppress(queue.Full):
                self._queue.put(None, timeout=max(0.0, deadline - time.monotonic()))
                return
            sock = self._sock  # srun reads nothing: cut it, the sender drains and ends
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
            self._queue.put(None)

        threading.Thread(target=finish, name="step-io-close", daemon=True).start()


def _listen(addresses: tuple[str, ...], tries: int = 8) -> list[socket.socket]:
    """Listeners on ``addresses``, one port for all: the first address's free port, taken on
    the others too (all again with a new port, ``tries`` times, when another socket holds it
    there). An address this host does not have (``EADDRNOTAVAIL``) is skipped; OSError when
    none is left."""
    missing: OSError = OSError(errno.EADDRNOTAVAIL, f"no address to listen on: {addresses}")
    for _ in range(tries):
        listeners: list[socket.socket] = []
        clash = False
        for address in addresses:
            port = int(listeners[0].getsockname()[1]) if listeners else 0
            try:
                listeners.append(socket.create_server((address, port), family=_family(address)))
            except OSError as exc:
                if exc.errno == errno.EADDRNOTAVAIL:
                    missing = exc
                    continue
                for listener in listeners:
                    listener.close()
                if exc.errno != errno.EADDRINUSE or not port:
                    raise
                clash = True
                break
        if not clash:
            if listeners:
                return listeners
            raise missing
    raise OSError(errno.EADDRINUSE, f"no port free on every one of {addresses}")


def _family(address: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in address else socket.AF_INET


class StepServer:
    """srun's side: accepts the nodes' connections; messages arrive on :attr:`messages`."""

    def __init__(self, token: str, step: str, bind: str | Sequence[str] = "127.0.0.1",
                 nodes: frozenset[str] | None = None) -> None:
        """``bind``: the address, or addresses, to listen on, all on one port (srun's are
        :func:`cli.step_address.listen_addresses`: those its nodes dial, not every interface);
        one this host does not have is skipped, OSError when none is left. ``nodes``: the
        step's; a connection saying it is another node is dropped, and so is a second one for
        a node (srun's stdin goes to the first, the node's own)."""
        self.token, self.step, self.nodes = token, step, nodes
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self._peers: dict[str, tuple[socket.socket, threading.Lock]] = {}
        self._open = 0  # connections of nodes that joined and have not closed
        self._joined = threading.Condition()
        self._greeters: OrderedDict[int, socket.socket] = OrderedDict()  # before their hello
        self._listeners = _listen((bind,) if isinstance(bind, str) else tuple(bind))
        self.port = int(self._listeners[0].getsockname()[1])
        for listener in self._listeners:
            threading.Thread(target=self._accept, args=(listener,), name="step-io-accept",
                             daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with self._joined:  # too many that have not said who they are: the oldest goes
                while len(self._greeters) >= _GREETERS:
                    _oldest, stranger = self._greeters.popitem(last=False)
                    with contextlib.suppress(OSError):
                        stranger.shutdown(socket.SHUT_RDWR)
                self._greeters[id(conn)] = conn
            try:
                threading.Thread(target=self._serve, args=(conn,), daemon=True).start()
            except RuntimeError:  # no thread to be had (the user's process limit)
                self._greeted(conn)
                conn.close()

    def _greeted(self, conn: socket.socket) -> None:
        with self._joined:
            if self._greeters.get(id(conn)) is conn:
                del self._greeters[id(conn)]

    def _serve(self, conn: socket.socket) -> None:
        """One node's connection. Before its hello (any process that can reach the port may
        connect: another user's on this host, or one on the nodes' network) it holds one of
        ``_GREETERS`` places (when they are all taken the oldest is closed: a node says its
        hello at once, so strangers cannot keep it out), for at most ``_HELLO_S``, and may
        send ``_HELLO_LIMIT`` bytes; after it (the step's token), each message is at most
        ``_MESSAGE_LIMIT`` bytes. A stranger holding connections open costs this srun a
        bounded number of threads and bytes (red team, 2026-12-07: 4,000 connections of
        262 kB each had grown it by 1 GB and 4,000 threads)."""
        with conn, conn.makefile("rb") as lines:
            try:
                conn.settimeout(_HELLO_S)
                hello = json.loads(lines.readline(_HELLO_LIMIT) or b"{}")
                token = str(hello.get("token", ""))
                import hmac  # noqa: PLC0415 - OpenSSL's libcrypto, 3.6 MiB: a step's only

                if not (hmac.compare_digest(token.encode(), self.token.encode())
                        and hello.get("step") == self.step):
                    return
                self._greeted(conn)  # it knows the token: no stranger, never pushed out
                node = str(hello.get("node", ""))
                with self._joined:
                    if node in self._peers or (self.nodes is not None and node not in self.nodes):
                        return
                    self._peers[node] = (conn, threading.Lock())
                    self._open += 1
                    self._joined.notify_all()
                conn.settimeout(None)
                try:
                    while raw := lines.readline(_MESSAGE_LIMIT):
                        if not raw.endswith(b"\n") and len(raw) >= _MESSAGE_LIMIT:
                            return  # no node sends a message that long
                        message = json.loads(raw)
                        if isinstance(message, dict):
                            self.messages.put({**message, "node": node})
                finally:
                    with self._joined:
                        self._open -= 1
            except (OSError, ValueError, AttributeError):
                return
            finally:
                self._greeted(conn)

    def connected(self) -> int:
        """How many nodes are connected now (their tasks' supervisors are alive)."""
        with self._joined:
            return self._open

    def send(self, node: str, message: dict[str, Any], wait_s: float = 0.0) -> bool:
        """Write ``message`` to ``node`` (waiting up to ``wait_s`` for it to connect); False
        when it is not connected or its connection failed."""
        with self._joined:
            self._joined.wait_for(lambda: node in self._peers, timeout=wait_s)
            peer = self._peers.get(node)
        if peer is None:
            return False
        conn, lock = peer
        with lock:
            try:
                conn.sendall((json.dumps(message) + "\n").encode())
            except OSError:
                return False
        return True

    def close(self) -> None:
        for listener in self._listeners:
            with contextlib.suppress(OSError):
                listener.close()
