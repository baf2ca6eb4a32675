"""The node index: numpy arrays of capacity and free resources, one slot per active node.

Slots are in natural name order (``n2`` before ``n10``), so "the first nodes that fit" is the
deterministic node order everywhere. The index is derived data: :func:`build_index` rebuilds
it from the node rows and the running jobs (after recovery, or when nodes or the config change);
:func:`scheduler.evolve` is its only writer in between (allocate on start, release on end).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
import numpy.typing as npt

from scheduler.config.cluster import ClusterConfig
from scheduler.scheduling.placement import index_topology
from scheduler.shard.model import Job, Node, natural_key
from scheduler.shard.reasons import NodeState
from scheduler.topology import TopologyIndex

__all__ = ["INFINITE", "BoolArray", "IntArray", "NodeIndex", "build_index", "raw_end"]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


class NodeIndex:
    """Capacity, free resources, job counts and partition masks of the active nodes."""

    __slots__ = (
        "_rows",
        "cap_cpus",
        "cap_gpus",
        "cap_mem",
        "free_cpus",
        "free_gpus",
        "free_mem",
        "gpu_code",
        "gpu_codes",
        "names",
        "njobs",
        "part_masks",
        "pos",
        "release_cache",
        "run_end",
        "runs",
        "runs_version",
        "shares",
        "slot_end",
        "slot_end_stale",
        "sluids",
        "topologies",
        "topology",
        "usable",
        "weight",
    )

    def __init__(self, nodes: list[Node], config: ClusterConfig) -> None:
        self.names = [n.name for n in nodes]
        self.sluids = [n.node_sluid for n in nodes]
        self.pos = {name: i for i, name in enumerate(self.names)}
        self.cap_cpus = np.array([n.cpus for n in nodes], dtype=np.int64)
        self.cap_mem = np.array([n.mem_mb for n in nodes], dtype=np.int64)
        self.cap_gpus = np.array([n.gpus for n in nodes], dtype=np.int64)
        types = sorted({n.gpu_type for n in nodes} | {""})
        self.gpu_codes = {t: code for code, t in enumerate(types)}
        self.gpu_code = np.array([self.gpu_codes[n.gpu_type] for n in nodes], dtype=np.int64)
        self.free_cpus = self.cap_cpus.copy()
        self.free_mem = self.cap_mem.copy()
        self.free_gpus = self.cap_gpus.copy()
        self.njobs = np.zeros(len(nodes), dtype=np.int64)
        self.usable = np.array([n.schedulable for n in nodes], dtype=np.bool_)
        configured = {n.name: n.weight for n in config.nodes}
        self.weight = np.array([configured.get(n.name, 1) for n in nodes], dtype=np.int64)
        self.part_masks = _partition_masks(self.names, config)
        # job → (slots, alloc rows); no rows for a run with one share (in ``shares``)
        self.runs: dict[str, tuple[IntArray, IntArray | None]] = {}
        self.shares: dict[str, tuple[int, int, int]] = {}  # job → its share, if one for all
        self._rows: tuple[list[str], IntArray, IntArray, IntArray] | None = None
        # scheduler.scheduling.profile's sorted release events
        self.release_cache: object | None = None
        self.run_end: dict[str, int] = {}  # job → raw end of its run (see raw_end)
        self.runs_version = 0  # counts the changes of runs and usable nodes
        # per slot holding exactly one run: that run's raw end (INFINITE on empty slots)
        self.slot_end = np.full(len(nodes), INFINITE, dtype=np.int64)
        self.slot_end_stale = False  # a shared slot went back to one run: rebuild on demand
        self.topology: TopologyIndex = index_topology(None, self.names)  # the default
        self.topologies: dict[str, TopologyIndex] = {}  # per partition with Topology=

    def __len__(self) -> int:
        return len(self.names)

    def allocate(self, job: Job) -> None:
        """Take a starting job's resources (evolve only)."""
        pos, shares = self.pos, job.alloc
        uniform = bool(shares) and shares.count(shares[0]) == len(shares)
        if uniform:
            try:
                slots = np.array([pos[n] for n in job.nodes], dtype=np.int64)
            except KeyError:  # a node left the index: the general path skips it
                uniform = False
        alloc: IntArray | None = None  # rows per slot; for one share on every node, made lazily
        if uniform:
            cpus, mem, gpus = share = shares[0]
            self.free_cpus[slots] -= cpus
            if mem:
                self.free_mem[slots] -= mem
            if gpus:
                self.free_gpus[slots] -= gpus
            self.shares[job.job_sluid] = share
        else:
            self.shares.pop(job.job_sluid, None)
            kept = [(pos[n], a) for n, a in zip(job.nodes, shares, strict=True) if n in pos]
            slots = np.array([k[0] for k in kept], dtype=np.int64)
            alloc = np.array([k[1] for k in kept], dtype=np.int64).reshape(-1, 3)
            self.free_cpus[slots] -= alloc[:, 0]
            self.free_mem[slots] -= alloc[:, 1]
            self.free_gpus[slots] -= alloc[:, 2]
        self.njobs[slots] += 1
        self.runs[job.job_sluid] = (slots, alloc)
        end = raw_end(job.start_ms, job.time_limit_s, bool(job.kill_reason) or not job.is_running)
        self.run_end[job.job_sluid] = end
        self.slot_end[slots] = end  # meaningful where the slot now holds this run only
        self.runs_changed()

    def release(self, job: Job) -> None:
        """Give an ending job's resources back (evolve only)."""
        held = self.runs.pop(job.job_sluid, None)
        if held is None:
            return
        slots, alloc = held
        share = self.shares.pop(job.job_sluid, None)
        if share is not None:
            cpus, mem, gpus = share
            self.free_cpus[slots] += cpus
            if mem:
                self.free_mem[slots] += mem
            if gpus:
                self.free_gpus[slots] += gpus
        else:
            assert alloc is not None
            self.free_cpus[slots] += alloc[:, 0]
            self.free_mem[slots] += alloc[:, 1]
            self.free_gpus[slots] += alloc[:, 2]
        self.njobs[slots] -= 1
        del self.run_end[job.job_sluid]
        left = self.njobs[slots]
        if np.count_nonzero(left):  # (ndarray.any goes through a Python wrapper)
            self.slot_end[slots[left == 0]] = INFINITE
            self.slot_end_stale = True
        else:
            self.slot_end[slots] = INFINITE
        self.runs_changed()

    def run_end_moved(self, job: Job) -> None:
        """A running job's time limit changed: its run's raw end is start + the new limit."""
        held = self.runs.get(job.job_sluid)
        if held is not None and self.run_end[job.job_sluid]:  # (0: being killed, stays)
            end = raw_end(job.start_ms, job.time_limit_s, False)
            self.run_end[job.job_sluid] = end
            self.slot_end[held[0]] = end
        self.runs_changed()

    def run_killed(self, job_sluid: str) -> None:
        """A run is being killed: it is expected to end now (raw end 0)."""
        held = self.runs.get(job_sluid)
        if held is not None:
            self.run_end[job_sluid] = 0
            self.slot_end[held[0]] = 0
        self.runs_changed()

    def single_run_ends(self) -> IntArray | None:
        """Per slot, the raw end of its one run (INFINITE when empty), when no slot holds more
        than one run; else None."""
        if len(self.njobs) and int(self.njobs.max()) > 1:
            return None
        if self.slot_end_stale:
            self.slot_end[:] = INFINITE
            for sluid, (slots, _) in self.runs.items():
                self.slot_end[slots] = self.run_end[sluid]
            self.slot_end_stale = False
        return self.slot_end

    def runs_changed(self) -> None:
        """Forget what was derived from the runs (a run started, ended or is being killed)."""
        self._rows = None
        self.release_cache = None
        self.runs_version += 1

    def run_rows(self) -> tuple[list[str], IntArray, IntArray, IntArray]:
        """All runs' node rows at once: (job SLUIDs, job number per row, slots, alloc rows).

        Rebuilt only after a run started or ended; row order follows ``runs`` (insertion).
        """
        if self._rows is None:
            jobs = list(self.runs)
            if jobs:
                parts = [self.runs[s] for s in jobs]  # (slots, rows or None)
                owner = np.repeat(np.arange(len(jobs)), [len(p[0]) for p in parts])
                slots = np.concatenate([p[0] for p in parts])
                alloc = np.concatenate([self._alloc_rows(s, self.runs[s]) for s in jobs])
            else:
                owner = slots = np.zeros(0, dtype=np.int64)
                alloc = np.zeros((0, 3), dtype=np.int64)
            self._rows = (jobs, owner, slots, alloc)
        return self._rows

    def _alloc_rows(self, job_sluid: str, held: tuple[IntArray, IntArray | None]) -> IntArray:
        slots, alloc = held
        if alloc is not None:
            return alloc
        rows = np.empty((len(slots), 3), dtype=np.int64)
        rows[:] = self.shares[job_sluid]
        return rows

    def topology_for(self, partition: str) -> TopologyIndex:
        """The topology plugin's index that places jobs of ``partition`` (flat by default)."""
        if partition in self.topologies:
            return self.topologies[partition]
        return self.topology

    def set_usable(self, name: str, state: str) -> None:
        """Follow a node's announced state (evolve only)."""
        i = self.pos.get(name)
        if i is not None:
            self.usable[i] = state in NodeState.SCHEDULABLE
            self.runs_version += 1


