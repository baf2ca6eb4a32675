"""A node daemon cut off from the broker fences its own runs (docs/node-daemon.md, "Fencing a
cut-off daemon"): real broker, worker and daemons; one daemon reaches the broker through a
loopback TCP proxy the test cuts (:mod:`tests.e2e.cut_proxy`), the others directly.

The job runs on the cut-off node and has the expedite flag, so the shard starts it elsewhere as
soon as it declares the node DOWN: the old copy's process must be gone before the new one
starts. A requeueable job, which the shard starts elsewhere only after the requeue delay, lives
on past the DOWN and is gone before that. A blip shorter than the fence kills nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.cut_proxy import CutProxy
from tests.e2e.harness import LocalSystem, apply_config
from tests.e2e.ledger import TEST_USER, facts

pytestmark = [pytest.mark.kafka, pytest.mark.e2e, pytest.mark.slow]

TIMEOUT_S = 6.0
"""SLUICE_NODE_TIMEOUT of the worker and the daemons (heartbeat 0.5 s): the runs are fenced
4.2 s after the last delivered heartbeat, the node is DOWN no sooner than 5.4 s after it."""
BASE_PORT = int(os.environ.get("SLUICE_TEST_FENCE_PORT", "20610"))
"""The broker's port; the proxied listener is the next one and the proxy the one after (this
area's private port range, 20600..20699, as tests/e2e/test_node_return.py)."""
EXPEDITE = "SlurmctldParameters: enable_expedited_requeue\n"
CUT, DIRECT = "n01", "n02"


@pytest.fixture(scope="module")
def cut_broker() -> Iterator[tuple[str, CutProxy]]:
    """A broker of our own with a second listener advertised at a proxy's port, and the proxy."""
    data = Path(f"/tmp/fence-e2e-kafka-{os.getpid()}")

    def kafka(*verb: str) -> None:
        subprocess.run([sys.executable, "-m", "infra.kafka", "--dir", str(data), "--port",
                        str(BASE_PORT), "--timeout", "180", *verb], check=True)

    try:
        kafka("start", "--proxied", f"{BASE_PORT + 1}:{BASE_PORT + 2}")
        proxy = CutProxy(BASE_PORT + 2, BASE_PORT + 1)
        try:
            yield f"127.0.0.1:{BASE_PORT}", proxy
        finally:
            proxy.close()
    finally:
        kafka("stop")
        subprocess.run(["rm", "-rf", str(data)], check=False)


@pytest.fixture
def cut_system(cut_broker: tuple[str, CutProxy], tmp_path: Path,
               unique: str) -> Iterator[tuple[LocalSystem, CutProxy]]:
    bootstrap, proxy = cut_broker
    proxy.restore()
    system = LocalSystem(bootstrap, tmp_path / "home", f"t{unique}")
    try:
        timeout = {"SLUICE_NODE_TIMEOUT": str(TIMEOUT_S)}
        system.start("worker", "worker", "--loglevel", "info", env=timeout)
        system.start("projections", "projections")
        system.start(CUT, "node", "--name", CUT, "--cpus", "2", "--mem", "4096", "--heartbeat",
                     "0.5", "--kill-wait", "3",
                     env={**timeout, "KAFKA_BOOTSTRAP": f"127.0.0.1:{BASE_PORT + 2}"})
        system.wait_nodes_idle(1)
        apply_config(system, EXPEDITE)
        yield system, proxy
    finally:
        proxy.restore()
        system.stop()


def _job(system: LocalSystem, sluid: str) -> dict[str, Any]:
    return dict(system.client.get(f"/v1/jobs/{sluid}")["job"])


def _node(system: LocalSystem, name: str) -> dict[str, Any]:
    return dict(system.client.get(f"/v1/nodes/{name}")["node"])


def _submit(system: LocalSystem, workdir: Path, requeue: str = "expedite") -> tuple[str, int]:
    """An expedite job (or ``requeue``) on the only node (the cut one) that writes its pid and
    start time per run and sleeps; returns its SLUID and the first run's pid."""
    sluid = system.client.sluids.new()
    command = ["sh", "-c", 'n=$SLURM_RESTART_COUNT; date +%s.%N > "start-$n"; '
                           'echo $$ > "pid-$n"; exec sleep 300']
    spec = {"user": TEST_USER, "nodes_min": 1, "exclusive": True, "command": command,
            "workdir": str(workdir), "requeue": requeue, "time_limit_s": 600}
    system.client.send(sluid, "SubmitJob", {"job_sluid": sluid, "spec": spec})
    system.wait(lambda: _job(system, sluid)["state"] == "RUNNING", 90, "the job to run")
    assert _job(system, sluid)["nodes"] == [CUT]
    pid_file = workdir / "pid-0"
    return sluid, int(system.wait(lambda: pid_file.exists() and pid_file.read_text().strip(),
                                  60, "the first run's pid"))


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def _log(system: LocalSystem, name: str) -> str:
    return (system.settings.home / "logs" / f"{name}.log").read_text(errors="replace")


