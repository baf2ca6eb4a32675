"""Flat versus block placement on an NVL72-class cluster (issue 3): the study's pure parts.

The cluster. ``ClusterShape`` (default: 32 racks x 18 nodes x 4 GPUs = 576 nodes, 2,304 GPUs)
is written out as Slurm text and read back through the parsers the system uses: a
topology.yaml with one base block per rack (``rack01`` = ``gb[001-018]``, ...) and
``block_sizes: [18, 36, 72, 144]`` (:func:`topology_yaml`, or ``flat: true``), and a cluster
YAML whose nodes have ``Gres: gpu:4`` (:func:`cluster_yaml`). Node names follow the racks, so
the natural node order the core uses walks rack by rack.

The job mix (:func:`generate_mix`), from the public Alibaba GPU trace (ATC'23):

- **Pods.** ``openb_pod_list_default.csv``: pods asking for at least one GPU, scheduled, with
  ``deletion - scheduled > 0``, created at or after ``window_start_s`` (10,000,000 s: the
  trace's dense last 34 days, which hold 6,150 of those 6,203 pods; the 53 earlier ones are
  long-lived pods spread over 115 days), in creation order (``jobs`` > 0 keeps the first N).
- **Durations.** ``deletion_time - scheduled_time`` (the run time, as ``sim/gpu.py`` reads it),
  clamped to [``min_run_s``, ``max_run_s``] = [60 s, 24 h]: the trace's tail reaches 149 days
  (pods still running when it ends). The estimate (time limit) is the run time: the trace has
  no user estimates.
- **Arrivals.** Creation times relative to the first pod, multiplied by the arrival scale
  (``SimOptions.arrival_scale``) that makes the offered GPU load
  ``sum(GPUs x run) / (cluster GPUs x arrival span)`` equal ``target_load``.
- **Sizes.** For every pod the generator draws three numbers from ``random.Random(seed)``,
  always in the same order, whatever the outcome: ``u``, a GPU count ``g`` (from the
  multi-GPU pods of ``openb_pod_list_multigpu50.csv``: 2, 4 or 8 GPUs with that list's
  frequencies 222 : 206 : 556) and a replica count ``r`` (uniform over ``replicas``,
  1, 2, 4, 8). If ``u < multi_node_share`` the pod becomes a **multi-node training job** of
  ``g x r`` whole nodes (4 GPUs each: 2 to 64 nodes, 8 to 256 GPUs). Otherwise it keeps its
  own GPU demand at 4 GPUs a node: 1, 2 or 4 GPUs on one node (a fractional GPU takes a whole
  one), 8 GPUs as 2 nodes x 4 GPUs (which is then multi-node too).
- **CPU and memory** are proportional to the GPUs (36 CPUs and 240 GiB per GPU; a node has 144
  CPUs and 960 GiB), so the GPU is the only binding resource; the trace's CPU and memory asks
  were made for different nodes.

The metrics (:func:`containment`, :func:`free_units`, :func:`series_stats`) work on the runs as
placed (start, end, node positions in natural node order) against the block layout, whatever
the placement: flat placement is measured against the same racks it does not know about.

The simulation runner (:func:`run_variant`) drives :class:`sim.engine.Simulation` with the
cluster YAML applied through ``ApplyConfig(kind="cluster")`` and the topology through
``ApplyConfig(kind="topology")``; the variants are ``flat``, ``block`` and ``block+frag``
(``TopologyFragmentationAware: YES``).
"""

from __future__ import annotations

import bisect
import csv
import math
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from scheduler import (
    ApplyConfig,
    ClusterConfig,
    JobRejected,
    JobStarted,
    decide,
    parse_config,
)
from scheduler.topology import BlockIndex, TopologySet, build_index, parse_topology_yaml
from sim.engine import SimOptions, SimResult, Simulation
from sim.workload import MachineNode, TraceJob, Workload

__all__ = [
    "MULTI_GPU_FILE",
    "PODS_FILE",
    "VARIANTS",
    "ClusterShape",
    "Containment",
    "Mix",
    "MixSpec",
    "Pod",
    "Run",
    "SeriesStats",
    "StudyCluster",
    "VariantResult",
    "cluster_yaml",
    "containment",
    "free_units",
    "generate_mix",
    "load_multi_gpu_counts",
    "load_pods",
    "node_names",
    "nvl_cluster",
    "run_variant",
    "series_stats",
    "topology_yaml",
]