INFINITE = 1 << 62
"""A time that never comes (a run without a time limit never ends)."""


def raw_end(start_ms: int, limit_s: int, killing: bool) -> int:
    """A run's expected end before a backfill pass maps it onto its grid: 0 when being killed
    (it ends "now"), INFINITE without a limit, else start plus limit."""
    if killing:
        return 0
    return INFINITE if limit_s <= 0 else start_ms + limit_s * 1000


def _partition_masks(names: list[str], config: ClusterConfig) -> dict[str, BoolArray]:
    listed = {n.name for n in config.nodes}
    member = np.array([not listed or n in listed for n in names], dtype=np.bool_)
    masks = {}
    for part in config.partitions:
        if part.nodes is None:
            masks[part.name] = member.copy()
        else:
            wanted = set(part.nodes)
            masks[part.name] = np.array([n in wanted for n in names], dtype=np.bool_)
    return masks


def build_index(
    nodes: Mapping[str, Node],
    running: Iterable[Job],
    config: ClusterConfig,
    topology_text: str | None = None,
) -> NodeIndex:
    """Rebuild the index from node rows and running jobs (deterministic: natural name order)."""
    active = sorted(
        (n for n in nodes.values() if not n.superseded), key=lambda n: natural_key(n.name)
    )
    index = NodeIndex(active, config)
    for job in running:
        index.allocate(job)
    if topology_text:
        index.topology = index_topology(topology_text, index.names)
    for part in config.partitions:
        if part.topology and topology_text:
            index.topologies[part.name] = index_topology(topology_text, index.names, part.topology)
    return index
