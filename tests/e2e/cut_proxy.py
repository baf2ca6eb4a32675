"""A loopback TCP proxy a test can cut: every byte between a client and the broker goes through
it, and :meth:`CutProxy.cut` holds them all (a network partition: the sockets stay open, nothing
passes, nothing is refused) until :meth:`CutProxy.restore`.

With the broker's second listener advertising the proxy's port (``python -m infra.kafka start
--proxied LISTEN:ADVERTISED``), a client bootstrapped at the proxy connects there for
everything, so one node daemon's path to the broker is cut while the others' is not.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import threading

__all__ = ["CutProxy"]


class CutProxy:
    """Forwards ``127.0.0.1:listen`` to ``127.0.0.1:upstream`` until closed."""

    def __init__(self, listen: int, upstream: int) -> None:
        self._upstream = upstream
        self._server = socket.create_server(("127.0.0.1", listen), reuse_port=False)
        self._server.setblocking(False)
        self._open = threading.Event()
        self._open.set()
        self._stopping = False
        self._lock = threading.Lock()
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._thread = threading.Thread(target=self._serve, name="cut-proxy", daemon=True)
        self._thread.start()

    def cut(self) -> None:
        """Hold every byte, both ways, on every connection, old and new."""
        self._open.clear()

    def restore(self) -> None:
        """Let the held bytes, and all later ones, through again."""
        self._open.set()

    def close(self) -> None:
        self._stopping = True
        self._open.set()
        self._thread.join(10)
        with self._lock:
            for pair in self._pairs:
                for sock in pair:
                    sock.close()
        self._server.close()

    def _serve(self) -> None:
        selector = selectors.DefaultSelector()
        selector.register(self._server, selectors.EVENT_READ)
        while not self._stopping:
            if not self._open.is_set():
                self._open.wait(0.05)  # cut: nothing is read, accepted or written
                continue
            for key, _events in selector.select(0.05):
                if key.fileobj is self._server:
                    self._accept(selector)
                else:
                    self._pump(selector, key.fileobj, key.data)  # type: ignore[arg-type]
        selector.close()

    def _accept(self, selector: selectors.BaseSelector) -> None:
        with contextlib.suppress(BlockingIOError):
            client, _ = self._server.accept()
            try:
                upstream = socket.create_connection(("127.0.0.1", self._upstream), timeout=5)
            except OSError:
                client.close()
                return
            for sock in (client, upstream):
                sock.setblocking(True)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self._pairs.append((client, upstream))
            selector.register(client, selectors.EVENT_READ, upstream)
            selector.register(upstream, selectors.EVENT_READ, client)

    def _pump(self, selector: selectors.BaseSelector, source: socket.socket,
              target: socket.socket) -> None:
        try:
            data = source.recv(65536)
            if data:
                target.sendall(data)
                return
        except OSError:
            pass
        for sock in (source, target):
            with contextlib.suppress(KeyError, ValueError):
                selector.unregister(sock)
            sock.close()
