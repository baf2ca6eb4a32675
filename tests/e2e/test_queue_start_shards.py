"""``squeue --start`` over two shards (partitions on different shards): one request, answered
by each shard with the plan of its own jobs; the queue shows both."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.harness import LocalSystem, apply_config

pytestmark = [pytest.mark.kafka, pytest.mark.e2e, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
CONFIG = """\
Nodes:
  - NodeName: n[01-02]
    CPUs: 2
    RealMemory: 4096
  - NodeName: g[01-02]
    CPUs: 2
    RealMemory: 4096
Partitions:
  - PartitionName: main
    Nodes: n[01-02]
    Default: YES
  - PartitionName: gpu
    Nodes: g[01-02]
"""


@pytest.fixture
def sharded(kafka_bootstrap: str, tmp_path: Path, unique: str) -> Iterator[LocalSystem]:
    local = LocalSystem(kafka_bootstrap, tmp_path / "home", f"t{unique}", shards=2,
                        shard_map="partition:gpu=1,node:g=1")
    try:
        yield local
    finally:
        local.stop()


def test_one_request_plans_the_pending_jobs_of_every_shard(
        sharded: LocalSystem, tmp_path: Path) -> None:
    system = sharded
    system.start_core()
    for node in ("n01", "n02", "g01", "g02"):
        system.start_node(node, 2, 4096)
    system.wait_nodes_idle(4, 180)
    apply_config(system, CONFIG)
    env = {**os.environ, **system.settings.as_env(), "PYTHONPATH": str(REPO), "TZ": "UTC"}

    def sluice(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "cli.main", *argv], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120, check=False)

    def submit(*argv: str) -> str:
        done = sluice("submit", "--parsable", *argv)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout.strip()

    busy = [submit("-p", p, "-N", "2", "--exclusive", "-t", "5", "--wrap", "sleep 600")
            for p in ("main", "gpu")]
    system.wait(lambda: sorted(sluice("queue", "-h", "-t", "R", "-o", "%i").stdout.split())
                == sorted(busy), 120, "both busy jobs to run")
    started = time.time()
    waiting = {submit("-p", p, "-N", "2", "-t", "2", "--wrap", "true"): p
               for p in ("main", "gpu")}
    shown = sluice("queue", "--start", "-h", "-o", "%i %P %S %Y")
    assert shown.returncode == 0 and shown.stderr == "", shown.stdout + shown.stderr
    rows = {line.split()[0]: line.split() for line in shown.stdout.splitlines()}
    assert set(rows) == set(waiting)
    for job, partition in waiting.items():
        _, shown_partition, start, nodes = rows[job]
        assert shown_partition == partition
        assert nodes == ("n[01-02]" if partition == "main" else "g[01-02]")
        at = time.mktime(time.strptime(start, "%Y-%m-%dT%H:%M:%S")) - time.timezone
        assert 300 - 5 <= at - started <= 300 + 65, shown.stdout
    for job in busy:
        sluice("cancel", job)
