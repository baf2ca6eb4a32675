"""Requests that never travel on a topic (hand-written: they have no ``.avsc``).

``CloseCycle`` is how the shell asks the core for a batch's closing ``CycleCompleted`` fact.
``Request`` is everything :func:`scheduler.decide` accepts. The converters below let the golden
logs and audits write ``CloseCycle`` as a record like the others; ``scheduler.records.wire``
merges their tables with the generated ones.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.records.fill import tolerant
from scheduler.records.requests import WireRequest

__all__ = ["DEFAULTS", "IN", "NAMES", "OUT", "CloseCycle", "Request"]


@dataclass(frozen=True, slots=True, kw_only=True)
class CloseCycle:
    """Close a batch of inbox records (never on the wire): asks for ``CycleCompleted``."""

    inbox_partition: int
    inbox_from: int
    inbox_to: int


Request = WireRequest | CloseCycle
"""Everything :func:`scheduler.decide` accepts."""


def _to_wire_close_cycle(o: CloseCycle) -> dict[str, Any]:
    return {"inbox_partition": o.inbox_partition, "inbox_from": o.inbox_from,
            "inbox_to": o.inbox_to}


def _make_close_cycle(r: Mapping[str, Any]) -> CloseCycle:
    return CloseCycle(inbox_partition=r["inbox_partition"], inbox_from=r["inbox_from"],
                      inbox_to=r["inbox_to"])


OUT: dict[type, Callable[[Any], dict[str, Any]]] = {CloseCycle: _to_wire_close_cycle}
NAMES: dict[str, tuple[str, ...]] = {"CloseCycle": ("inbox_partition", "inbox_from", "inbox_to")}
DEFAULTS: dict[str, dict[str, Any]] = {"CloseCycle": {}}
IN: dict[str, Callable[[Mapping[str, Any]], Any]] = {
    "CloseCycle": tolerant("CloseCycle", _make_close_cycle, NAMES, DEFAULTS)
}