VARIANTS = ("flat", "block", "block+frag")
PODS_FILE = "openb_pod_list_default.csv"
MULTI_GPU_FILE = "openb_pod_list_multigpu50.csv"


# --- the cluster ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ClusterShape:
    """Racks of nodes of GPUs; one base block per rack; the enabled block sizes (nodes)."""

    racks: int = 32
    nodes_per_rack: int = 18
    gpus_per_node: int = 4
    block_sizes: tuple[int, ...] = (18, 36, 72, 144)
    cpus_per_node: int = 144
    mem_per_node_mb: int = 983_040  # 960 GiB

    @property
    def nodes(self) -> int:
        """Nodes in the cluster."""
        return self.racks * self.nodes_per_rack

    @property
    def gpus(self) -> int:
        """GPUs in the cluster."""
        return self.nodes * self.gpus_per_node


def _width(shape: ClusterShape) -> int:
    return max(3, len(str(shape.nodes)))


def node_names(shape: ClusterShape) -> list[str]:
    """``gb001`` ... in rack order (rack 1 holds the first ``nodes_per_rack``)."""
    width = _width(shape)
    return [f"gb{i:0{width}d}" for i in range(1, shape.nodes + 1)]


def _range(shape: ClusterShape, first: int, last: int) -> str:
    width = _width(shape)
    return f"gb[{first:0{width}d}-{last:0{width}d}]" if last > first else f"gb{first:0{width}d}"


def topology_yaml(shape: ClusterShape, kind: str = "block") -> str:
    """topology.yaml text: ``block`` (one base block per rack) or ``flat``."""
    if kind == "flat":
        return "- topology: flat\n  cluster_default: true\n  flat: true\n"
    if kind != "block":
        raise ValueError(f"kind must be block or flat, not {kind!r}")
    sizes = ", ".join(str(s) for s in shape.block_sizes)
    lines = [
        f"# {shape.racks} racks x {shape.nodes_per_rack} nodes x {shape.gpus_per_node} GPUs",
        "- topology: nvl",
        "  cluster_default: true",
        "  block:",
        f"    block_sizes: [{sizes}]",
        "    blocks:",
    ]
    rack_digits = max(2, len(str(shape.racks)))
    for rack in range(shape.racks):
        first = rack * shape.nodes_per_rack + 1
        lines.append(f"      - block: rack{rack + 1:0{rack_digits}d}")
        lines.append(f"        nodes: {_range(shape, first, first + shape.nodes_per_rack - 1)}")
    return "\n".join(lines) + "\n"


def cluster_yaml(
    shape: ClusterShape,
    *,
    fragmentation_aware: bool = False,
    policy: str = "easy",
    bf_resolution_s: int = 60,
    bf_max_job_test: int = 1000,
) -> str:
    """The cluster configuration (docs/configuration.md): one partition over every node."""
    return "\n".join(
        [
            "ClusterName: nvl72-study",
            "SchedulerType: sched/backfill",
            "SchedulerParameters:",
            f"  bf_policy: {policy}",
            "  bf_window: 43200",
            f"  bf_resolution: {bf_resolution_s}",
            f"  bf_max_job_test: {bf_max_job_test}",
            f"TopologyFragmentationAware: {'YES' if fragmentation_aware else 'NO'}",
            "Nodes:",
            f"  - NodeName: {_range(shape, 1, shape.nodes)}",
            f"    CPUs: {shape.cpus_per_node}",
            f"    RealMemory: {shape.mem_per_node_mb}",
            f"    Gres: gpu:{shape.gpus_per_node}",
            "Partitions:",
            "  - PartitionName: gpu",
            "    Nodes: ALL",
            "    Default: YES",
            "",
        ]
    )