def test_a_cut_off_daemon_kills_its_run_before_the_job_starts_elsewhere(
    cut_system: tuple[LocalSystem, CutProxy], tmp_path: Path,
) -> None:
    system, proxy = cut_system
    sluid, pid = _submit(system, tmp_path)
    system.start(DIRECT, "node", "--name", DIRECT, "--cpus", "2", "--mem", "4096",
                 "--heartbeat", "0.5", "--kill-wait", "3",
                 env={"SLUICE_NODE_TIMEOUT": str(TIMEOUT_S)})
    system.wait_nodes_idle(1)  # the direct node, where the job goes next

    proxy.cut()
    cut_at = time.time()
    deadline = time.monotonic() + 60
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    gone_at = time.time()  # the old copy was gone by then (polled every 20 ms)
    assert not _alive(pid), "the cut-off node's run was never killed"
    restart = tmp_path / "start-1"
    system.wait(restart.exists, 60, "the job to start again on the other node")
    started_again = float(system.wait(lambda: restart.read_text().strip(), 10, "its start"))
    print(f"\ncut → old run gone {gone_at - cut_at:.2f} s, → new run started "
          f"{started_again - cut_at:.2f} s (timeout {TIMEOUT_S} s)")
    assert gone_at < started_again, "the job ran twice at once"
    assert _job(system, sluid)["nodes"] == [DIRECT]

    # the ledger agrees: the first run ended NODE_FAIL (the node went DOWN), once
    ends = [r.record for r in facts(system.settings, "JobEnded")
            if r.record["job_sluid"] == sluid]
    assert [e["state"] for e in ends] == ["NODE_FAIL"]
    assert ends[0]["time_ms"] / 1000 > gone_at - 0.05  # ended in the shard after it died here
    assert "runs fenced" in _log(system, CUT)

    proxy.restore()  # the daemon's heartbeats are delivered again: back in service
    system.wait(lambda: _node(system, CUT)["state"] in ("IDLE", "MIXED"), 60, f"{CUT} back")
    time.sleep(2 * TIMEOUT_S)  # its fenced run's report arrives and changes nothing
    job = _job(system, sluid)
    assert job["state"] == "RUNNING" and job["restart_count"] == 1
    requeues = [r for r in facts(system.settings, "JobRequeued")
                if r.record["job_sluid"] == sluid]
    assert len(requeues) == 1
    assert _alive(int((tmp_path / "pid-1").read_text()))


def test_a_requeueable_job_outlives_the_down_and_is_gone_before_its_requeue_delay_ends(
    cut_system: tuple[LocalSystem, CutProxy], tmp_path: Path,
) -> None:
    """Its run's horizon is the requeue delay (4 s here): fenced 4.2 + 4 s after the last
    delivered heartbeat, after the node is DOWN (5.4 s at the soonest) and before the job can
    start elsewhere (the DOWN plus 5 s)."""
    system, proxy = cut_system
    apply_config(system, EXPEDITE + "SchedulerParameters: requeue_delay=4\n")
    sluid, pid = _submit(system, tmp_path, requeue="yes")
    system.start(DIRECT, "node", "--name", DIRECT, "--cpus", "2", "--mem", "4096",
                 "--heartbeat", "0.5", "--kill-wait", "3",
                 env={"SLUICE_NODE_TIMEOUT": str(TIMEOUT_S)})
    system.wait_nodes_idle(1)

    proxy.cut()
    cut_at = time.time()
    system.wait(lambda: _node(system, CUT)["state"] == "DOWN", 60, f"{CUT} DOWN")
    down_at = time.time()
    assert _alive(pid), "fenced as soon as an expedited job's run: its horizon was ignored"
    deadline = time.monotonic() + 60
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    gone_at = time.time()
    assert not _alive(pid), "the cut-off node's run was never killed"
    restart = tmp_path / "start-1"
    system.wait(restart.exists, 60, "the job to start again on the other node")
    started_again = float(system.wait(lambda: restart.read_text().strip(), 10, "its start"))
    print(f"\ncut → DOWN {down_at - cut_at:.2f} s, → old run gone {gone_at - cut_at:.2f} s, "
          f"→ new run started {started_again - cut_at:.2f} s (timeout {TIMEOUT_S} s, "
          "requeue delay 4 s)")
    assert gone_at < started_again, "the job ran twice at once"
    assert _job(system, sluid)["nodes"] == [DIRECT]
    assert "runs fenced" in _log(system, CUT)


def test_a_blip_shorter_than_the_fence_kills_nothing(
    cut_system: tuple[LocalSystem, CutProxy], tmp_path: Path,
) -> None:
    system, proxy = cut_system
    sluid, pid = _submit(system, tmp_path)
    proxy.cut()
    time.sleep(1.5)
    proxy.restore()
    time.sleep(2 * TIMEOUT_S)
    assert _alive(pid)
    job = _job(system, sluid)
    assert job["state"] == "RUNNING" and job["restart_count"] == 0
    assert _node(system, CUT)["state"] in ("ALLOCATED", "MIXED")
    assert "fenced" not in _log(system, CUT)
    assert not [r for r in facts(system.settings, "NodeStateChanged")
                if r.record["name"] == CUT and r.record["state"] == "DOWN"]
