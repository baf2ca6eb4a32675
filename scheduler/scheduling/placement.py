"""Where the scheduling pass meets the topology plugins (:mod:`scheduler.topology`).

The applied ``topology`` text (``ApplyConfig(kind="topology")``, topology.yaml or Slurm's
topology.conf) is parsed once per text; its default topology is indexed over the node index's
slots in their order, so the plugins' masks and the pass's masks line up. A partition with
``Topology: NAME`` uses that topology of the file (Slurm's per-partition topology), the others
the file's default. Without a topology the index is the flat plugin's (``flat`` is a plugin like
the others, not a special case of the pass).

:func:`place_job` is the one way the pass asks a plugin for a job's nodes: among the nodes that
can host it now (a start) or over a reserved interval (a backfill reservation,
:mod:`scheduler.scheduling.reserve_topology`); it returns a :class:`Choice` or the plugin's pending
reason.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from scheduler.records import Segment
from scheduler.shard.model import Job
from scheduler.shard.reasons import PendingReason
from scheduler.topology import (
    DEFAULT_TOPOLOGY_NAME,
    Availability,
    FlatIndex,
    LayeredBudget,
    NamedTopology,
    Placement,
    PlacementRequest,
    TopologyConfigError,
    TopologyIndex,
    TopologySet,
    build_index,
    parse_topology_conf,
    parse_topology_yaml,
    place,
)
from scheduler.topology.config.model import FlatConfig
from scheduler.topology.flat import first_fit

__all__ = [
    "Choice",
    "TopologyConfigError",
    "blocks_of",
    "index_topology",
    "parse_topology",
    "place_job",
]

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]
_CONF_KEYS = ("switchname", "blockname", "blocksizes", "ringname")
_IMPLICIT_FLAT = NamedTopology(DEFAULT_TOPOLOGY_NAME, FlatConfig())


@functools.lru_cache(maxsize=8)
def parse_topology(text: str, source: str = "topology") -> TopologySet:
    """Parse topology.yaml or topology.conf text; raise ``TopologyConfigError`` when bad."""
    first_words = [
        line.strip().split("=", 1)[0].lower()
        for line in text.splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    if first_words and first_words[0] in _CONF_KEYS:
        return parse_topology_conf(text, filename=source)
    return parse_topology_yaml(text, filename=source)


def blocks_of(topologies: TopologySet) -> dict[str, str]:
    """Node name → base block of the first block topology (the cluster default first); what
    ``ConfigApplied(topology)`` records for the views."""
    for topology in topologies.topologies:
        blocks = getattr(topology.config, "blocks", None)
        if topology.kind == "block" and blocks is not None:
            return {node: block.name for block in blocks for node in block.nodes}
    return {}


def index_topology(text: str | None, names: Sequence[str], name: str = "") -> TopologyIndex:
    """Topology ``name`` (the file's default for "" or an unknown name) indexed over ``names``;
    without a topology, the flat plugin's index (every job is placed by a plugin)."""
    if not text:
        return build_index(_IMPLICIT_FLAT, names)
    topologies = parse_topology(text)
    topology = topologies.default
    if name and name in topologies.names:
        topology = topologies.get(name)
    return build_index(topology, names)


class Choice(NamedTuple):
    """A plugin's choice for a job: slots in rank order (the first is the batch host), its
    segments, and the slots of the units a topo-exclusive job closes (Slurm's BLOCKED nodes;
    empty otherwise)."""

    slots: IntArray
    segments: tuple[Segment, ...]
    blocked: IntArray


_NONE_BLOCKED: IntArray = np.zeros(0, dtype=np.int64)
_NONE_BLOCKED.flags.writeable = False


def place_job(
    topology: TopologyIndex,
    job: Job,
    eligible: BoolArray,
    busy: BoolArray | Callable[[], BoolArray],
    now_ms: int,
    fragmentation_aware: bool = False,
    budget: LayeredBudget | None = None,
) -> Choice | str:
    """The plugin's choice for ``job`` among ``eligible`` nodes (those that can host it at
    ``now_ms``: now for a start, the reserved interval's start for a backfill reservation),
    or the plugin's pending reason.

    ``waited_s`` (for ``--switches=N@max``) is the time since the job became eligible;
    ``fragmentation_aware`` is the cluster's ``TopologyFragmentationAware``; ``budget`` is a
    Mode-3 resource's (power) budget the plugin must respect; ``busy`` (the nodes running
    something) may be given as a function, called only when a plugin needs it. A job placed
    by the flat plugin with no budget takes :func:`~scheduler.topology.flat.first_fit`
    directly (the plugin's own rule for that case, without building a request).
    """
    demand = job.demand
    if isinstance(topology, FlatIndex) and budget is None:
        slots = first_fit(topology, eligible, demand.nodes_min, demand.nodes_max)
        if slots is None:
            return PendingReason.RESOURCES
        return Choice(slots, (), _NONE_BLOCKED)
    spec = job.spec
    request = PlacementRequest(
        nodes_min=demand.nodes_min,
        nodes_max=demand.nodes_max,
        segment=spec.segment or None,
        spread_segments=spec.spread_segments,
        consolidate_segments=spec.consolidate_segments,
        exclusive_topo=spec.exclusive_topo,
        switches=spec.switches or None,
        switches_max_wait_s=spec.switches_max_wait_s or 300,
        waited_s=max(0, now_ms - max(job.submit_ms, spec.begin_time_ms)) // 1000,
        fragmentation_aware=fragmentation_aware,
    )
    busy_mask = busy() if callable(busy) else busy
    result = place(
        topology, request, Availability(eligible=eligible, busy=busy_mask, budget=budget)
    )
    if not isinstance(result, Placement):
        return result.reason
    segments = tuple(
        Segment(index=s.index, group=s.group, nodes=tuple(s.nodes)) for s in result.segments
    )
    blocked = _NONE_BLOCKED
    if result.blocked_nodes:
        position = topology.nodes.position
        blocked = np.array(sorted(position[n] for n in result.blocked_nodes), dtype=np.int64)
    return Choice(np.array(result.indices, dtype=np.int64), segments, blocked)
