"""Nodes come back (ReturnToService), the health agent does not judge from its own silence, and a
mass failure is a suspected partition: real node daemons, worker and broker, real signals."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import LocalSystem, apply_config
from tests.e2e.ledger import TEST_USER, facts

pytestmark = [pytest.mark.kafka, pytest.mark.e2e, pytest.mark.slow]

TIMEOUT_S = 3.0
"""SLUICE_NODE_TIMEOUT of these tests (node daemons heartbeat every 0.5 s)."""
OUTAGE_TIMEOUT_S = 8.0
IN_SERVICE = ("IDLE", "MIXED", "ALLOCATED")
OWN_BROKER_PORT = int(os.environ.get("SLUICE_TEST_HEALTH_PORT", "20600"))
"""This area's private port range (20600..20699; tests/e2e/test_cut_off_daemon.py uses 20610..)."""


def _start(system: LocalSystem, count: int, timeout_s: float = TIMEOUT_S) -> list[str]:
    system.start("worker", "worker", "--loglevel", "info",
                 env={"SLUICE_NODE_TIMEOUT": str(timeout_s)})
    system.start("projections", "projections")
    names = system.start_nodes(count, cpus=2, mem=4096)
    system.wait_nodes_idle(count)
    return names


def _node(system: LocalSystem, name: str) -> dict[str, Any]:
    return dict(system.client.get(f"/v1/nodes/{name}")["node"])


def _job(system: LocalSystem, sluid: str) -> dict[str, Any]:
    return dict(system.client.get(f"/v1/jobs/{sluid}")["job"])


def _submit_sleeper(system: LocalSystem, workdir: Path, nodes: int = 1, requeue: str = "yes",
                    until_file: bool = False) -> str:
    """A job that writes its PID and sleeps (``until_file``: until a file ``stop`` is in its
    working directory, then exits 0); requeued with the default 120 s delay."""
    sluid = system.client.sluids.new()
    wait = ("while [ ! -e stop ]; do sleep 0.2; done; exit 0" if until_file
            else "exec sleep 300")
    command = ["sh", "-c", f'echo $$ > "pid-$SLURM_RESTART_COUNT"; {wait}']
    spec = {"user": TEST_USER, "nodes_min": nodes, "exclusive": True, "command": command,
            "workdir": str(workdir), "requeue": requeue, "time_limit_s": 600}
    system.client.send(sluid, "SubmitJob", {"job_sluid": sluid, "spec": spec})
    system.wait(lambda: _job(system, sluid)["state"] == "RUNNING", 90, "the job to run")
    return sluid


def _signal(system: LocalSystem, name: str, sig: int) -> None:
    os.killpg(system.processes[name].pid, sig)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    return state != "Z"


def _down_facts(system: LocalSystem) -> list[dict[str, Any]]:
    return [r.record for r in facts(system.settings, "NodeStateChanged")
            if r.record["state"] == "DOWN"]


def test_a_paused_node_daemon_is_back_in_service_within_one_timeout_and_its_lost_run_is_killed(
    system: LocalSystem, tmp_path: Path,
) -> None:
    _start(system, 3)
    sluid = _submit_sleeper(system, tmp_path)
    [victim] = _job(system, sluid)["nodes"]
    pid_file = tmp_path / "pid-0"
    pid = int(system.wait(lambda: pid_file.exists() and pid_file.read_text().strip(), 60,
                          "the pid"))

    _signal(system, victim, signal.SIGSTOP)
    system.wait(lambda: _node(system, victim)["state"] == "DOWN", 60, f"{victim} DOWN")
    assert _node(system, victim)["reason"].startswith("Not responding")
    time.sleep(TIMEOUT_S)  # well beyond the timeout
    resumed_ms = time.time() * 1000
    _signal(system, victim, signal.SIGCONT)

    system.wait(lambda: _node(system, victim)["state"] in IN_SERVICE, 60, f"{victim} back")
    back = [r.record for r in facts(system.settings, "NodeStateChanged")
            if r.record["name"] == victim and r.record["state"] == "IDLE"
            and r.record["time_ms"] >= resumed_ms]
    took_s = (back[0]["time_ms"] - resumed_ms) / 1000
    print(f"\nSIGCONT → {victim} back in service in {took_s:.2f} s (timeout {TIMEOUT_S} s)")
    assert took_s < TIMEOUT_S
    # the run it held ended NODE_FAIL and was requeued; the resumed daemon killed what was left
    job = _job(system, sluid)
    assert job["runs"][0]["state"] == "NODE_FAIL"
    assert job["state"] == "PENDING" and job["restart_count"] == 1
    system.wait(lambda: not _alive(pid), 30, "the lost run's process to be killed")


