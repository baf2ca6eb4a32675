"""Kill → restart after a node failure: expedited versus normal requeue, on real processes.

Usage::

    .venv/bin/python benchmarks/bench_failover.py [--expedite 20] [--normal 3]
        [--detection 2] [--requeue-delay 120]

A cluster of 8 node daemons (``--detection`` seconds of heartbeat timeout) runs a 4-node job;
one of its daemons is killed with SIGKILL; the time from the kill to the decision that starts
the job's next run (its ``JobStarted`` time) is one sample. The killed daemon is restarted (it
re-registers and returns to service), the job is cancelled, and the next sample begins. Uses
``KAFKA_BOOTSTRAP`` or starts a local broker.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from broker import BenchBroker

from tests.e2e.harness import LocalSystem, apply_config

NODES = 8
CONFIG = "SlurmctldParameters: enable_expedited_requeue\nSchedulerParameters:\n" \
         "  requeue_delay: {delay}\n"


def one_failure(system: LocalSystem, requeue: str, index: int) -> tuple[float, float]:
    """Submit, kill one node of the run; return (kill → node DOWN, kill → next JobStarted)."""
    sluid = system.client.sluids.new()
    system.client.send(sluid, "SubmitJob", {"job_sluid": sluid, "spec": {
        "user": "bench", "nodes_min": 4, "exclusive": True, "requeue": requeue,
        "command": ["sleep", "600"], "time_limit_s": 900, "name": f"f{index}",
        "workdir": str(system.settings.home)}})
    first = system.wait(lambda: _runs(system, sluid, 1), 120, "the first run")[0]
    victim = first["nodes"][index % 4]
    time.sleep(1.0)  # let heartbeats settle
    killed_ms = time.time() * 1000
    system.kill(victim)
    second = system.wait(lambda: _runs(system, sluid, 2), 600, "the second run")[1]
    down_ms = system.client.get(f"/v1/nodes/{victim}")["node"]["state_ms"]
    system.start_node(victim, 2, 4096)
    job_id = system.client.get(f"/v1/jobs/{sluid}")["job"]["job_id"]
    system.client.send(sluid, "CancelJob", {"job_sluid": sluid, "user": "bench"})
    system.wait(lambda: system.client.get(f"/v1/jobs/{job_id}")["job"]["state"] == "CANCELLED",
                60, "the cancel")
    system.wait_nodes_idle(NODES, 120)
    return (down_ms - killed_ms) / 1000, float((second["start_ms"] - killed_ms) / 1000)


def _runs(system: LocalSystem, sluid: str, count: int) -> list[dict[str, object]] | None:
    try:
        runs = system.client.get(f"/v1/jobs/{sluid}")["job"]["runs"]
    except Exception:
        return None
    return list(runs) if len(runs) >= count else None


def measure(bootstrap: str, home: Path, requeue: str, samples: int, detection: float,
            delay: int) -> tuple[list[float], list[float]]:
    system = LocalSystem(bootstrap, home / requeue, f"failover{int(time.time())}{requeue[0]}")
    try:
        system.start("worker", "worker", env={"SLUICE_NODE_TIMEOUT": str(detection)})
        system.start("projections", "projections")
        for i in range(1, NODES + 1):
            system.start_node(f"n{i:02d}", 2, 4096)
        system.wait_nodes_idle(NODES, 120)
        apply_config(system, CONFIG.format(delay=delay))
        detected, restarted = [], []
        for i in range(samples):
            down_s, restart_s = one_failure(system, requeue, i)
            detected.append(down_s)
            restarted.append(restart_s)
            print(f"  {requeue} #{i + 1}: node DOWN after {down_s:.2f} s, "
                  f"next run after {restart_s:.2f} s", flush=True)
        return detected, restarted
    finally:
        system.stop()


def report(label: str, values: list[float]) -> None:
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    print(f"{label}: p50 {statistics.median(values):.2f} s, p99 {p99:.2f} s, "
          f"min {ordered[0]:.2f} s, max {ordered[-1]:.2f} s over {len(values)} failures")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--expedite", type=int, default=20, help="samples with expedite")
    parser.add_argument("--normal", type=int, default=3, help="samples with normal requeue")
    parser.add_argument("--detection", type=float, default=2.0, help="SLUICE_NODE_TIMEOUT (s)")
    parser.add_argument("--requeue-delay", type=int, default=120, help="Slurm's default: 120")
    args = parser.parse_args()
    broker = BenchBroker.start("sluice-failover-", heap=None)
    bootstrap, home = broker.bootstrap, broker.home
    print(f"{NODES} node daemons, 4-node jobs, heartbeat timeout {args.detection:.1f} s, "
          f"requeue_delay {args.requeue_delay} s")
    try:
        for label, mode, samples in (("expedite", "expedite", args.expedite),
                                     ("normal requeue", "yes", args.normal)):
            if samples:
                detected, restarted = measure(bootstrap, home, mode, samples, args.detection,
                                              args.requeue_delay)
                report(f"{label}: kill → node DOWN", detected)
                report(f"{label}: kill → next run started", restarted)
    finally:
        broker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
