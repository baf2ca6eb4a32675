"""Node failures and requeue on real processes: 8 node daemons; a SIGKILLed daemon is a failed
node."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import LocalSystem, apply_config
from tests.e2e.ledger import TEST_USER, facts

pytestmark = [pytest.mark.kafka, pytest.mark.e2e, pytest.mark.slow]

NODES = 8
DETECTION_S = 2.0
CONFIG = """\
SlurmctldParameters: enable_expedited_requeue
SchedulerParameters:
  requeue_delay: {delay}
"""
# The first run sleeps (and is killed with its node); later runs finish at once.
TRAIN = ["sh", "-c", 'echo "run $SLURM_RESTART_COUNT after ${SLUICE_PREVIOUS_RUN_SLUID:-none}"; '
                     'if [ "$SLURM_RESTART_COUNT" = 0 ]; then sleep 120; fi']


def _cluster(system: LocalSystem, delay_s: int = 120, *node_extra: str) -> None:
    system.start("worker", "worker", "--loglevel", "info",
                 env={"SLUICE_NODE_TIMEOUT": str(DETECTION_S)})
    system.start("projections", "projections")
    for i in range(1, NODES + 1):
        system.start_node(f"n{i:02d}", 2, 4096, 0, *node_extra)
    system.wait_nodes_idle(NODES)
    apply_config(system, CONFIG.format(delay=delay_s))


def _submit(system: LocalSystem, workdir: Path, requeue: str, command: list[str],
            nodes: int = 4) -> str:
    sluid = system.client.sluids.new()
    spec = {"user": TEST_USER, "nodes_min": nodes, "exclusive": True, "command": command,
            "workdir": str(workdir), "requeue": requeue, "time_limit_s": 600}
    system.client.send(sluid, "SubmitJob", {"job_sluid": sluid, "spec": spec})
    return sluid


def _job(system: LocalSystem, sluid: str) -> dict[str, Any]:
    return dict(system.client.get(f"/v1/jobs/{sluid}")["job"])


def _run(system: LocalSystem, sluid: str, index: int) -> dict[str, Any]:
    """Run ``index`` of the job, once it has started (it may have ended since)."""
    def started() -> dict[str, Any] | None:
        runs = _job(system, sluid)["runs"]
        return runs[index] if len(runs) > index else None

    return dict(system.wait(started, 120, f"run {index} of {sluid} to start"))


def _fact_names(system: LocalSystem, sluid: str) -> list[str]:
    return [r.name for r in facts(system.settings) if r.record.get("job_sluid") == sluid]


def test_an_expedited_job_restarts_on_a_replacement_node_soon_after_a_node_is_killed(
    system: LocalSystem, tmp_path: Path,
) -> None:
    _cluster(system)
    sluid = _submit(system, tmp_path, "expedite", TRAIN)
    first = _run(system, sluid, 0)
    victim = first["nodes"][1]

    killed_ms = time.time() * 1000
    system.kill(victim)
    second = _run(system, sluid, 1)
    restart_s = (second["start_ms"] - killed_ms) / 1000  # the JobStarted decision time
    print(f"\nexpedite: kill → new run started in {restart_s:.1f} s "
          f"(detection {DETECTION_S:.0f} s)")

    assert victim not in second["nodes"]
    assert second["run_sluid"] != first["run_sluid"]
    assert second["restart_count"] == 1
    assert restart_s < DETECTION_S + 15
    names = _fact_names(system, sluid)
    assert names.index("JobExpediting") < names.index("JobRequeued") < len(names) - 1
    requeued = next(r.record for r in facts(system.settings, "JobRequeued")
                    if r.record["job_sluid"] == sluid)
    assert requeued["expedite"] and requeued["reason"] == "NODE_FAIL"
    assert requeued["begin_time_ms"] == 0
    system.wait(lambda: _job(system, sluid)["state"] == "COMPLETED", 60, "the second run to end")
    output = (tmp_path / f"sluice-{_job(system, sluid)['job_id']}.out").read_text()
    assert f"run 1 after {first['run_sluid']}" in output  # the checkpoint hook
    node = system.client.get(f"/v1/nodes/{victim}")["node"]
    assert node["state"].startswith("DOWN")


def test_a_normal_requeue_waits_the_requeue_delay_with_reason_begin_time(
    system: LocalSystem, tmp_path: Path,
) -> None:
    delay_s = 8
    _cluster(system, delay_s)
    sluid = _submit(system, tmp_path, "yes", TRAIN)
    first = _run(system, sluid, 0)

    killed_ms = time.time() * 1000
    system.kill(first["nodes"][0])
    system.wait(lambda: _job(system, sluid)["reason"] == "BeginTime", 60, "reason BeginTime")
    second = _run(system, sluid, 1)
    restart_s = (second["start_ms"] - killed_ms) / 1000
    print(f"\nnormal requeue (requeue_delay={delay_s}): kill → new run in {restart_s:.1f} s")

    assert restart_s >= delay_s + 1
    assert second["restart_count"] == 1
    requeued = next(r.record for r in facts(system.settings, "JobRequeued")
                    if r.record["job_sluid"] == sluid)
    assert not requeued["expedite"] and requeued["begin_time_ms"] > 0


def test_a_non_zero_exit_with_a_failing_epilog_is_expedited_and_drains_the_node(
    system: LocalSystem, tmp_path: Path,
) -> None:
    epilog = tmp_path / "epilog.sh"
    epilog.write_text('#!/bin/sh\n[ "$SLURMD_NODENAME" = n01 ] && exit 1\nexit 0\n')
    epilog.chmod(0o755)
    _cluster(system, 120, "--epilog", str(epilog))
    command = ["sh", "-c", '[ "$SLURM_RESTART_COUNT" = 0 ] && exit 3; exit 0']
    sluid = _submit(system, tmp_path, "expedite", command, nodes=4)
    first = _run(system, sluid, 0)
    assert "n01" in first["nodes"]  # first fit: the node whose epilog fails is in the run

    second = _run(system, sluid, 1)

    assert "n01" not in second["nodes"]

    names = _fact_names(system, sluid)
    assert "JobExpediting" in names
    requeued = next(r.record for r in facts(system.settings, "JobRequeued")
                    if r.record["job_sluid"] == sluid)
    assert requeued["expedite"] and requeued["reason"] == "EXIT_NONZERO"
    node = system.client.get("/v1/nodes/n01")["node"]
    assert "DRAIN" in node["state"] and node["reason"] == "Epilog error"


def test_a_non_zero_exit_without_an_epilog_failure_is_requeued_held(
    system: LocalSystem, tmp_path: Path,
) -> None:
    _cluster(system)
    sluid = _submit(system, tmp_path, "expedite", ["sh", "-c", "exit 3"], nodes=2)

    system.wait(lambda: _job(system, sluid)["reason"] == "JobHeldUser", 90, "JobHeldUser")

    job = _job(system, sluid)
    assert job["state"] == "PENDING" and job["priority"] == 0
    requeued = next(r.record for r in facts(system.settings, "JobRequeued")
                    if r.record["job_sluid"] == sluid)
    assert requeued["held"] and not requeued["expedite"]


def test_expedite_is_refused_at_submit_when_the_cluster_does_not_enable_it(
    system: LocalSystem, tmp_path: Path,
) -> None:
    system.start("worker", "worker", "--loglevel", "info")
    system.start("projections", "projections")

    sluid = _submit(system, tmp_path, "expedite", ["true"])

    job = system.wait(lambda: _job(system, sluid), 60, "the answer")
    assert job["state"] == "REJECTED"
    assert job["reason"] == "ExpediteNotEnabled"
