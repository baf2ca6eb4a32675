"""Parse ``ibnetdiscover`` output into a switch tree (pure: text in, records out).

The output lists every switch and channel adapter (HCA) with its ports::

    Switch  41 "S-fc6a1c0300e5b100"  # "MF0;leaf01:MQM9700/U1" enhanced port 0 lid 3 lmc 0
    [1]     "H-0c42a10300a1b2c0"[1](0c42a10300a1b2c1)  # "gpu001 mlx5_0" lid 11 4xNDR
    [33]    "S-fc6a1c0300e5a100"[1]  # "MF0;spine01:MQM9700/U1" lid 1 4xNDR
    Ca      1 "H-0c42a10300a1b2c0"  # "gpu001 mlx5_0"

Rules (as NVIDIA Topograph reads it): a switch name is the part of its description between
``;`` and ``:`` (``MF0;leaf01:MQM9700/U1`` → ``leaf01``), else the description when it has no
blank, else the switch GUID; a node name is the first word of its HCA description. Switches
with HCAs are leaves (level 0); a switch linked to switches of level ``k`` and not yet placed
is at level ``k+1``. Upper switches with exactly the same children are one group (the spines
of a fat tree), named after their members. A node with HCAs on several leaves (rails) goes
to the leaf of its first HCA in natural order; a leaf with several parents keeps the first
one in natural order. Both choices are Sluice's (Slurm's tree allows one parent).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

from scheduler.topology.config.model import SwitchDef
from scheduler.topology.hostlist import natural_key, natural_sorted

__all__ = ["Fabric", "FabricSwitch", "parse_ibnetdiscover", "switch_tree"]

_SWITCH = re.compile(r'^Switch\s+\d+\s+"([^"]+)"\s*#\s*"([^"]*)"')
_CA = re.compile(r'^Ca\s+\d+\s+"([^"]+)"\s*#\s*"([^"]*)"')
_LINK = re.compile(r'^\[(\d+)\][^"]*"([^"]+)"\[\d+\]')
_NAMED = re.compile(r"^[^;:]+;([^;:]+):[^;:]+$")


@dataclass(frozen=True, slots=True)
class FabricSwitch:
    """A switch: GUID id, name, and the ids it links to (by port order)."""

    guid: str
    name: str
    links: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Fabric:
    """Switches in file order and HCA id → (node name, HCA description)."""

    switches: tuple[FabricSwitch, ...]
    adapters: tuple[tuple[str, str, str], ...]

    def adapter_node(self, guid: str) -> str | None:
        """The node that owns an HCA id."""
        for adapter, node, _ in self.adapters:
            if adapter == guid:
                return node
        return None


def _switch_name(guid: str, description: str) -> str:
    match = _NAMED.match(description)
    if match:
        return match.group(1)
    if description and not any(c in description for c in " ;:"):
        return description
    return guid


def parse_ibnetdiscover(text: str) -> Fabric:
    """Switches and adapters of an ``ibnetdiscover`` output; unknown lines are ignored."""
    switches: list[FabricSwitch] = []
    adapters: list[tuple[str, str, str]] = []
    current: tuple[str, str, list[tuple[int, str]]] | None = None
    for raw in [*text.splitlines(), ""]:
        line = raw.strip()
        if not line or line.startswith("#"):
            if current is not None and not line:
                links = tuple(remote for _, remote in sorted(current[2]))
                switches.append(FabricSwitch(current[0], current[1], links))
                current = None
            continue
        if match := _SWITCH.match(line):
            guid, description = match.groups()
            current = (guid, _switch_name(guid, description), [])
        elif match := _CA.match(line):
            words = match.group(2).split()
            adapters.append((match.group(1), words[0] if words else match.group(1), match.group(2)))
        elif (match := _LINK.match(line)) and current is not None:
            current[2].append((int(match.group(1)), match.group(2)))
    return Fabric(tuple(switches), tuple(adapters))


def switch_tree(fabric: Fabric, nodes: Collection[str] | None = None) -> tuple[SwitchDef, ...]:
    """The switch tree of a fabric, leaves first then upward, as topology records.

    ``nodes`` keeps only those compute nodes (e.g. the cluster's node names).
    """
    by_guid = {s.guid: s for s in fabric.switches}
    node_leaf = _node_leaves(fabric, by_guid, nodes)
    leaves = natural_sorted({by_guid[g].name for g in node_leaf.values()})
    leaf_guids = set(node_leaf.values())
    levels: list[dict[str, tuple[str, ...]]] = [
        {
            name: tuple(natural_sorted(n for n, g in node_leaf.items() if by_guid[g].name == name))
            for name in leaves
        }
    ]
    placed = set(leaf_guids)
    current = leaf_guids
    names = {g: by_guid[g].name for g in leaf_guids}
    parents: dict[str, str] = {}
    while current:
        groups = _upper_groups(fabric, by_guid, current, placed, names)
        if not groups:
            break
        levels.append({group: children for group, (children, _) in groups.items()})
        current = set()
        for group, (children, members) in groups.items():
            for child in children:
                parents.setdefault(child, group)
            for member in members:
                names[member] = group
                current.add(member)
        placed |= current
    return _records(levels, parents)


def _node_leaves(
    fabric: Fabric, by_guid: dict[str, FabricSwitch], nodes: Collection[str] | None
) -> dict[str, str]:
    """node → GUID of the leaf holding its first HCA (natural order of HCA descriptions)."""
    adapter_switch: dict[str, str] = {}
    for switch in fabric.switches:
        for remote in switch.links:
            if remote not in by_guid:
                adapter_switch.setdefault(remote, switch.guid)
    result: dict[str, str] = {}
    for guid, node, _ in sorted(fabric.adapters, key=lambda a: natural_key(a[2])):
        if (nodes is not None and node not in nodes) or guid not in adapter_switch:
            continue
        result.setdefault(node, adapter_switch[guid])
    return result


def _upper_groups(
    fabric: Fabric,
    by_guid: dict[str, FabricSwitch],
    below: set[str],
    placed: set[str],
    names: dict[str, str],
) -> dict[str, tuple[tuple[str, ...], list[str]]]:
    """Switches linked to ``below`` and not placed, grouped by identical child names."""
    children_of: dict[tuple[str, ...], list[str]] = {}
    for switch in fabric.switches:
        if switch.guid in placed:
            continue
        children = tuple(natural_sorted({names[r] for r in switch.links if r in below}))
        if children:
            children_of.setdefault(children, []).append(switch.guid)
    groups: dict[str, tuple[tuple[str, ...], list[str]]] = {}
    for children, members in sorted(children_of.items(), key=lambda item: natural_key(item[0][0])):
        member_names = natural_sorted(by_guid[g].name for g in members)
        name = (
            member_names[0] if len(member_names) == 1 else f"{member_names[0]}..{member_names[-1]}"
        )
        groups[name] = (children, members)
    return groups


def _records(
    levels: list[dict[str, tuple[str, ...]]], parents: dict[str, str]
) -> tuple[SwitchDef, ...]:
    """Top level first (as topology files usually read), each switch listing only the
    children whose chosen parent it is."""
    records: list[SwitchDef] = []
    for depth in range(len(levels) - 1, -1, -1):
        for name, members in levels[depth].items():
            if depth == 0:
                records.append(SwitchDef(name, members))
            else:
                mine = tuple(c for c in members if parents.get(c) == name)
                if mine:
                    records.append(SwitchDef(name, (), mine))
    return tuple(records)
