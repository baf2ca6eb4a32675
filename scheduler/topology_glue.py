"""Where the scheduling pass meets the topology plugins (:mod:`scheduler.topology`).

The applied ``topology`` text (``ApplyConfig(kind="topology")``, topology.yaml or Slurm's
topology.conf) is parsed once per text; its default topology is indexed over the node index's
slots in their order, so the plugins' masks and the pass's masks line up. A partition with
``Topology: NAME`` uses that topology of the file (Slurm's per-partition topology), the others
the file's default. Without a topology (or with ``flat``) the pass keeps its own first-fit in
node order.

:func:`place_job` asks the plugin for a job's nodes among the nodes that can host it now and
returns the slots in rank order (the first is the batch host) with the segments, or the
plugin's pending reason; :func:`place_for_reservation` asks the same for a backfill
reservation, on the nodes free over the reserved interval (:mod:`scheduler.reserve_topology`).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from scheduler.model import Job
from scheduler.spec import Segment
from scheduler.topology import (
    Availability,
    LayeredBudget,
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

__all__ = [
    "TopologyConfigError",
    "index_topology",
    "parse_topology",
    "place_for_reservation",
    "place_job",
]

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]
_CONF_KEYS = ("switchname", "blockname", "blocksizes", "ringname")


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


def index_topology(text: str | None, names: Sequence[str], name: str = "") -> TopologyIndex | None:
    """Topology ``name`` (the file's default for "" or an unknown name) indexed over ``names``;
    None without a topology or when it is flat."""
    if not text:
        return None
    topologies = parse_topology(text)
    topology = topologies.default
    if name and name in topologies.names:
        topology = topologies.get(name)
    if topology.kind == "flat":
        return None
    return build_index(topology, names)


def place_job(
    topology: TopologyIndex,
    job: Job,
    eligible: BoolArray,
    busy: BoolArray,
    now_ms: int,
    fragmentation_aware: bool = False,
    budget: LayeredBudget | None = None,
) -> tuple[IntArray, tuple[Segment, ...]] | str:
    """The plugin's choice for ``job`` among ``eligible`` nodes, or its pending reason.

    ``waited_s`` (for ``--switches=N@max``) is the time since the job became eligible;
    ``fragmentation_aware`` is the cluster's ``TopologyFragmentationAware``; ``budget`` is a
    Mode-3 resource's (power) budget the plugin must respect.
    """
    result = _placement(topology, job, eligible, busy, now_ms, fragmentation_aware, budget)
    if not isinstance(result, Placement):
        return result
    return np.array(result.indices, dtype=np.int64), _segments(result)


def place_for_reservation(
    topology: TopologyIndex,
    job: Job,
    eligible: BoolArray,
    busy: BoolArray,
    now_ms: int,
    fragmentation_aware: bool = False,
) -> tuple[IntArray, IntArray, tuple[Segment, ...]] | None:
    """Like :func:`place_job` (no budget), for a backfill reservation: the slots in rank
    order, the slots of the units a topo-exclusive job would close (the rest of its base
    blocks or rings, Slurm's BLOCKED nodes; empty otherwise) and the segments; None if the
    plugin cannot place the job there."""
    result = _placement(topology, job, eligible, busy, now_ms, fragmentation_aware, None)
    if not isinstance(result, Placement):
        return None
    position = topology.nodes.position
    blocked = np.array(sorted(position[n] for n in result.blocked_nodes), dtype=np.int64)
    return np.array(result.indices, dtype=np.int64), blocked, _segments(result)


def _placement(
    topology: TopologyIndex,
    job: Job,
    eligible: BoolArray,
    busy: BoolArray,
    now_ms: int,
    fragmentation_aware: bool,
    budget: LayeredBudget | None,
) -> Placement | str:
    spec, demand = job.spec, job.demand
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
    result = place(topology, request, Availability(eligible=eligible, busy=busy, budget=budget))
    return result if isinstance(result, Placement) else result.reason


def _segments(placement: Placement) -> tuple[Segment, ...]:
    return tuple(
        Segment(index=s.index, group=s.group, nodes=tuple(s.nodes)) for s in placement.segments
    )
