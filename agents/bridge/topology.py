"""Kubernetes Nodes' Topograph labels → a Sluice topology.yaml (Slurm's schema).

The label keys are the ones ``sluice topology discover --labels`` writes (NVIDIA Topograph's):
``network.topology.nvidia.com/{accelerator,leaf,spine,core}`` or the newer
``accelerator.topograph.run/sub-domain`` and ``fabric.topograph.run/tier-N``. The accelerator
(NVLink) domain becomes a block of the block topology ``k8s-nvlink`` (the cluster default when
present), the switch tiers a tree topology ``k8s-fabric``. Nodes without labels are in
neither; with no label at all the result is empty (Sluice keeps its flat placement).
"""

from __future__ import annotations

from collections.abc import Mapping

import yaml

from scheduler.topology.discovery import SCHEME_NETWORK_TOPOLOGY, SCHEME_TOPOGRAPH_TIERS
from scheduler.topology.hostlist import HostlistError, compress, natural_sorted

__all__ = ["BLOCK_TOPOLOGY", "TREE_TOPOLOGY", "topology_yaml"]

BLOCK_TOPOLOGY = "k8s-nvlink"
TREE_TOPOLOGY = "k8s-fabric"
_ACCELERATOR = (f"{SCHEME_NETWORK_TOPOLOGY}/accelerator",
                "accelerator.topograph.run/sub-domain")
_TIERS = ((f"{SCHEME_NETWORK_TOPOLOGY}/leaf", f"{SCHEME_NETWORK_TOPOLOGY}/spine",
           f"{SCHEME_NETWORK_TOPOLOGY}/core"),
          tuple(f"fabric.{SCHEME_TOPOGRAPH_TIERS}/tier-{n}" for n in (1, 2, 3)))


def _hostlist(names: list[str]) -> str:
    try:
        return compress(names)
    except HostlistError:
        return ",".join(natural_sorted(names))


def _first(labels: Mapping[str, str], keys: tuple[str, ...]) -> str:
    return next((labels[k] for k in keys if labels.get(k)), "")


def _blocks(nodes: Mapping[str, Mapping[str, str]]) -> dict[str, list[str]]:
    blocks: dict[str, list[str]] = {}
    for name in natural_sorted(nodes):
        domain = _first(nodes[name], _ACCELERATOR)
        if domain:
            blocks.setdefault(domain, []).append(name)
    return blocks


def _tree(nodes: Mapping[str, Mapping[str, str]]) -> list[dict[str, str]]:
    """Switches: leaves with nodes, upper tiers with their children (names prefixed by tier)."""
    children: dict[tuple[int, str], set[str]] = {}
    for name in natural_sorted(nodes):
        labels = nodes[name]
        for keys in _TIERS:
            chain = [labels.get(k, "") for k in keys]
            if not chain[0]:
                continue
            children.setdefault((0, chain[0]), set()).add(name)
            for tier in range(1, 3):
                if chain[tier]:
                    children.setdefault((tier, chain[tier]), set()).add(
                        f"t{tier - 1}-{chain[tier - 1]}")
            break
    switches = []
    for (tier, switch), members in sorted(children.items()):
        key = "nodes" if tier == 0 else "children"
        switches.append({"switch": f"t{tier}-{switch}", key: _hostlist(sorted(members))})
    return switches


def topology_yaml(nodes: Mapping[str, Mapping[str, str]]) -> str:
    """topology.yaml text for nodes (name → labels); "" when no node has a topology label."""
    documents: list[dict[str, object]] = []
    blocks = _blocks(nodes)
    if blocks:
        documents.append({"topology": BLOCK_TOPOLOGY, "cluster_default": True, "block": {
            "blocks": [{"block": name, "nodes": _hostlist(members)}
                       for name, members in blocks.items()]}})
    switches = _tree(nodes)
    if switches:
        entry: dict[str, object] = {"topology": TREE_TOPOLOGY}
        if not blocks:
            entry["cluster_default"] = True
        entry["tree"] = {"switches": switches}
        documents.append(entry)
    if not documents:
        return ""
    header = "# written by sluice bridge from the Kubernetes Nodes' Topograph labels\n"
    return header + yaml.safe_dump(documents, sort_keys=False, default_flow_style=False)
