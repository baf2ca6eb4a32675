"""Where srun's step listener is reached, and the addresses it listens on.

The nodes of a step dial the address srun names in its ``StartStep`` (``io_address``):
``SLUICE_STEP_IO_HOST``, else this host's name when it resolves, else ``127.0.0.1``. The
listener is bound to what that dial can reach, not to every interface, so a stranger on
another network of the host cannot connect to it:

1. the addresses the advertised name resolves to here (a loopback-only cluster, whose host
   name is ``127.0.0.1`` or does not resolve, listens on the loopback alone);
2. when those are all loopback addresses (``127.0.1.1 host`` in a Debian ``/etc/hosts``) and a
   node of the step resolves to an address outside this host, the address this host routes
   to that node from (the node resolves the name its own way, through DNS to this host's
   address on its network): at most ``NODES_LOOKED_UP`` nodes are looked up.

``SLUICE_STEP_IO_BIND`` (comma-separated addresses; ``0.0.0.0`` or ``::`` for every
interface, as before) overrides the choice for networks where neither holds (the nodes reach
this host through a NAT, or by a name this host does not resolve).
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import socket
from collections.abc import Iterable

__all__ = ["NODES_LOOKED_UP", "io_host", "listen_addresses"]

NODES_LOOKED_UP = 32
"""How many of a step's nodes are resolved to find the routes to them (a step's nodes share
their network: the first ones tell)."""
_LOOPBACK = "127.0.0.1"


def io_host() -> str:
    """The address the nodes reach srun at: ``SLUICE_STEP_IO_HOST``, else this host's name
    when it resolves, else the loopback."""
    host = os.environ.get("SLUICE_STEP_IO_HOST") or socket.gethostname()
    return host if _addresses(host) else _LOOPBACK


def listen_addresses(host: str, nodes: Iterable[str]) -> tuple[str, ...]:
    """The addresses to listen on for nodes dialing ``host`` (the module docstring)."""
    forced = os.environ.get("SLUICE_STEP_IO_BIND", "")
    if forced.strip():
        return tuple(dict.fromkeys(a.strip() for a in forced.split(",") if a.strip()))
    own = _addresses(host) or [_LOOPBACK]
    if not all(_is_loopback(a) for a in own):
        return tuple(own)
    routes: list[str] = []
    for name in list(dict.fromkeys(nodes))[:NODES_LOOKED_UP]:
        for address in _addresses(name):
            source = "" if _is_loopback(address) else _route_source(address)
            if source and not _is_loopback(source) and source not in own + routes:
                routes.append(source)
    return tuple(own + routes)


def _addresses(name: str) -> list[str]:
    """The addresses ``name`` resolves to here, in the resolver's order ([] when it does not)."""
    try:
        infos = socket.getaddrinfo(name, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return []
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def _is_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address.partition("%")[0]).is_loopback
    except ValueError:
        return False


def _route_source(address: str) -> str:
    """This host's address on the route to ``address`` ("" when there is none): a UDP
    socket's ``connect`` picks it and sends nothing."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    with contextlib.suppress(OSError), socket.socket(family, socket.SOCK_DGRAM) as probe:
        probe.connect((address, 9))
        return str(probe.getsockname()[0])
    return ""
