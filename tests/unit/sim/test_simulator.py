"""The simulator: trace reading rules, the event loop, metrics, and runs over public traces."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli.simulate import run
from schemas.sluid import SluidClock, format_sluid, mint
from sim import SimOptions, load_gpu_trace, load_swf, simulate
from sim.engine import Simulation
from sim.metrics import JobTimes, summarise
from sim.swf import parse_swf
from sim.workload import MachineNode, TraceJob, Workload

TRACES = Path(__file__).resolve().parents[3] / ".." / "shared" / "traces"
SDSC = TRACES / "swf" / "SDSC-SP2-1998-4.2-cln.swf.gz"
GPU = TRACES / "gpu" / "alibaba-gpu-v2023"
needs_sdsc = pytest.mark.skipif(
    not SDSC.exists(), reason=f"public SWF traces not found at {SDSC.parent}"
)
needs_gpu = pytest.mark.skipif(not GPU.exists(), reason=f"GPU trace not found at {GPU}")

SWF = """\
; MaxProcs: 4
; UnixStartTime: 1000
1 0 0 100 2 -1 -1 2 200 -1 1 1 1 -1 -1 -1 -1 -1
2 10 0 0 1 -1 -1 1 50 -1 1 1 1 -1 -1 -1 -1 -1
3 20 0 30 -1 -1 -1 -1 60 -1 1 1 1 -1 -1 -1 -1 -1
4 30 0 40 3 -1 -1 -1 -1 -1 1 2 1 -1 -1 -1 -1 -1
5 40 0 40 9 -1 -1 9 60 -1 1 2 1 -1 -1 -1 -1 -1
"""


def test_swf_rules_machine_size_drops_and_estimates() -> None:
    workload = parse_swf(SWF.splitlines())
    assert len(workload.machine) == 4 and workload.start_unix_s == 1000
    assert workload.dropped == {
        "run time <= 0": 1,
        "unknown processors": 1,
        "larger than machine": 1,
    }
    [first, fourth] = workload.jobs
    assert (first.number, first.nodes, first.estimate_s, first.run_s) == (1, 2, 200, 100)
    assert (fourth.number, fourth.nodes, fourth.estimate_s) == (4, 3, 40)  # allocated, run time
    assert len(parse_swf(SWF.splitlines(), procs=16).machine) == 16


def _workload(jobs: list[tuple[int, int, int, int]], procs: int = 4) -> Workload:
    """Jobs as (submit s, run s, nodes, estimate s) on ``procs`` single-CPU nodes."""
    return Workload(
        "synthetic",
        [MachineNode(f"n{i}", 1) for i in range(1, procs + 1)],
        [TraceJob(n, s, r, w, e) for n, (s, r, w, e) in enumerate(jobs, 1)],
    )


BLOCKED = [(0, 100, 3, 100), (1, 100, 4, 100), (2, 50, 1, 50), (3, 500, 1, 500)]


def test_fcfs_waits_behind_the_head_and_easy_backfills_the_short_job() -> None:
    fcfs = simulate(_workload(BLOCKED), SimOptions(policy="fcfs"))
    easy = simulate(_workload(BLOCKED), SimOptions(policy="easy"))
    # FCFS: 1 runs 0-100, 2 runs 100-200, 3 and 4 start at 200: waits 0, 99, 198, 197
    assert fcfs.avg_wait_s == pytest.approx((0 + 99 + 198 + 197) / 4)
    # EASY: 3 backfills at 2 (ends 52 < 100); 4 (500 s) would delay 2, so it waits to 200
    assert easy.avg_wait_s == pytest.approx((0 + 99 + 0 + 197) / 4)
    assert easy.jobs == fcfs.jobs == 4 and easy.makespan_s == pytest.approx(700)


def test_conservative_reserves_for_later_jobs_too() -> None:
    result = simulate(_workload(BLOCKED), SimOptions(policy="conservative"))
    assert result.avg_wait_s == pytest.approx((0 + 99 + 0 + 197) / 4)


def test_kill_at_limit_ends_an_overrunning_job_at_its_estimate() -> None:
    overrun = [(0, 300, 1, 100)]
    kept = simulate(_workload(overrun), SimOptions(policy="easy"))
    killed = simulate(_workload(overrun), SimOptions(policy="easy", kill_at_limit=True))
    assert kept.makespan_s == pytest.approx(300)
    assert killed.makespan_s == pytest.approx(100) and killed.killed_at_limit == 1


def test_metrics_bounded_slowdown_and_utilization() -> None:
    jobs = [
        JobTimes(submit_ms=0, run_s=5, width=2, start_ms=10_000, end_ms=15_000),
        JobTimes(submit_ms=0, run_s=20, width=1, start_ms=0, end_ms=20_000),
    ]
    summary = summarise(jobs, 2, [1, 1])
    assert summary.avg_wait_s == 5.0
    assert summary.avg_bounded_slowdown == pytest.approx((15 / 10 + 1) / 2)
    assert summary.makespan_s == 20.0
    assert summary.utilization == pytest.approx((2 * 5 + 20) / (2 * 20))


def test_a_job_too_large_for_the_machine_is_rejected_by_the_core() -> None:
    workload = _workload([(0, 10, 1, 10)])
    workload.jobs.append(TraceJob(9, 1, 10, 1, 10, cpus_per_node=2))
    result = simulate(workload, SimOptions())
    assert (result.jobs, result.rejected) == (1, 1)


@needs_sdsc
def test_sdsc_sp2_slice_is_deterministic_and_sane() -> None:
    workload = load_swf(SDSC)
    assert len(workload.machine) == 128 and workload.dropped == {"run time <= 0": 5681}
    options = SimOptions(policy="easy", max_jobs=1500)
    first, second = simulate(workload, options), simulate(workload, options)
    assert first.as_json() | {"wall_s": 0, "jobs_per_s": 0} == second.as_json() | {
        "wall_s": 0,
        "jobs_per_s": 0,
    }
    assert first.jobs == 1500 and 0 < first.utilization <= 1
    assert first.avg_bounded_slowdown >= 1
    fcfs = simulate(workload, SimOptions(policy="fcfs", max_jobs=1500))
    assert fcfs.avg_wait_s >= first.avg_wait_s


@needs_sdsc
def test_skipping_cycles_that_change_nothing_keeps_every_decision() -> None:
    """The simulator closes a cycle only when it purges or accrues; closing every batch, as the
    shard does, must give the same start and end of every job."""
    workload = load_swf(SDSC)
    runs = []
    for every in (False, True):
        sim = Simulation(workload, SimOptions(policy="easy", max_jobs=3000, every_cycle=every))
        result = sim.run()
        runs.append((result, {s: (t.start_ms, t.end_ms) for s, t in sim.times.items()}))
    (lean, lean_times), (full, full_times) = runs
    assert lean_times == full_times and len(lean_times) == 3000
    assert lean.passes == full.passes and lean.facts < full.facts  # fewer CycleCompleted only


@needs_gpu
def test_the_alibaba_gpu_trace_loads_and_runs() -> None:
    workload = load_gpu_trace(GPU)
    assert len(workload.machine) == 1213
    assert sum(n.gpus for n in workload.machine) == 6212
    result = simulate(workload, SimOptions(policy="easy", max_jobs=800))
    assert result.jobs + result.rejected == 800
    assert "gpu_utilization" in result.as_json()


@needs_sdsc
def test_sluice_simulate_prints_the_metrics_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["simulate", str(SDSC), "--policy", "easy", "--max-jobs", "300", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    for key in (
        "jobs",
        "dropped",
        "avg_wait_s",
        "avg_bounded_slowdown",
        "utilization",
        "makespan_s",
        "wall_s",
        "jobs_per_s",
    ):
        assert key in printed
    assert printed["jobs"] == 300


def test_sluice_simulate_reports_a_missing_trace(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["simulate", "/nonexistent.swf"]) == 2
    assert "no such file" in capsys.readouterr().err


def test_a_topology_places_simulated_jobs_through_the_plugins() -> None:
    topology = "BlockName=b1 Nodes=n[1-4]\nBlockName=b2 Nodes=n[5-8]\nBlockSizes=4\n"
    workload = _workload([(0, 100, 2, 100), (1, 100, 3, 100), (2, 100, 3, 100)], procs=8)
    flat = simulate(workload, SimOptions(policy="easy"))
    blocked = simulate(workload, SimOptions(policy="easy", topology_text=topology))
    # flat packs 2+3+3 into 8 nodes; with blocks of 4 the two 3-node jobs cannot both find
    # a block with 3 free nodes beside the 2-node job, so one waits
    assert flat.avg_wait_s == pytest.approx(0.0)
    assert blocked.avg_wait_s > 0


def test_arrival_scale_compresses_submit_times() -> None:
    workload = _workload([(0, 100, 4, 100), (1000, 100, 4, 100)])
    spread = simulate(workload, SimOptions(policy="easy"))
    packed = simulate(workload, SimOptions(policy="easy", arrival_scale=0.01))
    assert spread.avg_wait_s == 0 and packed.avg_wait_s == pytest.approx(90 / 2)


def test_the_simulators_minting_equals_schemas_mint() -> None:
    workload = Workload(
        name="tiny", start_unix_s=0, machine=[MachineNode("n1", 1, 0, 0, "")], jobs=[]
    )
    sim = Simulation(workload, SimOptions(cluster_id=5))
    clock = SluidClock(5)
    times = [1_000] * 1500 + [1_001, 999, 5_000, 5_000]  # past the last sequence, back, ahead
    for now in times:
        number, clock = mint(clock, now)
        assert sim.mint(now) == format_sluid(number)
