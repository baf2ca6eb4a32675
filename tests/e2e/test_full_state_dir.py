"""A full or read-only state directory neither stops nor floods the worker; it says so and
recovers (streams.state_dir). Real worker, views, node daemon and broker; the worker's state
directory is a small tmpfs the test fills (``mount -t tmpfs``) or mounts read-only (root only).

Before: a full state directory stopped the worker (nothing restarted it), and a read-only one
made a lone worker log a traceback every second.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cli.audit import verify
from projections.replay import read_facts
from tests.e2e.harness import LocalSystem, free_port
from tests.e2e.ledger import TEST_USER, facts
from tests.unit.state_mounts import (
    break_ext4,
    fill,
    mount_ext4,
    mount_tmpfs,
    move_mount,
    remount,
    unmount,
)

pytestmark = [pytest.mark.kafka, pytest.mark.e2e, pytest.mark.slow]

_ALARM = re.compile(r"state directory \S+/worker: no space left on device \(ENOSPC\)")


@pytest.fixture
def worker_fs(system: LocalSystem) -> Iterator[Path]:
    """The worker's state directory on a 64 MiB tmpfs (the processes are stopped before it is
    unmounted)."""
    where = system.settings.home / "worker"
    mount_tmpfs(where, "64m")
    try:
        yield where
    finally:
        system.stop()
        unmount(where)


def _job(system: LocalSystem, sluid: str) -> dict[str, Any]:
    return dict(system.client.get(f"/v1/jobs/{sluid}")["job"])


def _submit(system: LocalSystem, workdir: Path) -> str:
    sluid = system.client.sluids.new()
    spec = {"user": TEST_USER, "command": ["true"], "workdir": str(workdir)}
    system.client.send(sluid, "SubmitJob", {"job_sluid": sluid, "spec": spec})
    return sluid


def _gauge(port: int, name: str) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
        text = answer.read().decode()
    return float(re.search(rf"^{name} (\S+)$", text, re.MULTILINE).group(1))  # type: ignore[union-attr]


def _worker_status(system: LocalSystem, metrics: int) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **system.settings.as_env(),
           "SLUICE_WORKER_METRICS": f"127.0.0.1:{metrics}"}
    return subprocess.run([sys.executable, "-m", "cli.main", "status"], env=env,
                          capture_output=True, text=True, timeout=60, check=False)


def _cli(system: LocalSystem, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **system.settings.as_env()}
    return subprocess.run([sys.executable, "-m", "cli.main", *argv], env=env,
                          capture_output=True, text=True, timeout=60, check=False)


def _worker_log(system: LocalSystem) -> str:
    return (system.settings.home / "logs" / "worker.log").read_text()


def test_a_full_worker_state_directory_pauses_the_worker_which_resumes_and_loses_nothing(
    system: LocalSystem, worker_fs: Path, tmp_path: Path,
) -> None:
    metrics = free_port()
    system.start("worker", "worker", "--loglevel", "info",
                 env={"SLUICE_WORKER_METRICS": f"127.0.0.1:{metrics}"})
    system.start("projections", "projections")
    system.start_nodes(1)
    system.wait_nodes_idle(1)
    before = _submit(system, tmp_path)
    system.wait(lambda: _job(system, before)["state"] == "COMPLETED", 90, "the first job")
    assert _gauge(metrics, "sluice_state_dir_full") == 0

    filler = fill(worker_fs)
    jobs = [_submit(system, tmp_path) for _ in range(5)]
    system.wait(lambda: _ALARM.search(_worker_log(system)), 60, "the worker to say it is full")
    said = time.monotonic()
    assert _gauge(metrics, "sluice_state_dir_full") == 1
    status = _worker_status(system, metrics)  # sluice status reads the worker's gauges
    assert status.returncode == 1, status.stdout + status.stderr
    assert (f"worker: state directory no space left on device (metrics at 127.0.0.1:{metrics})"
            ": PAUSED, nothing is decided past what it stored") in status.stdout.splitlines()
    time.sleep(max(0.0, 20 - (time.monotonic() - said)))  # paused, retrying with back-off
    assert system.processes["worker"].poll() is None  # up
    log = _worker_log(system)
    assert len(_ALARM.findall(log)) == 1, log  # one line within the minute, not a flood
    assert "Traceback" not in log

    filler.unlink()  # the operator frees space: the worker resumes by itself
    system.wait(lambda: all(_job(system, s)["state"] == "COMPLETED" for s in jobs), 120,
                "the jobs submitted meanwhile to complete")
    assert _gauge(metrics, "sluice_state_dir_full") == 0
    assert "PAUSED" not in _worker_status(system, metrics).stdout
    log = _worker_log(system)
    assert "writable again" in log and "Traceback" not in log

    queued = Counter(r.record["job_sluid"] for r in facts(system.settings, "JobQueued"))
    assert queued == Counter([before, *jobs])  # each exactly once: nothing lost or doubled
    started = Counter(r.record["job_sluid"] for r in facts(system.settings, "JobStarted"))
    assert started == Counter([before, *jobs])
    reports = verify(system.settings, read_facts(system.settings))
    assert reports and all(not r.divergences for r in reports), [r.lines() for r in reports]


def test_a_read_only_worker_state_directory_stops_the_worker_with_one_line(
    system: LocalSystem, worker_fs: Path,
) -> None:
    remount(worker_fs, "ro")
    try:
        worker = system.start("worker", "worker", "--loglevel", "info")
        assert worker.wait(60) == 2
    finally:
        remount(worker_fs, "rw")
    log = _worker_log(system)
    assert log.strip().splitlines()[-1] == (
        f"sluice worker: state directory {worker_fs} is not writable: read-only file system "
        "(EROFS)")
    assert "Traceback" not in log


@pytest.fixture
def views_fs(system: LocalSystem) -> Iterator[Path]:
    """The views' state directory on a 64 MiB tmpfs."""
    where = system.settings.home / "projections"
    mount_tmpfs(where, "64m")
    try:
        yield where
    finally:
        system.stop()
        unmount(where)


