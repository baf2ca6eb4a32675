"""A share of a server's connections per peer, so one user cannot hold all of them.

A peer is the local uid owning the client's socket (:func:`projections.peer_uid.tcp_peer_uid`)
or, for a client on another host, its address; root and the server's own user have no share
(they may hold up to the server's limit). Used by the views' API (``projections.http``, 256
connections) and the worker's metrics port (``agents.metrics_server``, 16): one user's idle,
trickling or reconnecting sockets took every slot of either, and everyone else was answered 503.
"""

from __future__ import annotations

import os
import socket
import threading
from typing import Any

from projections.peer_uid import diag_socket, tcp_peer_uid

__all__ = ["Peer", "PeerShares", "peer_share"]

Peer = tuple[str, object]
"""``("uid", 1001)`` or ``("address", "10.0.0.7")``."""


def peer_share(limit: int) -> int:
    """How many of ``limit`` connections one peer may hold at once: a quarter."""
    return max(1, limit // 4)


class PeerShares:
    """Who holds how many connections; taken in the accepting thread, released in any."""

    def __init__(self, limit: int) -> None:
        self.share = peer_share(limit)
        self.unlimited = frozenset({0, os.getuid()})
        self.held: dict[Peer, int] = {}
        self.lock = threading.Lock()
        try:  # asked in the accepting thread only: one socket for the server's life
            self.diag: socket.socket | None = diag_socket()
        except OSError:  # no netlink (a sandbox): no peer can be told apart, none has a share
            self.diag = None

    def peers(self, request: Any, client_address: Any) -> tuple[Peer | None, Peer | None]:
        """Whose share a connection takes, and whose budget its requests take (None: root's
        or the service user's, neither). Without sock_diag no peer has a share, and the budget
        is the client's address (every local user shares the loopback's)."""
        host = client_address[0] if isinstance(client_address, tuple) else ""
        address: Peer = ("address", str(host))
        if self.diag is None:
            return None, address
        uid = tcp_peer_uid(request, self.diag)
        if uid is None:
            return address, address
        peer: Peer | None = None if uid in self.unlimited else ("uid", uid)
        return peer, peer

    def take(self, peer: Peer | None) -> bool:
        """One more connection of ``peer``; False when it holds its share already."""
        if peer is None:
            return True
        with self.lock:
            held = self.held.get(peer, 0)
            if held >= self.share:
                return False
            self.held[peer] = held + 1
            return True

    def release(self, peer: Peer | None) -> None:
        """One connection of ``peer`` ended (taken with :meth:`take`)."""
        if peer is None:
            return
        with self.lock:
            left = self.held.get(peer, 0) - 1
            if left > 0:
                self.held[peer] = left
            else:
                self.held.pop(peer, None)

    def close(self) -> None:
        if self.diag is not None:
            self.diag.close()
