"""Turn discovered structure into topology records, topology.yaml text and node labels."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

import yaml

from scheduler.topology.config.model import (
    BlockConfig,
    BlockDef,
    FlatConfig,
    NamedTopology,
    SwitchDef,
    TreeConfig,
)
from scheduler.topology.discovery.nvlink import NvlinkDomain
from scheduler.topology.hostlist import HostlistError, compress, natural_key

__all__ = [
    "LABEL_SCHEMES",
    "SCHEME_NETWORK_TOPOLOGY",
    "SCHEME_TOPOGRAPH_TIERS",
    "fnv64a_label",
    "nvlink_blocks",
    "render_topology_yaml",
    "tree_labels",
]

SCHEME_NETWORK_TOPOLOGY: Final = "network.topology.nvidia.com"
"""Topograph's documented default keys: ``network.topology.nvidia.com/{accelerator,leaf,
spine,core}`` (docs/reference/node-labels.md)."""
SCHEME_TOPOGRAPH_TIERS: Final = "topograph.run"
"""Topograph's newer k8s-engine keys: ``accelerator.topograph.run/domain``,
``accelerator.topograph.run/sub-domain`` and ``fabric.topograph.run/tier-N``."""
LABEL_SCHEMES: Final = (SCHEME_NETWORK_TOPOLOGY, SCHEME_TOPOGRAPH_TIERS)
_MAX_LABEL_VALUE: Final = 63
_TIER_NAMES: Final = ("leaf", "spine", "core")


def nvlink_blocks(domains: Mapping[str, NvlinkDomain]) -> tuple[BlockDef, ...]:
    """One base block per NVLink partition (``ClusterUUID.CliqueId``); partitions of one
    NVL domain are adjacent, domains ordered by their first node (natural order)."""
    members: dict[str, list[str]] = {}
    for node in sorted(domains, key=natural_key):
        members.setdefault(domains[node].accelerator, []).append(node)
    first_of_domain: dict[str, str] = {}
    for node in sorted(domains, key=natural_key):
        first_of_domain.setdefault(domains[node].cluster_uuid, node)
    order = sorted(
        members,
        key=lambda acc: (
            natural_key(first_of_domain[acc.rsplit(".", 1)[0]]),
            natural_key(acc.rsplit(".", 1)[1]),
        ),
    )
    return tuple(BlockDef(accelerator, tuple(members[accelerator])) for accelerator in order)


def default_block_sizes(blocks: Sequence[BlockDef]) -> tuple[int, ...]:
    """Largest block as the planning size, then doublings until one level holds them all."""
    base = max(len(b.nodes) for b in blocks)
    sizes = [base]
    while (sizes[-1] // base) < len(blocks) and len(sizes) < 16:
        sizes.append(sizes[-1] * 2)
    return tuple(sizes)


def _hostlist(names: Sequence[str]) -> str:
    try:
        return compress(names, sort=False)
    except HostlistError:
        return ",".join(names)


def render_topology_yaml(topologies: Sequence[NamedTopology], header: str = "") -> str:
    """topology.yaml text (Slurm schema) for block, tree and flat topologies."""
    documents: list[dict[str, object]] = []
    for topology in topologies:
        entry: dict[str, object] = {"topology": topology.name}
        if topology.cluster_default:
            entry["cluster_default"] = True
        config = topology.config
        if isinstance(config, BlockConfig):
            block: dict[str, object] = {}
            if config.block_sizes is not None:
                block["block_sizes"] = list(config.block_sizes)
            block["blocks"] = [
                {"block": b.name, "nodes": _hostlist(b.nodes)} for b in config.blocks
            ]
            entry["block"] = block
        elif isinstance(config, TreeConfig):
            entry["tree"] = {"switches": [_switch(s) for s in config.switches]}
        elif isinstance(config, FlatConfig):
            entry["flat"] = True
        else:
            raise ValueError(f"cannot render a {topology.kind} topology")
        documents.append(entry)
    text = yaml.safe_dump(documents, sort_keys=False, default_flow_style=False, width=100)
    return (header + text) if header else text


def _switch(switch: SwitchDef) -> dict[str, str]:
    if switch.children:
        return {"switch": switch.name, "children": _hostlist(switch.children)}
    return {"switch": switch.name, "nodes": _hostlist(switch.nodes)}


def fnv64a_label(value: str) -> str:
    """A label value: as is when at most 63 characters, else ``x`` + its FNV-1a 64-bit hash
    in 16 lower-case hex digits (Topograph's rule)."""
    if len(value) <= _MAX_LABEL_VALUE:
        return value
    return f"x{fnv1a64(value.encode()):016x}"


def fnv1a64(data: bytes) -> int:
    """FNV-1a, 64 bits."""
    digest = 0xCBF29CE484222325
    for byte in data:
        digest = ((digest ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return digest


def tree_labels(
    switches: Sequence[SwitchDef],
    domains: Mapping[str, NvlinkDomain],
    scheme: str = SCHEME_NETWORK_TOPOLOGY,
) -> dict[str, dict[str, str]]:
    """Kubernetes node labels in Topograph's keys, nodes in natural order."""
    if scheme not in LABEL_SCHEMES:
        raise ValueError(f"unknown label scheme {scheme!r} (known: {', '.join(LABEL_SCHEMES)})")
    parent = {child: s.name for s in switches for child in s.children}
    path_of: dict[str, list[str]] = {}
    for switch in switches:
        for node in switch.nodes:
            path = [switch.name]
            while path[-1] in parent:
                path.append(parent[path[-1]])
            path_of[node] = path
    labels: dict[str, dict[str, str]] = {}
    for node in sorted(set(path_of) | set(domains), key=natural_key):
        entry: dict[str, str] = {}
        domain = domains.get(node)
        path = path_of.get(node, [])
        if scheme == SCHEME_NETWORK_TOPOLOGY:
            if domain is not None:
                entry[f"{scheme}/accelerator"] = fnv64a_label(domain.accelerator)
            for tier_name, switch_name in zip(_TIER_NAMES, path, strict=False):
                entry[f"{scheme}/{tier_name}"] = fnv64a_label(switch_name)
        else:
            if domain is not None:
                entry["accelerator.topograph.run/domain"] = fnv64a_label(domain.cluster_uuid)
                entry["accelerator.topograph.run/sub-domain"] = fnv64a_label(domain.accelerator)
            for tier, switch_name in enumerate(path):
                entry[f"fabric.topograph.run/tier-{tier}"] = fnv64a_label(switch_name)
        labels[node] = entry
    return labels