def _status(system: LocalSystem) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cli.main", "status"], capture_output=True,
                          text=True, env={**os.environ, **system.settings.as_env()}, check=False,
                          timeout=60)


def test_a_full_views_state_directory_pauses_the_views_which_answer_and_catch_up(
    system: LocalSystem, views_fs: Path, tmp_path: Path,
) -> None:
    system.start_core()
    system.start_nodes(1)
    system.wait_nodes_idle(1)
    before = _submit(system, tmp_path)
    system.wait(lambda: _job(system, before)["state"] == "COMPLETED", 90, "the first job")

    filler = fill(views_fs)
    jobs = [_submit(system, tmp_path) for _ in range(5)]
    alarm = re.compile(r"state directory \S+/projections: no space left on device \(ENOSPC\)")
    log_path = system.settings.home / "logs" / "projections.log"
    system.wait(lambda: alarm.search(log_path.read_text()), 60, "the views to say they are full")
    fresh = system.client.get("/v1/status")["freshness"]  # the API answers meanwhile
    assert [t["problem"] for t in fresh["state_dir"]] == ["no space left on device"]
    status = _status(system)
    assert status.returncode == 1 and "no space left on device" in status.stdout
    assert "PAUSED" in status.stdout
    time.sleep(10)
    assert system.processes["projections"].poll() is None
    log = log_path.read_text()
    assert len(alarm.findall(log)) == 1 and "Traceback" not in log, log

    filler.unlink()
    system.wait(lambda: all(_job(system, s)["state"] == "COMPLETED" for s in jobs), 120,
                "the views to catch up")
    assert system.client.get("/v1/status")["freshness"]["state_dir"] == []
    assert _status(system).returncode == 0
    system.kill("projections", signal.SIGTERM)  # what the views stored survives a restart
    system.start("projections", "projections")
    system.wait(lambda: all(_job(system, s)["state"] == "COMPLETED" for s in [before, *jobs]),
                60, "the restarted views")


@pytest.fixture
def node_fs(system: LocalSystem) -> Iterator[Path]:
    """Node n01's state directory on a 16 MiB tmpfs."""
    where = system.settings.home / "nodes" / "n01"
    mount_tmpfs(where, "64m")
    try:
        yield where
    finally:
        system.stop()
        unmount(where)