def test_a_worker_paused_longer_than_the_timeout_declares_no_node_down(
    system: LocalSystem, tmp_path: Path,
) -> None:
    names = _start(system, 4)
    sluid = _submit_sleeper(system, tmp_path, nodes=2)

    _signal(system, "worker", signal.SIGSTOP)
    time.sleep(4 * TIMEOUT_S)
    _signal(system, "worker", signal.SIGCONT)
    time.sleep(4 * TIMEOUT_S)  # a full grace and more, with fresh heartbeats

    assert _down_facts(system) == []
    assert facts(system.settings, "NodeSuspected") == []
    assert all(_node(system, n)["state"] in IN_SERVICE for n in names)
    job = _job(system, sluid)
    assert job["state"] == "RUNNING" and job["restart_count"] == 0


@pytest.fixture
def own_broker() -> Iterator[tuple[str, Path]]:
    """A broker of our own (port 20600, data under /tmp/health-kafka-*) that a test may stop."""
    data = Path(f"/tmp/health-kafka-{os.getpid()}")
    assert not _port_open(), f"something already listens on {OWN_BROKER_PORT}"
    try:
        try:
            _kafka("start", data)
        except subprocess.CalledProcessError:  # its warm-up can time out on a loaded machine
            _kafka("stop", data)
            _kafka("start", data)
        yield f"127.0.0.1:{OWN_BROKER_PORT}", data
    finally:
        _kafka("stop", data)
        subprocess.run(["rm", "-rf", str(data)], check=False)


def _kafka(verb: str, data: Path) -> None:
    subprocess.run([sys.executable, "-m", "infra.kafka", "--dir", str(data), "--port",
                    str(OWN_BROKER_PORT), "--timeout", "180", verb], check=True)


def _port_open() -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", OWN_BROKER_PORT)) == 0


def _pid(system: LocalSystem, workdir: Path, run: int = 0) -> int:
    pid_file = workdir / f"pid-{run}"
    return int(system.wait(lambda: pid_file.exists() and pid_file.read_text().strip(), 60,
                           "the pid"))


def _requeues(system: LocalSystem, sluid: str) -> int:
    return len([r for r in facts(system.settings, "JobRequeued")
                if r.record["job_sluid"] == sluid])