@dataclass(frozen=True, slots=True)
class StudyCluster:
    """The parsed cluster: its configuration, the topologies and the block index."""

    shape: ClusterShape
    config: ClusterConfig
    topologies: TopologySet
    blocks: BlockIndex

    @property
    def machine(self) -> list[MachineNode]:
        """The simulated nodes, as the configuration lists them."""
        return [
            MachineNode(n.name, n.cpus, n.mem_mb, n.gpus, n.gpu_type) for n in self.config.nodes
        ]


def nvl_cluster(shape: ClusterShape | None = None) -> StudyCluster:
    """Generate and parse the cluster and its block topology (raises on a bad text)."""
    shape = shape or ClusterShape()
    config = parse_config(cluster_yaml(shape), "cluster.yaml")
    names = [n.name for n in config.nodes]
    topologies = parse_topology_yaml(
        topology_yaml(shape), filename="topology.yaml", known_nodes=names
    )
    blocks = build_index(topologies.default, names)
    if not isinstance(blocks, BlockIndex):
        raise TypeError("the generated topology is not a block topology")
    return StudyCluster(shape, config, topologies, blocks)


# --- the job mix ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Pod:
    """One GPU pod of the trace: its line number, creation time, run time and whole GPUs."""

    number: int
    created_s: int
    run_s: int
    gpus: int


def _int(text: str) -> int:
    try:
        return int(float(text))
    except ValueError:
        return -1


def load_pods(path: str | Path, window_start_s: int = 10_000_000) -> list[Pod]:
    """The GPU pods of a pod list that were scheduled and ran, created in the window."""
    pods = []
    with Path(path).open(newline="", encoding="utf-8") as handle:
        for number, row in enumerate(csv.DictReader(handle), start=1):
            gpus, scheduled = _int(row["num_gpu"]), _int(row["scheduled_time"])
            created, run = _int(row["creation_time"]), _int(row["deletion_time"]) - scheduled
            if gpus < 1 or scheduled < 0 or run <= 0 or created < window_start_s:
                continue
            pods.append(Pod(number, created, run, gpus))
    pods.sort(key=lambda p: (p.created_s, p.number))
    return pods


def load_multi_gpu_counts(path: str | Path) -> dict[int, int]:
    """How many pods of a pod list ask for each GPU count of 2 or more."""
    counts: dict[int, int] = {}
    with Path(path).open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            gpus = _int(row["num_gpu"])
            if gpus >= 2:
                counts[gpus] = counts.get(gpus, 0) + 1
    return dict(sorted(counts.items()))


@dataclass(frozen=True, slots=True)
class MixSpec:
    """How the pods become a multi-node training mix (see the module's docstring)."""

    seed: int = 2023
    jobs: int = 0  # 0 = every pod of the window
    multi_node_share: float = 0.2
    replicas: tuple[int, ...] = (1, 2, 4, 8)
    target_load: float = 0.9
    min_run_s: int = 60
    max_run_s: int = 86_400
    cpus_per_gpu: int = 36
    mem_per_gpu_mb: int = 245_760


@dataclass(frozen=True, slots=True)
class Mix:
    """The jobs (submit times relative to the first pod) and the arrival scale to use."""

    jobs: tuple[TraceJob, ...]
    arrival_scale: float
    offered_load: float
    spec: MixSpec

    @property
    def multi_node(self) -> int:
        """Jobs of two nodes or more."""
        return sum(1 for j in self.jobs if j.nodes >= 2)

    def size_histogram(self) -> dict[int, int]:
        """Jobs per node count."""
        counts: dict[int, int] = {}
        for job in self.jobs:
            counts[job.nodes] = counts.get(job.nodes, 0) + 1
        return dict(sorted(counts.items()))

    def gpu_seconds(self) -> float:
        """Offered GPU-seconds."""
        return float(sum(j.nodes * j.gpus * j.run_s for j in self.jobs))

    def workload(self, cluster: StudyCluster) -> Workload:
        """The simulator's workload on ``cluster``."""
        return Workload(name="alibaba-nvl72", machine=cluster.machine, jobs=list(self.jobs))


