"""The flat-versus-block study (sim/topology_study.py): cluster, mix, metrics, a short run."""

from __future__ import annotations

from pathlib import Path

import pytest

from scheduler import parse_config
from scheduler.topology import parse_topology_yaml
from sim.topology_study import (
    MULTI_GPU_FILE,
    PODS_FILE,
    ClusterShape,
    Containment,
    MixSpec,
    Pod,
    Run,
    cluster_yaml,
    containment,
    free_units,
    generate_mix,
    load_multi_gpu_counts,
    load_pods,
    nvl_cluster,
    run_variant,
    series_stats,
    topology_yaml,
)

GPU = Path(__file__).resolve().parents[3] / ".." / "shared" / "traces" / "gpu" / "alibaba-gpu-v2023"
needs_gpu = pytest.mark.skipif(not GPU.exists(), reason=f"GPU trace not found at {GPU}")

TINY = ClusterShape(racks=2, nodes_per_rack=2, block_sizes=(2, 4))
COUNTS = {2: 222, 4: 206, 8: 556}


def _pods(count: int = 200) -> list[Pod]:
    """Synthetic pods: one a minute, run times 30 s .. 2 days, GPU counts 1, 1, 2, 4, 8."""
    return [
        Pod(
            number=i + 1,
            created_s=60 * i,
            run_s=30 + (i * 7919) % 172_800,
            gpus=(1, 1, 2, 4, 8)[i % 5],
        )
        for i in range(count)
    ]


# --- the cluster ----------------------------------------------------------------------------


def test_the_nvl72_cluster_and_its_topology_parse() -> None:
    cluster = nvl_cluster()
    assert len(cluster.config.nodes) == 576
    assert {(n.gpus, n.cpus) for n in cluster.config.nodes} == {(4, 144)}
    assert sum(n.gpus for n in cluster.config.nodes) == 2304
    blocks = cluster.blocks
    assert blocks.bblock_count == 32 and blocks.bblock_node_cnt == 18
    assert blocks.levels == (0, 1, 2, 3)  # 18, 36, 72, 144 nodes
    assert blocks.bblock_names[0] == "rack01" and blocks.bblock_names[-1] == "rack32"
    assert blocks.nodes.names_of(blocks.bblock_nodes[0]) == tuple(
        f"gb{i:03d}" for i in range(1, 19)
    )
    assert int(blocks.node_bblock[blocks.nodes.position["gb019"]]) == 1
    assert cluster.topologies.default.kind == "block"


def test_the_flat_topology_and_the_flag_parse() -> None:
    assert parse_topology_yaml(topology_yaml(TINY, "flat")).default.kind == "flat"
    config = parse_config(cluster_yaml(TINY, fragmentation_aware=True))
    assert config.scheduler.fragmentation_aware and config.scheduler.policy == "easy"
    assert [n.name for n in config.nodes] == ["gb001", "gb002", "gb003", "gb004"]
    assert not parse_config(cluster_yaml(TINY)).scheduler.fragmentation_aware
    with pytest.raises(ValueError, match="block or flat"):
        topology_yaml(TINY, "tree")


# --- the mix --------------------------------------------------------------------------------


def test_the_mix_is_deterministic_for_a_seed() -> None:
    pods, shape = _pods(), ClusterShape()
    first = generate_mix(pods, COUNTS, MixSpec(seed=7), shape)
    again = generate_mix(pods, COUNTS, MixSpec(seed=7), shape)
    other = generate_mix(pods, COUNTS, MixSpec(seed=8), shape)
    assert first == again
    assert first.jobs != other.jobs


def test_the_mix_follows_its_rules() -> None:
    pods, shape = _pods(), ClusterShape()
    none = generate_mix(pods, COUNTS, MixSpec(multi_node_share=0.0), shape)
    # without multi-node training jobs each pod keeps its GPUs at 4 a node: 8 GPUs = 2 x 4
    by_gpus = {p.gpus: (j.nodes, j.gpus) for p, j in zip(pods, none.jobs, strict=True)}
    assert by_gpus == {1: (1, 1), 2: (1, 2), 4: (1, 4), 8: (2, 4)}
    assert all(60 <= j.run_s <= 86_400 and j.estimate_s == j.run_s for j in none.jobs)
    assert all(j.cpus_per_node == 36 * j.gpus for j in none.jobs)
    everything = generate_mix(pods, COUNTS, MixSpec(multi_node_share=1.0), shape)
    sizes = {j.nodes for j in everything.jobs}
    assert sizes <= {g * r for g in COUNTS for r in (1, 2, 4, 8)} and len(sizes) > 3
    assert all(j.gpus == 4 for j in everything.jobs)
    # the same draws either way: a share only decides which pods become multi-node
    some = generate_mix(pods, COUNTS, MixSpec(multi_node_share=0.3), shape)
    for job, wide, narrow in zip(some.jobs, everything.jobs, none.jobs, strict=True):
        assert (job.nodes, job.gpus) in {(wide.nodes, wide.gpus), (narrow.nodes, narrow.gpus)}