def test_a_broker_outage_of_30_s_keeps_requeueable_jobs_running_and_fences_expedited_ones(
    own_broker: tuple[str, Path], tmp_path: Path, unique: str,
) -> None:
    """No node can tell a broker down for everyone from its own partition, so each daemon kills
    a run at its fence horizon past the fence interval (docs/node-daemon.md, "Fencing a cut-off
    daemon"): the expedited job's run, which the shard could restart elsewhere at once, within
    the outage; the requeueable job's run, which it could restart only after the requeue delay
    (600 s here, longer than the outage and the broker's restart), not at all. The health agent,
    blind meanwhile, declares nobody DOWN; the fenced run's report ends it NODE_FAIL when the
    broker is back and the expedited job is requeued once; the other job runs on and ends
    normally, never requeued."""
    bootstrap, data = own_broker
    system = LocalSystem(bootstrap, tmp_path / "home", f"t{unique}")
    try:
        # a restarted broker and its backlog load a shared 2-core machine heavily: a timeout
        # nearer the default (10 s) keeps CPU starvation of the daemons from looking like death
        names = _start(system, 4, OUTAGE_TIMEOUT_S)
        apply_config(system, "SlurmctldParameters: enable_expedited_requeue\n"
                             "SchedulerParameters: requeue_delay=600\n")
        steady, fast = tmp_path / "steady", tmp_path / "fast"
        steady.mkdir()
        fast.mkdir()
        sluid = _submit_sleeper(system, steady, nodes=2, until_file=True)
        expedited = _submit_sleeper(system, fast, requeue="expedite")
        pid, fast_pid = _pid(system, steady), _pid(system, fast)

        _kafka("stop", data)
        assert not _port_open()  # the outage is real
        time.sleep(30)
        assert _alive(pid)  # a requeueable job's run lives through the outage
        assert not _alive(fast_pid)  # an expedited job's is fenced
        _kafka("start", data)
        system.wait(lambda: _job(system, sluid), 120, "the API over the restarted broker")
        time.sleep(2 * OUTAGE_TIMEOUT_S)

        worker_log = (system.settings.home / "logs" / "worker.log").read_text()
        # it knew it could not see: either the heartbeat topic went quiet while its loop ran, or
        # its loop itself was held up through the outage and it stopped judging on return
        assert "health agent is blind" in worker_log or "health agent stalled" in worker_log

        assert _down_facts(system) == []
        assert all(_node(system, n)["state"] in IN_SERVICE for n in names)
        job = _job(system, sluid)
        assert job["state"] == "RUNNING" and job["restart_count"] == 0
        assert _alive(pid) and _requeues(system, sluid) == 0

        assert _job(system, expedited)["restart_count"] == 1
        [ended] = [r.record for r in facts(system.settings, "JobEnded")
                   if r.record["job_sluid"] == expedited]
        assert ended["state"] == "NODE_FAIL" and ended["reason"].startswith("NodeFenced")
        assert _requeues(system, expedited) == 1

        (steady / "stop").touch()  # the requeueable job ends as its command does
        system.wait(lambda: _job(system, sluid)["state"] == "COMPLETED", 60, "the job's end")
        assert _requeues(system, sluid) == 0
    finally:
        system.stop()


def test_more_than_the_guard_share_of_daemons_killed_at_once_is_a_suspected_partition(
    system: LocalSystem, tmp_path: Path,
) -> None:
    names = _start(system, 4)
    sluid = _submit_sleeper(system, tmp_path, nodes=2)
    held = _job(system, sluid)["nodes"]
    victims = [*held, next(n for n in names if n not in held)]  # 3 of 4 > 0.5

    for name in victims:
        system.kill(name)
    system.wait(lambda: len(facts(system.settings, "NodeSuspected")) >= len(victims), 60,
                "the suspected partition")
    time.sleep(2 * TIMEOUT_S)  # re-reports come and go: nothing is acted on

    suspected = {r.record["name"] for r in facts(system.settings, "NodeSuspected")}
    assert set(victims) <= suspected  # a starved survivor may be suspected a moment too
    assert _down_facts(system) == []
    assert _job(system, sluid)["state"] == "RUNNING"
    assert all(_node(system, n)["suspect"].startswith("Suspected partition") for n in victims)

    confirm = subprocess.run(
        [sys.executable, "-m", "cli.main", "nodes", "confirm-down", *victims], capture_output=True,
        text=True, env={**os.environ, **system.settings.as_env()}, timeout=60, check=False,
    )
    assert confirm.returncode == 0, confirm.stderr
    assert "Traceback" not in confirm.stderr

    system.wait(lambda: all(_node(system, n)["state"] == "DOWN" for n in victims), 60,
                "the confirmed nodes DOWN")
    job = system.wait(lambda: (j := _job(system, sluid))["restart_count"] == 1 and j, 60,
                      "the job requeued")
    assert job["runs"][0]["state"] == "NODE_FAIL"
