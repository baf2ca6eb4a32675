"""Two shards over two workers: the shard map routes partitions and nodes; each shard decides
its own jobs on its own nodes, in its own gap-free sequence; ``squeue --start`` is one request
answered by each shard with the plan of its own jobs."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.harness import LocalSystem, apply_config
from tests.e2e.ledger import TEST_USER, facts

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


def test_two_shards_on_two_workers_each_run_their_partitions_jobs(
    sharded: LocalSystem, tmp_path: Path,
) -> None:
    system = sharded
    home = system.settings.home
    secret = str(home / "worker" / "inbox.key")
    for name in ("worker-a", "worker-b"):
        system.start(name, "worker", "--loglevel", "info",
                     env={"SLUICE_HOME": str(home / name), "SLUICE_WORKER_SECRET": secret})
    system.start("projections", "projections")
    for node in ("n01", "n02", "g01", "g02"):
        system.start_node(node, 2, 4096)
    system.wait_nodes_idle(4, 180)
    # the group has settled: each worker owns one shard
    def each_owns_one() -> bool:
        return all(system.shard_owner({w: home / w}) for w in ("worker-a", "worker-b"))

    system.wait(each_owns_one, 120, "each worker to own a shard")
    apply_config(system, CONFIG)

    jobs = {}
    for partition in ("main", "gpu", "main", "gpu"):
        sluid = system.client.sluids.new()
        system.client.send(sluid, "SubmitJob", {"job_sluid": sluid, "spec": {
            "user": TEST_USER, "partition": partition, "nodes_min": 2, "nodes_max": 2,
            "command": ["true"], "workdir": str(tmp_path)}})
        jobs[sluid] = partition

    def all_completed() -> bool:
        ended = {r.record["job_sluid"]: r for r in facts(system.settings, "JobEnded")}
        return set(ended) >= set(jobs)

    system.wait(all_completed, 240, "every job to end")
    ledger = facts(system.settings)
    shard_of = {r.record["job_sluid"]: r.record["shard"]
                for r in ledger if r.name == "JobQueued"}
    started = {r.record["job_sluid"]: r.record["nodes"] for r in ledger if r.name == "JobStarted"}
    ended = {r.record["job_sluid"]: r.record["state"] for r in ledger if r.name == "JobEnded"}
    cluster = system.settings.cluster
    for sluid, partition in jobs.items():
        index = 1 if partition == "gpu" else 0
        assert shard_of[sluid] == f"{cluster}-{index}", (partition, shard_of[sluid])
        prefix = "g" if partition == "gpu" else "n"
        assert sorted(started[sluid]) == [f"{prefix}01", f"{prefix}02"]
        assert ended[sluid] == "COMPLETED"
    for shard in (f"{cluster}-0", f"{cluster}-1"):  # each shard its own gap-free sequence
        seqs = sorted(r.record["shard_seq"] for r in ledger if r.record["shard"] == shard)
        assert seqs == list(range(1, len(seqs) + 1)), shard
    assert Counter(shard_of.values()) == {f"{cluster}-0": 2, f"{cluster}-1": 2}


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