def generate_mix(
    pods: Sequence[Pod],
    multi_gpu_counts: dict[int, int],
    spec: MixSpec,
    shape: ClusterShape,
) -> Mix:
    """The job mix (deterministic for a given seed, pod list and shape)."""
    if not pods:
        raise ValueError("no pods to build a mix from")
    chosen = list(pods[: spec.jobs] if spec.jobs else pods)
    rng = random.Random(spec.seed)
    counts, weights = list(multi_gpu_counts), list(multi_gpu_counts.values())
    per_node, first = shape.gpus_per_node, chosen[0].created_s
    jobs = []
    for pod in chosen:
        u, g, r = rng.random(), rng.choices(counts, weights)[0], rng.choice(spec.replicas)
        if u < spec.multi_node_share:
            nodes, gpus = min(g * r, shape.nodes), per_node
        else:
            nodes = math.ceil(pod.gpus / per_node)
            gpus = math.ceil(pod.gpus / nodes)
        run = min(max(pod.run_s, spec.min_run_s), spec.max_run_s)
        jobs.append(
            TraceJob(
                number=pod.number,
                submit_s=pod.created_s - first,
                run_s=run,
                nodes=nodes,
                estimate_s=run,
                user="multi" if nodes >= 2 else "single",
                cpus_per_node=gpus * spec.cpus_per_gpu,
                mem_mb=gpus * spec.mem_per_gpu_mb,
                gpus=gpus,
            )
        )
    span = jobs[-1].submit_s
    work = float(sum(j.nodes * j.gpus * j.run_s for j in jobs))
    scale = work / (spec.target_load * shape.gpus * span) if span > 0 else 1.0
    return Mix(tuple(jobs), scale, work / (shape.gpus * span * scale) if span else 0.0, spec)


# --- the metrics ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Run:
    """One job's run as placed: times in ms, node positions in natural node order."""

    start_ms: int
    end_ms: int
    nodes: tuple[int, ...]
    gpus_per_node: int = 0
    submit_ms: int = 0


@dataclass(frozen=True, slots=True)
class Containment:
    """How multi-node jobs sit in the block layout.

    ``fit_base``: multi-node jobs no larger than a base block; ``in_base``: those inside one
    base block. ``in_aggregate``: multi-node jobs inside one aggregate of the lowest enabled
    level that can hold them (for jobs that fit a base block, that is the base block);
    ``beyond``: jobs larger than the largest enabled level (not counted in ``in_aggregate``).
    ``blocks_touched`` / ``blocks_needed``: base blocks used vs the minimum, summed.
    """

    multi: int
    fit_base: int
    in_base: int
    in_aggregate: int
    beyond: int
    blocks_touched: int
    blocks_needed: int

    @property
    def base_share(self) -> float:
        """Share of the multi-node jobs that fit a base block placed inside one."""
        return self.in_base / self.fit_base if self.fit_base else 0.0

    @property
    def aggregate_share(self) -> float:
        """Share of the multi-node jobs inside one lowest-level aggregate they fit in."""
        counted = self.multi - self.beyond
        return self.in_aggregate / counted if counted else 0.0

    @property
    def excess_blocks(self) -> float:
        """Base blocks touched per multi-node job beyond the minimum, on average."""
        return (self.blocks_touched - self.blocks_needed) / self.multi if self.multi else 0.0


def containment(runs: Iterable[Run], blocks: BlockIndex) -> Containment:
    """Count the multi-node runs inside one base block / one lowest fitting aggregate."""
    base, levels = blocks.bblock_node_cnt, blocks.levels
    node_bblock = blocks.node_bblock
    multi = fit_base = in_base = in_aggregate = beyond = touched = needed = 0
    for run in runs:
        width = len(run.nodes)
        if width < 2:
            continue
        multi += 1
        bblocks = node_bblock[np.asarray(run.nodes, dtype=np.intp)]
        distinct = np.unique(bblocks)
        touched += len(distinct)
        needed += math.ceil(width / base)
        if width <= base:
            fit_base += 1
            in_base += len(distinct) == 1
        level = next((lv for lv in levels if (base << lv) >= width), None)
        if level is None:
            beyond += 1
        else:
            in_aggregate += len(np.unique(distinct >> level)) == 1
    return Containment(multi, fit_base, in_base, in_aggregate, beyond, touched, needed)


