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
import json
import logging
import queue
import socket
import threading
from typing import IO, Any

__all__ = ["StepOutput", "StepServer"]

log = logging.getLogger(__name__)

_LINE_LIMIT = 65_536
_CONNECT_TIMEOUT_S = 10.0
_JOIN_TIMEOUT_S = 5.0


class StepOutput:
    """The node's side: forwards its tasks' output and exits to srun."""

    def __init__(self, sock: socket.socket | None) -> None:
        self._sock = sock
        self._lock = threading.Lock()
        self._threads: dict[int, list[threading.Thread]] = {}

    @classmethod
    def connect(cls, address: str, token: str, node: str, step: str) -> StepOutput:
        """Connect to srun at ``host:port``; a step whose srun cannot be reached still runs,
        its output is dropped (logged)."""
        host, _, port = address.rpartition(":")
        try:
            sock = socket.create_connection((host, int(port)), timeout=_CONNECT_TIMEOUT_S)
            sock.settimeout(None)
        except (OSError, ValueError) as exc:
            log.warning("step %s: cannot reach srun at %s: %s", step, address, exc)
            return cls(None)
        output = cls(sock)
        output._send({"hello": 1, "token": token, "node": node, "step": step})
        return output

    def _send(self, message: dict[str, Any]) -> None:
        if self._sock is None:
            return
        data = (json.dumps(message) + "\n").encode()
        with self._lock:
            try:
                self._sock.sendall(data)
            except OSError:  # srun went away: keep draining the tasks' pipes
                self._sock.close()
                self._sock = None

    def line(self, rank: int, fd: int, data: bytes) -> None:
        """Send one line of task ``rank``'s stdout (1) or stderr (2)."""
        self._send({"t": rank, "fd": fd, "d": data.decode("utf-8", errors="replace")})

    def incoming(self) -> IO[bytes] | None:
        """What srun writes on the connection (its stdin: :mod:`agents.node.step_input`)."""
        return None if self._sock is None else self._sock.makefile("rb")

    def forward_terminal(self, rank: int, terminal: IO[bytes]) -> None:
        """Forward what task ``rank`` writes to its pseudo-terminal, as it comes (a prompt
        has no newline), until the terminal's last user closes it."""

        def pump() -> None:
            with contextlib.suppress(OSError, ValueError):  # EIO: no process holds the pty
                while chunk := terminal.read(_LINE_LIMIT):
                    self._send({"t": rank, "fd": 1, "b": base64.b64encode(chunk).decode()})

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
        """Task ``rank`` ended with ``code``: its last output first, then its exit."""
        for thread in self._threads.pop(rank, []):
            thread.join(_JOIN_TIMEOUT_S)
        for pipe in pipes:
            with contextlib.suppress(OSError):
                pipe.close()
        self._send({"t": rank, "exit": code})

    def close(self) -> None:
        with self._lock:
            if self._sock is not None:
                with contextlib.suppress(OSError):
                    self._sock.shutdown(socket.SHUT_RDWR)
                self._sock.close()
                self._sock = None


class StepServer:
    """srun's side: accepts the nodes' connections; messages arrive on :attr:`messages`."""

    def __init__(self, token: str, step: str, bind: str = "0.0.0.0",
                 nodes: frozenset[str] | None = None) -> None:
        """``nodes``: the step's; a connection saying it is another node is dropped, and so
        is a second one for a node (srun's stdin goes to the first, the node's own)."""
        self.token, self.step, self.nodes = token, step, nodes
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self._peers: dict[str, tuple[socket.socket, threading.Lock]] = {}
        self._open = 0  # connections of nodes that joined and have not closed
        self._joined = threading.Condition()
        self._listener = socket.create_server((bind, 0))
        self.port = int(self._listener.getsockname()[1])
        threading.Thread(target=self._accept, name="step-io-accept", daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn, conn.makefile("rb") as lines:
            try:
                hello = json.loads(lines.readline(_LINE_LIMIT * 4) or b"{}")
                token = str(hello.get("token", ""))
                import hmac  # noqa: PLC0415 - OpenSSL's libcrypto, 3.6 MiB: a step's only

                if not (hmac.compare_digest(token.encode(), self.token.encode())
                        and hello.get("step") == self.step):
                    return
                node = str(hello.get("node", ""))
                with self._joined:
                    if node in self._peers or (self.nodes is not None and node not in self.nodes):
                        return
                    self._peers[node] = (conn, threading.Lock())
                    self._open += 1
                    self._joined.notify_all()
                try:
                    for raw in lines:
                        message = json.loads(raw)
                        if isinstance(message, dict):
                            self.messages.put({**message, "node": node})
                finally:
                    with self._joined:
                        self._open -= 1
            except (OSError, ValueError, AttributeError):
                return

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
        with contextlib.suppress(OSError):
            self._listener.close()
