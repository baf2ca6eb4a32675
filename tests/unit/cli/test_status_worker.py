"""``sluice status`` reads the worker's gauges (its metrics server, ``SLUICE_WORKER_METRICS``):
a worker whose state directory is full or read-only is ``PAUSED`` and the command exits 1.
The worker's own registry (agents.metrics) is served by prometheus_client's real HTTP server,
and the views' status by a real API server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import start_http_server

from agents.metrics import REGISTRY
from cli.status import worker_lines, worker_reading
from projections.http import ApiServer
from projections.service import ProjectionService
from streams import state_dir
from streams.settings import Settings
from tests.e2e.harness import free_port

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture()
def worker_metrics() -> Iterator[str]:
    port = free_port()
    server, thread = start_http_server(port, "127.0.0.1", registry=REGISTRY)
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.shutdown()
        thread.join(5)


def _status(tmp_path: Path, api: int, metrics: str, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLUICE_", "KAFKA_"))}
    env.update({"SLUICE_API": f"127.0.0.1:{api}", "SLUICE_WORKER_METRICS": metrics,
                "SLUICE_HOME": str(tmp_path), "SLUICE_AUTH": "none",
                "PYTHONPATH": str(ROOT)})
    return subprocess.run([sys.executable, "-m", "cli.main", "status", *argv], env=env,
                          capture_output=True, text=True, timeout=60, check=False)


def test_a_paused_worker_makes_status_say_so_and_exit_1(tmp_path: Path,
                                                        worker_metrics: str) -> None:
    service = ProjectionService(Settings(home=tmp_path))
    service.caught_up.set()
    api = ApiServer(service, "127.0.0.1", 0)
    api.start()
    try:
        fine = _status(tmp_path, api.port, worker_metrics)
        assert f"worker: state directory writable (metrics at {worker_metrics})" in fine.stdout
        assert "PAUSED" not in fine.stdout, fine.stdout + fine.stderr

        state_dir.alarm.failed(tmp_path / "worker", state_dir.FULL)
        try:
            paused = _status(tmp_path, api.port, worker_metrics)
            as_json = _status(tmp_path, api.port, worker_metrics, "--json")
        finally:
            state_dir.alarm.cleared(tmp_path / "worker")
        assert paused.returncode == 1, paused.stdout + paused.stderr
        assert (f"worker: state directory no space left on device (metrics at "
                f"{worker_metrics}): PAUSED, nothing is decided past what it stored"
                ) in paused.stdout.splitlines()
        assert json.loads(as_json.stdout)["worker"] == {
            "address": worker_metrics, "state_dir": ["no space left on device"],
            "health_blind": False}

        gone = _status(tmp_path, api.port, f"127.0.0.1:{free_port()}")
        assert "worker: metrics at" in gone.stdout and "do not answer" in gone.stdout
        assert "PAUSED" not in gone.stdout
    finally:
        api.stop()


def test_the_worker_lines_for_each_reading() -> None:
    read_only = worker_reading({("sluice_state_dir_read_only", ()): 1.0,
                                ("sluice_health_blind", ()): 1.0}, "w:1")
    lines, paused = worker_lines(read_only)
    assert paused and lines[0] == ("worker: state directory read-only or not writable "
                                   "(metrics at w:1): PAUSED, nothing is decided past what "
                                   "it stored")
    assert "hears no heartbeat" in lines[1]
    assert worker_lines(worker_reading(None, "w:1", "refused"))[1] is False