def test_a_node_whose_state_directory_is_full_holds_its_commands_and_runs_them_later(
    system: LocalSystem, node_fs: Path, tmp_path: Path,
) -> None:
    system.start_core()
    system.start_nodes(1)
    system.wait_nodes_idle(1)
    filler = fill(node_fs)
    jobs = [_submit(system, tmp_path) for _ in range(3)]
    alarm = re.compile(r"state directory \S+/nodes/n01: no space left on device \(ENOSPC\)")
    log_path = system.settings.home / "logs" / "n01.log"
    system.wait(lambda: alarm.search(log_path.read_text()), 60, "the node to say it is full")
    paused = "State directory no space left on device: commands paused"
    system.wait(lambda: system.client.get("/v1/nodes")["nodes"][0].get("suspect") == paused,
                30, "the views to show the node paused")  # heartbeat → health agent → shard
    time.sleep(10)
    assert system.processes["n01"].poll() is None
    node = system.client.get("/v1/nodes")["nodes"][0]
    assert "DOWN" not in node["state"] and "DRAIN" not in node["state"]  # heartbeats on
    assert not any(_job(system, s)["state"] == "COMPLETED" for s in jobs)  # nothing ran
    log = log_path.read_text()
    assert len(alarm.findall(log)) == 1 and "Traceback" not in log, log
    reasons = _cli(system, "nodes", "-R", "-h", "-o", "%E|%T|%N").stdout.splitlines()  # sinfo
    assert reasons == [f"{paused}|{node['state'].lower()}*|n01"], reasons
    status = _cli(system, "status")
    assert f"node n01: {paused}: PAUSED (no new work; its runs go on)" in status.stdout

    filler.unlink()
    system.wait(lambda: all(_job(system, s)["state"] == "COMPLETED" for s in jobs), 120,
                "the held commands to run")
    system.wait(lambda: not system.client.get("/v1/nodes")["nodes"][0].get("suspect"), 30,
                "the pause to end in the views")
    assert "PAUSED" not in _cli(system, "status").stdout
    started = Counter(r.record["job_sluid"] for r in facts(system.settings, "JobStarted"))
    assert started == Counter(jobs)  # each started once, on the node that held it
    assert "writable again" in log_path.read_text()


def test_a_worker_state_directory_that_turns_read_only_pauses_the_worker_until_replaced(
    system: LocalSystem, tmp_path: Path,
) -> None:
    where = system.settings.home / "worker"
    mount_ext4(tmp_path / "worker.img", where)
    try:
        metrics = free_port()
        system.start("worker", "worker", "--loglevel", "info",
                     env={"SLUICE_WORKER_METRICS": f"127.0.0.1:{metrics}"})
        system.start("projections", "projections")
        system.start_nodes(1)
        system.wait_nodes_idle(1)
        before = _submit(system, tmp_path)
        system.wait(lambda: _job(system, before)["state"] == "COMPLETED", 90, "the first job")

        break_ext4(where)  # errors=remount-ro: read-only under the running worker
        jobs = [_submit(system, tmp_path) for _ in range(3)]
        alarm = re.compile(r"state directory \S+/worker: read-only file system \(EROFS\)")
        system.wait(lambda: alarm.search(_worker_log(system)), 60,
                    "the worker to say its directory is read-only")
        assert _gauge(metrics, "sluice_state_dir_read_only") == 1
        time.sleep(10)
        assert system.processes["worker"].poll() is None
        log = _worker_log(system)
        assert len(alarm.findall(log)) == 1 and "Traceback" not in log, log

        # The operator moves the directory to another file system (an ext4 turned read-only
        # by an error cannot be made writable in place; the worker's secret is not a cache):
        # copied to a new one, which is then mounted at its path (docs/operations.md).
        rescued = tmp_path / "rescued"
        mount_tmpfs(rescued, "64m")
        shutil.copytree(where, rescued, symlinks=True, dirs_exist_ok=True)
        unmount(where)
        if not move_mount(rescued, where):  # under a shared mount: copied in place instead
            mount_tmpfs(where, "64m")
            shutil.copytree(rescued, where, symlinks=True, dirs_exist_ok=True)
            unmount(rescued)
        system.wait(lambda: all(_job(system, s)["state"] == "COMPLETED" for s in jobs), 120,
                    "the jobs submitted meanwhile to complete")
        assert _gauge(metrics, "sluice_state_dir_read_only") == 0
        queued = Counter(r.record["job_sluid"] for r in facts(system.settings, "JobQueued"))
        assert queued == Counter([before, *jobs])
        started = Counter(r.record["job_sluid"] for r in facts(system.settings, "JobStarted"))
        assert started == Counter([before, *jobs])
        reports = verify(system.settings, read_facts(system.settings))
        assert reports and all(not r.divergences for r in reports), [r.lines() for r in reports]
    finally:
        system.stop()
        unmount(where)
        unmount(where)  # the ext4 below the tmpfs too, if the test stopped before replacing it
        unmount(tmp_path / "rescued")  # if the test stopped before moving it
