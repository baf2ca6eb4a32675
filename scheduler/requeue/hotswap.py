"""Gang-aware hot swap (Sluice, beyond Slurm): an expediting job keeps the healthy nodes of its
last run and takes replacements beside them, so NVLink locality and its segment layout survive.

An expedited requeue (``JobRequeued(expedite=True)``) whose job has hot swap on — its
``--hot-swap`` (``JobSpec.hot_swap``), else its partition's ``HotSwap``, else the cluster's — is a
**hot-swap job** for ``HotSwapWait`` seconds after the requeue. During that time, in every pass:

1. its **kept nodes** — the nodes of its last run that are usable now (not DOWN, not DRAIN: the
   failed node and a node whose epilog failed are out) and still have room for it — are
   protected: the pass takes them before any other job is considered (expediting jobs lead the
   queue), so they go from the requeue straight to this job;
2. when its turn comes it is placed **with the kept nodes required**: segment by segment (its
   last run's segments), the topology plugin places each segment with that segment's kept nodes
   as ``required_nodes`` among the nodes that fit now, so replacements come from the same base
   block / leaf switch / ring when one is free there (the plugin's own rules for ``-w``);
   without a topology, the replacements are the first nodes that fit, in node order;
3. if that fails it stays pending with reason ``HotSwap`` and its kept nodes stay protected;
   it neither blocks its partition nor gets a backfill reservation.

After ``HotSwapWait`` it is an ordinary expediting job: any placement the job's topology request
allows. Nothing here writes state or emits a fact of its own: the protection is recomputed each
pass from the job (its last run's nodes and segments, ``requeued_ms``) and the clock, and the
outcome is the usual ``JobStarted`` or ``JobPending(HotSwap)``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from scheduler.config.model import ClusterConfig
from scheduler.records import Segment
from scheduler.scheduling.free import Free
from scheduler.shard.index import BoolArray, IntArray, NodeIndex
from scheduler.shard.model import Job
from scheduler.topology import Availability, FlatIndex, Placement, PlacementRequest, place

__all__ = [
    "Kept",
    "hot_swap_active",
    "hot_swap_on",
    "keep",
    "place_hot_swap",
    "protect_hot_swaps",
    "try_hot_swap",
    "unkeep",
]

Kept = tuple[IntArray, list[tuple[int, int, int]]]
"""The slots protected for a hot-swap job and what was taken on each (cpus, mem, gpus)."""


def hot_swap_on(config: ClusterConfig, job: Job) -> bool:
    """The job's ``--hot-swap``, else its partition's ``HotSwap``, else the cluster default."""
    choice = job.spec.hot_swap
    if not choice:
        part = config.partition(job.partition)
        choice = part.hot_swap if part is not None else ""
    return choice == "yes" if choice else config.requeue.hot_swap


def hot_swap_active(config: ClusterConfig, job: Job, now_ms: int) -> bool:
    """True while ``job`` is a hot-swap job (see the module)."""
    return (
        job.expediting
        and job.is_pending
        and not job.hold
        and bool(job.nodes)
        and job.requeued_ms > 0
        and now_ms < job.requeued_ms + config.requeue.hot_swap_wait_s * 1000
        and hot_swap_on(config, job)
    )


def keep(free: Free, job: Job, fits: BoolArray) -> Kept | None:
    """Protect the job's kept nodes in ``free`` (those of its last run among ``fits``)."""
    pos = free.index.pos
    slots = [pos[n] for n in job.nodes if n in pos and fits[pos[n]]]
    if not slots:
        return None
    array = np.array(slots, dtype=np.int64)
    return array, free.take(array, job.demand)


def unkeep(free: Free, kept: Kept) -> None:
    """Give the protected nodes back to ``free`` (before the job itself is placed)."""
    slots, alloc = kept
    taken = np.array(alloc, dtype=np.int64).reshape(-1, 3)
    free.cpus[slots] += taken[:, 0]
    free.mem[slots] += taken[:, 1]
    free.gpus[slots] += taken[:, 2]
    free.njobs[slots] -= 1


def protect_hot_swaps(
    config: ClusterConfig,
    queue: Sequence[Job],
    free: Free,
    eligible: Callable[[Job], BoolArray],
    now_ms: int,
) -> dict[str, Kept]:
    """Protect the kept nodes of every hot-swap job (they lead the queue: expediting first)."""
    kept: dict[str, Kept] = {}
    for job in queue:
        if not job.expediting:
            break
        if hot_swap_active(config, job, now_ms):
            held = keep(free, job, free.fits(job.demand, eligible(job)))
            if held is not None:
                kept[job.job_sluid] = held
    return kept


def try_hot_swap(
    free: Free, job: Job, kept: Kept, eligible: BoolArray
) -> tuple[tuple[IntArray, tuple[Segment, ...]] | None, Kept | None]:
    """Place ``job`` on its kept nodes plus replacements; if it cannot, protect them again.

    Returns (placement, None) or (None, the renewed protection).
    """
    unkeep(free, kept)
    fits = free.fits(job.demand, eligible)
    placed = place_hot_swap(free.index, free, job, fits, kept[0])
    if placed is not None:
        return placed, None
    return None, keep(free, job, fits)


def place_hot_swap(
    index: NodeIndex, free: Free, job: Job, fits: BoolArray, kept: IntArray
) -> tuple[IntArray, tuple[Segment, ...]] | None:
    """The kept nodes plus replacements beside them (rank order), or None if none fit now."""
    need = len(job.nodes)
    kept_names = {index.names[i] for i in kept.tolist()}
    topology = index.topology_for(job.partition)
    if isinstance(topology, FlatIndex):
        others = np.flatnonzero(fits & ~np.isin(np.arange(len(index)), kept))
        if len(kept) + len(others) < need:
            return None
        ordered = [index.pos[n] for n in job.nodes if n in kept_names]
        slots = np.concatenate((np.array(ordered, dtype=np.int64), others[: need - len(kept)]))
        return slots, ()
    segments = job.segments or (Segment(index=0, group="", nodes=job.nodes),)
    taken = np.zeros(len(index), dtype=np.bool_)
    chosen: list[int] = []
    placed: list[Segment] = []
    for seg in segments:
        request = PlacementRequest(
            nodes_min=len(seg.nodes),
            nodes_max=len(seg.nodes),
            exclusive_topo=job.spec.exclusive_topo,
            required_nodes=tuple(n for n in seg.nodes if n in kept_names),
        )
        availability = Availability(eligible=fits & ~taken, busy=free.njobs > 0)
        result = place(topology, request, availability)
        if not isinstance(result, Placement):
            return None
        taken[list(result.indices)] = True
        chosen += result.indices
        group = ",".join(s.group for s in result.segments if s.group)
        placed.append(Segment(index=seg.index, group=group, nodes=result.nodes))
    return np.array(chosen, dtype=np.int64), tuple(placed)
