"""Read per-node NVLink domain data: which NVL domain (``ClusterUUID``) and partition
(``CliqueId``) each node's GPUs belong to. Pure: text in, mapping out.

Accepted forms:

- a mapping node → that node's ``nvidia-smi -q`` output (or just its Fabric lines);
- one text of ``pdsh`` lines, ``<node>: <nvidia-smi line>`` (what
  ``pdsh -w ... 'nvidia-smi -q | grep "ClusterUUID\\|CliqueId" | sort -u'`` prints);
- one CSV text ``node,domain,clique`` (a header line starting with ``node`` is skipped).

A node whose GPUs report no ClusterUUID (``N/A``, all zeros, or fabric not completed) is
not in any NVLink domain. If a node's GPUs disagree, the first pair in natural order wins.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Mapping
from dataclasses import dataclass

from scheduler.topology.hostlist import natural_key

__all__ = ["NvlinkDomain", "parse_nvlink"]

_FIELD = re.compile(r"^\s*(ClusterUUID|CliqueId)\s*:\s*(\S+)\s*$")
_PDSH = re.compile(r"^([^\s:]+):\s*(.*)$")
_EMPTY = {"", "n/a", "na", "none", "00000000-0000-0000-0000-000000000000"}


@dataclass(frozen=True, slots=True)
class NvlinkDomain:
    """A node's NVL domain and partition; ``accelerator`` is Topograph's label value."""

    cluster_uuid: str
    clique_id: str

    @property
    def accelerator(self) -> str:
        """``<ClusterUUID>.<CliqueId>`` (same format as ``nvidia.com/gpu.clique``)."""
        return f"{self.cluster_uuid}.{self.clique_id}"


def parse_nvlink(data: Mapping[str, str] | str) -> dict[str, NvlinkDomain]:
    """node → NVLink domain for every node that has one, nodes in natural order."""
    if isinstance(data, str):
        per_node = _csv(data) if _looks_like_csv(data) else _pdsh(data)
    else:
        per_node = {node: _fields(text) for node, text in data.items()}
    result: dict[str, NvlinkDomain] = {}
    for node in sorted(per_node, key=natural_key):
        pairs = per_node[node]
        if pairs:
            uuid, clique = sorted(pairs, key=lambda p: (natural_key(p[0]), natural_key(p[1])))[0]
            result[node] = NvlinkDomain(uuid, clique)
    return result


def _looks_like_csv(text: str) -> bool:
    first = next((line for line in text.splitlines() if line.strip()), "")
    return first.count(",") >= 2 and ":" not in first


def _csv(text: str) -> dict[str, list[tuple[str, str]]]:
    result: dict[str, list[tuple[str, str]]] = {}
    for row in csv.reader(io.StringIO(text)):
        cells = [cell.strip() for cell in row]
        if len(cells) < 3 or not cells[0] or cells[0].lower() == "node":
            continue
        if cells[1].lower() not in _EMPTY:
            result.setdefault(cells[0], []).append((cells[1], cells[2] or "0"))
    return result


def _fields(text: str) -> list[tuple[str, str]]:
    """(uuid, clique) pairs from nvidia-smi lines, one per GPU block."""
    uuids: list[str] = []
    cliques: list[str] = []
    for line in text.splitlines():
        match = _FIELD.match(line)
        if match:
            (uuids if match.group(1) == "ClusterUUID" else cliques).append(match.group(2))
    pairs = []
    for number, uuid in enumerate(uuids):
        clique = cliques[number] if number < len(cliques) else (cliques[0] if cliques else "0")
        if uuid.lower() not in _EMPTY:
            pairs.append((uuid, clique))
    return pairs


def _pdsh(text: str) -> dict[str, list[tuple[str, str]]]:
    lines: dict[str, list[str]] = {}
    for line in text.splitlines():
        match = _PDSH.match(line)
        if match:
            lines.setdefault(match.group(1), []).append(match.group(2))
    return {node: _fields("\n".join(body)) for node, body in lines.items()}
