"""Parse Slurm's topology.conf text into a one-topology :class:`TopologySet` named ``default``.

Lines are ``Key=Value`` pairs separated by blanks; keys are case-insensitive; ``#`` starts a
comment; a trailing ``\\`` continues a line. The first key of a line says what it defines:

- ``SwitchName=<name> [Switches=<hostlist>] [Nodes=<hostlist>] [LinkSpeed=<n>]`` (tree;
  ``LinkSpeed`` is parsed and ignored, as in Slurm)
- ``BlockName=<name> [Nodes=<hostlist>]`` and ``BlockSizes=<n1>,<n2>,...`` (block)
- ``RingName=<name> Nodes=<hostlist>`` (ring)

The kind is inferred from the lines; mixing kinds is an error. Pure: text in, records out.
"""

from __future__ import annotations

from collections.abc import Collection

from scheduler.topology.config.model import (
    BlockConfig,
    BlockDef,
    KindConfig,
    NamedTopology,
    RingConfig,
    RingDef,
    SwitchDef,
    TopologySet,
    TreeConfig,
)
from scheduler.topology.errors import TopologyConfigError
from scheduler.topology.hostlist import HostlistError, expand
from scheduler.topology.registry import validate_kind

__all__ = ["DEFAULT_TOPOLOGY_NAME", "parse_topology_conf"]

DEFAULT_TOPOLOGY_NAME = "default"

_RECORDS: dict[str, tuple[str, tuple[str, ...]]] = {
    # first key (lower case) -> (kind, other keys allowed on the line)
    "switchname": ("tree", ("switches", "nodes", "linkspeed")),
    "blockname": ("block", ("nodes",)),
    "blocksizes": ("block", ()),
    "ringname": ("ring", ("nodes",)),
}
_CANONICAL = {
    "switchname": "SwitchName",
    "switches": "Switches",
    "nodes": "Nodes",
    "linkspeed": "LinkSpeed",
    "blockname": "BlockName",
    "blocksizes": "BlockSizes",
    "ringname": "RingName",
}

Line = tuple[int, list[tuple[str, str]]]


def parse_topology_conf(
    text: str, *, filename: str = "topology.conf", known_nodes: Collection[str] | None = None
) -> TopologySet:
    """Parse and validate; raise :class:`TopologyConfigError` (file, line, reason) if bad."""
    lines = _logical_lines(text, filename)
    if not lines:
        raise TopologyConfigError(filename, 1, "the file defines no switch, block or ring")
    kinds = {_RECORDS[pairs[0][0]][0] for _, pairs in lines}
    if len(kinds) > 1:
        first_kind = _RECORDS[lines[0][1][0][0]][0]
        for number, pairs in lines:
            if _RECORDS[pairs[0][0]][0] != first_kind:
                raise TopologyConfigError(
                    filename,
                    number,
                    f"{_CANONICAL[pairs[0][0]]} mixes a {_RECORDS[pairs[0][0]][0]} topology into "
                    f"a {first_kind} topology",
                )
    kind = kinds.pop()
    config: KindConfig
    if kind == "tree":
        config = TreeConfig(tuple(_switch(filename, n, p) for n, p in lines), lines[0][0])
    elif kind == "ring":
        config = RingConfig(
            tuple(RingDef(p[0][1], _nodes(filename, n, p), n) for n, p in lines), lines[0][0]
        )
    else:
        config = _block(filename, lines)
    validate_kind(config, filename, known_nodes)
    topology = NamedTopology(DEFAULT_TOPOLOGY_NAME, config, True, lines[0][0])
    return TopologySet((topology,), source=filename)


def _logical_lines(text: str, filename: str) -> list[Line]:
    """Non-empty lines as (first physical line number, [(lower-case key, value), ...])."""
    result: list[Line] = []
    pending = ""
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        body = raw.split("#", 1)[0].rstrip()
        if not pending:
            start = number
        if body.endswith("\\"):
            pending += body[:-1] + " "
            continue
        body, pending = pending + body, ""
        if body.strip():
            result.append((start, _pairs(filename, start, body)))
    if pending.strip():
        result.append((start, _pairs(filename, start, pending)))
    return result


def _pairs(filename: str, number: int, body: str) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    for token in body.split():
        key, equals, value = token.partition("=")
        lower = key.lower()
        if not equals or not key:
            raise TopologyConfigError(filename, number, f"expected Key=Value, found {token!r}")
        if not pairs:
            if lower not in _RECORDS:
                raise TopologyConfigError(
                    filename,
                    number,
                    f"unknown key {key!r} (a line starts with SwitchName, BlockName, "
                    "BlockSizes or RingName)",
                )
        elif lower not in _RECORDS[pairs[0][0]][1]:
            raise TopologyConfigError(
                filename, number, f"unknown key {key!r} on a {_CANONICAL[pairs[0][0]]} line"
            )
        if any(lower == seen for seen, _ in pairs):
            raise TopologyConfigError(filename, number, f"key {key!r} given twice on one line")
        if not value:
            raise TopologyConfigError(filename, number, f"{key} has no value")
        pairs.append((lower, value))
    return pairs


def _hostlist(filename: str, number: int, text: str) -> tuple[str, ...]:
    try:
        return expand(text)
    except HostlistError as exc:
        raise TopologyConfigError(filename, number, str(exc)) from exc


def _nodes(filename: str, number: int, pairs: list[tuple[str, str]]) -> tuple[str, ...]:
    values = dict(pairs)
    return _hostlist(filename, number, values["nodes"]) if "nodes" in values else ()


def _switch(filename: str, number: int, pairs: list[tuple[str, str]]) -> SwitchDef:
    values = dict(pairs)
    if "linkspeed" in values and not values["linkspeed"].isdigit():
        raise TopologyConfigError(filename, number, "LinkSpeed must be an integer")
    children = _hostlist(filename, number, values["switches"]) if "switches" in values else ()
    return SwitchDef(values["switchname"], _nodes(filename, number, pairs), children, number)


def _block(filename: str, lines: list[Line]) -> BlockConfig:
    blocks: list[BlockDef] = []
    sizes: tuple[int, ...] | None = None
    sizes_line = lines[0][0]
    for number, pairs in lines:
        if pairs[0][0] == "blocksizes":
            if sizes is not None:
                raise TopologyConfigError(filename, number, "BlockSizes is given twice")
            try:
                sizes = tuple(int(part) for part in pairs[0][1].split(","))
            except ValueError as exc:
                raise TopologyConfigError(
                    filename, number, f"BlockSizes must be integers, not {pairs[0][1]!r}"
                ) from exc
            sizes_line = number
        else:
            blocks.append(BlockDef(pairs[0][1], _nodes(filename, number, pairs), number))
    if not blocks:
        raise TopologyConfigError(filename, sizes_line, "BlockSizes without any BlockName")
    return BlockConfig(tuple(blocks), sizes, sizes_line)