def free_units(
    runs: Iterable[Run], blocks: BlockIndex, level: int = 0
) -> tuple[list[int], list[int]]:
    """The number of fully free level-``level`` units (base blocks at 0) over time.

    A unit is fully free when no running job has a node in it. Returns the change times (ms)
    and the count from each time on (before the first time every unit is free). At equal
    times ends come before starts, as the simulator reports exits before its pass.
    """
    units = -(-blocks.bblock_count // (1 << level))
    events: list[tuple[int, int, tuple[int, ...]]] = []
    for run in runs:
        touched = np.unique(blocks.node_bblock[np.asarray(run.nodes, dtype=np.intp)])
        unit_ids = tuple(int(u) for u in np.unique(touched[touched >= 0] >> level))
        events.append((run.start_ms, 1, unit_ids))
        events.append((run.end_ms, 0, unit_ids))
    events.sort(key=lambda e: (e[0], e[1]))
    jobs_in = [0] * units
    free = units
    times: list[int] = []
    counts: list[int] = []
    for time_ms, is_start, unit_ids in events:
        for unit in unit_ids:
            if is_start:
                free -= jobs_in[unit] == 0
                jobs_in[unit] += 1
            else:
                jobs_in[unit] -= 1
                free += jobs_in[unit] == 0
        if times and times[-1] == time_ms:
            counts[-1] = free
        else:
            times.append(time_ms)
            counts.append(free)
    return times, counts


@dataclass(frozen=True, slots=True)
class SeriesStats:
    """A step function over a window: its time-weighted mean and sampled quantiles."""

    mean: float
    minimum: int
    p10: float
    p50: float
    samples: int


def series_stats(
    times: Sequence[int], counts: Sequence[int], initial: int, t0: int, t1: int, step: int
) -> SeriesStats:
    """Statistics of the step function (``initial`` before ``times[0]``) over [t0, t1].

    The mean is exact (time-weighted); the minimum and quantiles come from samples every
    ``step`` ms from ``t0`` (inclusive) to ``t1`` (inclusive).
    """
    if t1 <= t0 or step <= 0:
        raise ValueError("the window must be non-empty and the step positive")

    def value_at(t: int) -> int:
        i = bisect.bisect_right(times, t) - 1
        return initial if i < 0 else counts[i]

    area, cursor, current = 0.0, t0, value_at(t0)
    for i in range(bisect.bisect_right(times, t0), len(times)):
        if times[i] >= t1:
            break
        area += current * (times[i] - cursor)
        cursor, current = times[i], counts[i]
    area += current * (t1 - cursor)
    samples = np.array([value_at(t) for t in range(t0, t1 + 1, step)], dtype=np.float64)
    return SeriesStats(
        mean=area / (t1 - t0),
        minimum=int(samples.min()),
        p10=float(np.percentile(samples, 10)),
        p50=float(np.percentile(samples, 50)),
        samples=len(samples),
    )


# --- running a variant ---------------------------------------------------------------------


class _StudySimulation(Simulation):
    """The simulator with the study's cluster YAML applied first, recording placements."""

    def __init__(self, workload: Workload, options: SimOptions, cluster_text: str) -> None:
        super().__init__(workload, options)
        self.cluster_text = cluster_text
        self.placed: dict[str, tuple[str, ...]] = {}

    def _register_nodes(self) -> None:
        now = self.base_ms
        apply = ApplyConfig(
            config_sluid=self.mint(now),
            kind="cluster",
            text=self.cluster_text,
            source="cluster.yaml",
        )
        facts = decide(self.state, apply, now)
        if any(isinstance(f, JobRejected) for f in facts):
            raise ValueError(f"the cluster configuration is invalid: {facts[0]}")
        self._apply(facts, now)
        super()._register_nodes()

    def _started(self, fact: JobStarted, now_ms: int) -> None:
        self.placed[fact.job_sluid] = fact.nodes
        super()._started(fact, now_ms)


@dataclass(slots=True)
class VariantResult:
    """One variant's figures."""

    variant: str
    result: SimResult
    containment: Containment
    free_blocks: SeriesStats
    free_36: SeriesStats
    free_72: SeriesStats
    window_gpu_utilization: float
    multi_avg_wait_s: float
    single_avg_wait_s: float
    extra: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        """The figures as plain values."""
        c, r = self.containment, self.result
        return {
            "variant": self.variant,
            "jobs": r.jobs,
            "multi_node_jobs": c.multi,
            "in_one_base_block": round(c.base_share, 4),
            "fit_base_block": c.fit_base,
            "in_lowest_aggregate": round(c.aggregate_share, 4),
            "excess_blocks_per_job": round(c.excess_blocks, 3),
            "free_base_blocks_mean": round(self.free_blocks.mean, 2),
            "free_base_blocks_min": self.free_blocks.minimum,
            "free_base_blocks_p10": round(self.free_blocks.p10, 2),
            "free_base_blocks_p50": round(self.free_blocks.p50, 2),
            "free_36_mean": round(self.free_36.mean, 2),
            "free_72_mean": round(self.free_72.mean, 2),
            "gpu_utilization": r.extra.get("gpu_utilization", 0.0),
            "window_gpu_utilization": round(self.window_gpu_utilization, 4),
            "avg_wait_s": round(r.avg_wait_s, 1),
            "multi_avg_wait_s": round(self.multi_avg_wait_s, 1),
            "single_avg_wait_s": round(self.single_avg_wait_s, 1),
            "avg_bounded_slowdown": round(r.avg_bounded_slowdown, 3),
            "makespan_s": round(r.makespan_s),
            "wall_s": round(r.wall_s, 1),
            "jobs_per_wall_s": round(r.jobs_per_s, 1),
            **self.extra,
        }


def _window_utilization(runs: Sequence[Run], t0: int, t1: int, gpus: int) -> float:
    busy = sum(
        max(0, min(r.end_ms, t1) - max(r.start_ms, t0)) * len(r.nodes) * r.gpus_per_node
        for r in runs
    )
    return busy / (gpus * (t1 - t0)) if t1 > t0 else 0.0


def run_variant(
    mix: Mix,
    cluster: StudyCluster,
    variant: str,
    *,
    sample_step_s: int = 300,
    bf_max_job_test: int = 1000,
) -> VariantResult:
    """Simulate ``mix`` on ``cluster`` with ``flat``, ``block`` or ``block+frag`` placement."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, not {variant!r}")
    shape = cluster.shape
    text = cluster_yaml(
        shape, fragmentation_aware=variant == "block+frag", bf_max_job_test=bf_max_job_test
    )
    options = SimOptions(
        policy="easy",
        topology_text=topology_yaml(shape, "flat" if variant == "flat" else "block"),
        arrival_scale=mix.arrival_scale,
    )
    simulation = _StudySimulation(mix.workload(cluster), options, text)
    result = simulation.run()
    position = cluster.blocks.nodes.position
    runs: list[Run] = []
    multi_waits: list[float] = []
    single_waits: list[float] = []
    for sluid, times in simulation.times.items():
        if times.start_ms < 0 or times.end_ms < 0:
            continue
        nodes = tuple(position[n] for n in simulation.placed[sluid])
        runs.append(Run(times.start_ms, times.end_ms, nodes, times.gpus, times.submit_ms))
        wait = (times.start_ms - times.submit_ms) / 1000
        (multi_waits if len(nodes) >= 2 else single_waits).append(wait)
    t0 = simulation.base_ms
    t1 = max(r.submit_ms for r in runs)
    step = sample_step_s * 1000
    stats = []
    for level in (0, 1, 2):
        times_, counts = free_units(runs, cluster.blocks, level)
        units = -(-cluster.blocks.bblock_count // (1 << level))
        stats.append(series_stats(times_, counts, units, t0, t1, step))
    return VariantResult(
        variant=variant,
        result=result,
        containment=containment(runs, cluster.blocks),
        free_blocks=stats[0],
        free_36=stats[1],
        free_72=stats[2],
        window_gpu_utilization=_window_utilization(runs, t0, t1, shape.gpus),
        multi_avg_wait_s=sum(multi_waits) / len(multi_waits) if multi_waits else 0.0,
        single_avg_wait_s=sum(single_waits) / len(single_waits) if single_waits else 0.0,
    )
