"""The broker killed (SIGKILL) under a running system and started again: the views say they are
cut off (``/v1/status``, ``sluice status`` exit 1) instead of "caught up", the worker's log gets
aiokafka's reconnect errors once each, not ten a second, nodes are not declared DOWN, and all
of it ends by itself once the broker is back. A broker of the test's own, on
``SLUICE_TEST_OUTAGE_PORT`` (default 20620)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.harness import LocalSystem, free_port
from tests.e2e.ledger import facts

pytestmark = [pytest.mark.kafka, pytest.mark.e2e, pytest.mark.slow]

PORT = int(os.environ.get("SLUICE_TEST_OUTAGE_PORT", "20620"))
OUTAGE_S = 20
METRICS = f"127.0.0.1:{free_port()}"


def _kafka(verb: str, data: Path) -> None:
    subprocess.run([sys.executable, "-m", "infra.kafka", "--dir", str(data), "--port", str(PORT),
                    "--timeout", "180", verb], check=True)


def _port_open() -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", PORT)) == 0


@pytest.fixture
def broker() -> Iterator[Path]:
    data = Path(f"/tmp/outage-kafka-{os.getpid()}")
    assert not _port_open(), f"something already listens on {PORT}"
    try:
        _kafka("start", data)
        yield data
    finally:
        _kafka("stop", data)
        subprocess.run(["rm", "-rf", str(data)], check=False)


def _status(system: LocalSystem) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **system.settings.as_env(), "SLUICE_WORKER_METRICS": METRICS}
    return subprocess.run([sys.executable, "-m", "cli.main", "status"], env=env,
                          capture_output=True, text=True, timeout=60, check=False)


def test_a_broker_killed_for_20_s_is_said_by_the_views_and_quietly_by_the_worker(
    broker: Path, tmp_path: Path, unique: str,
) -> None:
    system = LocalSystem(f"127.0.0.1:{PORT}", tmp_path / "home", f"t{unique}")
    try:
        system.start("worker", "worker", "--loglevel", "info",
                     env={"SLUICE_NODE_TIMEOUT": "8", "SLUICE_WORKER_METRICS": METRICS})
        system.start("projections", "projections")
        system.start_nodes(2)
        system.wait_nodes_idle(2)
        system.wait(lambda: _status(system).stdout.startswith("views: caught up"), 60,
                    "the views to catch up")
        log = system.settings.home / "logs" / "worker.log"
        lines_before = len(log.read_text().splitlines())

        pid = int((broker / "node-1" / "broker.pid").read_text())
        os.kill(pid, signal.SIGKILL)
        time.sleep(OUTAGE_S / 2)
        away = _status(system)
        assert away.returncode == 1
        assert away.stdout.startswith("views: CUT OFF from the broker since"), away.stdout
        fresh = system.client.get("/v1/status")["freshness"]
        assert fresh["broker_unreachable_since_ms"] > 0
        time.sleep(OUTAGE_S / 2)
        aiokafka_lines = [line for line in log.read_text().splitlines()[lines_before:]
                          if "Unable connect to node" in line]
        assert 1 <= len(aiokafka_lines) <= 2, len(aiokafka_lines)  # was ~10 a second

        _kafka("start", broker)
        system.wait(lambda: _status(system).stdout.startswith("views: caught up"), 120,
                    "the views to reach the broker again")
        assert not [r for r in facts(system.settings, "NodeStateChanged")
                    if r.record["state"] == "DOWN"]
    finally:
        system.stop()