def test_the_arrival_scale_reaches_the_target_load() -> None:
    pods, shape = _pods(), ClusterShape()
    mix = generate_mix(pods, COUNTS, MixSpec(target_load=0.75, jobs=150), shape)
    assert len(mix.jobs) == 150 and mix.jobs[0].submit_s == 0
    span = mix.jobs[-1].submit_s * mix.arrival_scale
    assert mix.gpu_seconds() / (shape.gpus * span) == pytest.approx(0.75)
    assert mix.offered_load == pytest.approx(0.75)


@needs_gpu
def test_the_trace_gives_the_documented_pods_and_gpu_counts() -> None:
    pods = load_pods(GPU / PODS_FILE)
    assert len(pods) == 6150 and pods == sorted(pods, key=lambda p: (p.created_s, p.number))
    assert all(p.gpus >= 1 and p.run_s > 0 and p.created_s >= 10_000_000 for p in pods)
    assert load_multi_gpu_counts(GPU / MULTI_GPU_FILE) == COUNTS
    mix = generate_mix(pods, COUNTS, MixSpec(), ClusterShape())
    assert mix == generate_mix(pods, COUNTS, MixSpec(), ClusterShape())
    assert max(j.nodes for j in mix.jobs) == 64 and 0.19 < mix.multi_node / len(mix.jobs) < 0.23


# --- the metrics on a hand-checked case: 2 base blocks of 2 nodes, BlockSizes=2,4 ----------------

RUNS = [
    Run(0, 10_000, (0, 1), 4),  # A: inside block 0
    Run(5_000, 15_000, (1, 2), 4),  # B: 2 nodes across blocks 0 and 1
    Run(20_000, 30_000, (0, 1, 2, 3), 4),  # C: 4 nodes, the one 2-block aggregate
    Run(0, 40_000, (3,), 1),  # D: one node of block 1
]


def test_containment_counts_by_hand() -> None:
    blocks = nvl_cluster(TINY).blocks
    got = containment(RUNS, blocks)
    # multi-node: A, B, C; fitting a base block: A, B; inside one: A; inside their lowest
    # aggregate: A (a base block) and C (the 4-node aggregate), not B; blocks touched 1+2+2
    # against a minimum of 1+1+2
    assert got == Containment(
        multi=3, fit_base=2, in_base=1, in_aggregate=2, beyond=0, blocks_touched=5, blocks_needed=4
    )
    assert got.base_share == 0.5
    assert got.aggregate_share == pytest.approx(2 / 3)
    assert got.excess_blocks == pytest.approx(1 / 3)


def test_fully_free_blocks_over_time_by_hand() -> None:
    blocks = nvl_cluster(TINY).blocks
    times, counts = free_units(RUNS, blocks)
    # t=0 A and D start (both busy); B keeps block 0 busy until 15; C takes both 20..30;
    # D holds block 1 until 40
    assert times == [0, 5_000, 10_000, 15_000, 20_000, 30_000, 40_000]
    assert counts == [0, 0, 0, 1, 0, 1, 2]
    assert free_units(RUNS, blocks, level=1) == (times, [0, 0, 0, 0, 0, 0, 1])
    stats = series_stats(times, counts, 2, 0, 40_000, 10_000)
    # 0 over [0, 15), 1 over [15, 20), 0 over [20, 30), 1 over [30, 40): 15 / 40
    assert stats.mean == pytest.approx(0.375)
    assert (stats.minimum, stats.p10, stats.p50, stats.samples) == (0, 0.0, 0.0, 5)
    before = series_stats(times, counts, 2, -10_000, 0, 5_000)
    assert before.mean == 2 and before.samples == 3 and before.minimum == 0


def test_an_end_and_a_start_at_the_same_instant_leave_no_gap() -> None:
    blocks = nvl_cluster(TINY).blocks
    runs = [Run(0, 10_000, (0, 1), 4), Run(10_000, 20_000, (0, 1), 4)]
    assert free_units(runs, blocks) == ([0, 10_000, 20_000], [1, 1, 2])


# --- a short end-to-end study -----------------------------------------------------------------


@needs_gpu
def test_a_short_study_places_block_jobs_inside_blocks_at_least_as_often_as_flat() -> None:
    shape = ClusterShape(racks=8)  # 144 nodes: enough contention with a few hundred jobs
    cluster = nvl_cluster(shape)
    pods = load_pods(GPU / PODS_FILE)
    spec = MixSpec(jobs=300, multi_node_share=0.3, replicas=(1, 2, 4))
    mix = generate_mix(pods, load_multi_gpu_counts(GPU / MULTI_GPU_FILE), spec, shape)
    flat = run_variant(mix, cluster, "flat", bf_max_job_test=100)
    block = run_variant(mix, cluster, "block", bf_max_job_test=100)
    assert flat.result.jobs == block.result.jobs == 300
    assert flat.containment.multi == block.containment.multi == mix.multi_node > 50
    assert block.containment.base_share == 1.0 and block.containment.aggregate_share == 1.0
    assert block.containment.base_share >= flat.containment.base_share
    assert flat.containment.base_share < 1.0  # flat does not know the racks
    figures = block.as_json()
    assert figures["jobs_per_wall_s"] > 0 and 0 < figures["gpu_utilization"] <= 1
