"""OpenMetrics against a real Prometheus: it scrapes the projections and the worker exporter
during a workload on a real broker, promtool accepts the exposition, and every PromQL
expression of the Grafana dashboards returns data.

Prometheus is Debian's ``prometheus`` package (CI installs it); without the binary the test is
skipped with a message saying so.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agents.metrics import observe_batch, start_metrics_server
from agents.shard_runner import BatchStats
from infra.grafana.build_dashboards import DASHBOARDS, build, expressions
from tests.unit.projections.kafka_ledger import (
    LedgerWriter,
    free_port,
    running_projections,
    settings_for,
)
from tests.unit.projections.ledger_builder import LedgerBuilder

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

PROMETHEUS = shutil.which("prometheus")
PROMTOOL = shutil.which("promtool")
needs_prometheus = pytest.mark.skipif(
    PROMETHEUS is None or PROMTOOL is None,
    reason="prometheus/promtool not installed: apt-get install -y prometheus (CI installs it)")


def get(url: str, timeout: float = 10) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as answer:
        return bytes(answer.read())


class Prometheus:
    """A Prometheus server on a free loopback port with a temporary config and storage."""

    def __init__(self, home: Path, targets: dict[str, str]) -> None:
        home.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        config = {"global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                  "scrape_configs": [
                      {"job_name": job, "metrics_path": "/metrics",
                       "static_configs": [{"targets": [target]}]}
                      for job, target in targets.items()]}
        (home / "prometheus.yml").write_text(json.dumps(config))
        self.log = (home / "prometheus.log").open("wb")
        self.process = subprocess.Popen(
            [str(PROMETHEUS), f"--config.file={home / 'prometheus.yml'}",
             f"--storage.tsdb.path={home / 'data'}",
             f"--web.listen-address=127.0.0.1:{self.port}"],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                get(f"http://127.0.0.1:{self.port}/-/ready", timeout=2)
                return
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise AssertionError((home / "prometheus.log").read_text())

    def query(self, expr: str) -> list[dict[str, Any]]:
        url = f"http://127.0.0.1:{self.port}/api/v1/query?" + urllib.parse.urlencode(
            {"query": expr})
        answer = json.loads(get(url))
        assert answer["status"] == "success", answer
        return list(answer["data"]["result"])

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)
        self.log.close()


class Workload:
    """Jobs arriving, waiting, starting, failing, restarting and ending, at wall-clock time."""

    def __init__(self, builder: LedgerBuilder, writer: LedgerWriter) -> None:
        self.b, self.writer = builder, writer
        self.waiting: list[str] = []
        self.running: list[tuple[str, str, list[str], int]] = []
        self.step_no = 0
        self.written = 0
        b = builder
        for i in range(1, 5):
            b.node(f"g{i}", cpus=16, gpus=8, partitions=("gpu",),
                   features=(f"block=b{1 + (i - 1) // 2}",))
        for i in range(1, 3):
            b.node(f"c{i}", cpus=8, partitions=("main",))
        b.node_state("c2", "DRAIN", "maintenance")
        self.flush()

    def flush(self) -> None:
        self.writer.write(self.b.facts[self.written:])
        self.written = len(self.b.facts)

    def step(self) -> None:
        b = self.b
        b.now_ms = max(b.now_ms + 1, int(time.time() * 1000))
        self.step_no += 1
        for i in range(2):
            gpu = (self.step_no + i) % 2 == 0
            job = b.queued(partition="gpu" if gpu else "main", user=f"u{i}", account="a",
                           gpus_per_node=4 if gpu else 0, nodes_min=1)
            b.pending(job, "Priority" if i else "Resources")
            self.waiting.append(job)
        b.held(b.queued(partition="main", user="u3"))
        for job, run, nodes, restarts in self.running[:]:
            self.running.remove((job, run, nodes, restarts))
            if restarts == 0 and self.step_no % 3 == 0:
                b.kill(job, run, "NODE_FAIL", nodes)
                b.ended(job, run, "NODE_FAIL")
                expedite = self.step_no % 2 == 0
                if expedite:
                    b.expediting(job, run)
                b.advance(200)
                b.requeued(job, run, expedite=expedite)
                fresh = b.started(job, nodes, partition=self._partition(job), restart_count=1)
                self.running.append((job, fresh, nodes, 1))
            else:
                b.ended(job, run, "COMPLETED" if restarts or self.step_no % 2 else "FAILED")
        for job in self.waiting[:2]:
            self.waiting.remove(job)
            partition = self._partition(job)
            nodes = ["g1"] if partition == "gpu" else ["c1"]
            self.running.append((job, b.started(job, nodes, partition=partition), nodes, 0))
        b.cycle(self.step_no * 10, self.step_no * 10 + 9, pending=len(self.waiting),
                running=len(self.running), started=2)
        self.flush()
        observe_batch(b.shard, BatchStats(requests=10, facts=12, commands=2, decide_s=0.002,
                                          publish_s=0.008, persist_s=0.001,
                                          fact_names=["JobQueued", "JobStarted", "JobEnded"]))

    def _partition(self, job: str) -> str:
        queued = next(r for n, r in self.b.facts if n == "JobQueued" and r["job_sluid"] == job)
        return str(queued["spec"]["partition"])


@pytest.fixture
def scraped(kafka_bootstrap: str, tmp_path: Path, unique: str) -> Iterator[tuple[Any, Prometheus]]:
    settings = settings_for(kafka_bootstrap, tmp_path / "home", f"m{unique}")
    worker_port = free_port()
    start_metrics_server(worker_port)
    with running_projections(settings) as projections:
        prometheus = Prometheus(tmp_path / "prometheus", {
            "sluice-projections": f"127.0.0.1:{projections.api.port}",
            "sluice-worker": f"127.0.0.1:{worker_port}"})
        try:
            workload = Workload(LedgerBuilder(shard=settings.cluster), LedgerWriter(settings))
            for _ in range(24):
                workload.step()
                time.sleep(0.5)
            projections.wait_applied(settings.cluster, workload.b.seq[settings.cluster])
            yield projections, prometheus
        finally:
            prometheus.stop()


def _concrete(expr: str) -> str:
    return (expr.replace("$__rate_interval", "20s").replace("$partition", ".*")
            .replace("$shard", ".*"))


@needs_prometheus
def test_prometheus_scrapes_slurm_names_and_every_dashboard_expression_returns_data(
    scraped: tuple[Any, Prometheus],
) -> None:
    _projections, prometheus = scraped

    up = {r["metric"]["job"]: r["value"][1] for r in prometheus.query("up")}
    assert up == {"sluice-projections": "1", "sluice-worker": "1"}
    partitions = {r["metric"]["partition"] for r in prometheus.query("slurm_partition_jobs")}
    assert partitions == {"gpu", "main"}
    nodes = {r["metric"]["node"] for r in prometheus.query("slurm_node_gpus_alloc")}
    assert nodes == {"g1", "g2", "g3", "g4", "c1", "c2"}
    assert prometheus.query("slurm_jobs_pending")[0]["value"][1] != "0"
    assert prometheus.query('slurm_partition_jobs_pending{partition="gpu"}')

    empty, not_numbers = [], []
    for uid in DASHBOARDS:
        for expr in expressions(build(uid)):
            result = prometheus.query(_concrete(expr))
            if not result:
                empty.append(f"{uid}: {expr}")
            elif not any(math.isfinite(float(r["value"][1])) for r in result):
                not_numbers.append(f"{uid}: {expr} -> {result}")
    assert not empty, "expressions without data:\n" + "\n".join(empty)
    assert not not_numbers, "expressions without a finite value:\n" + "\n".join(not_numbers)


@needs_prometheus
def test_promtool_accepts_every_exposition(scraped: tuple[Any, Prometheus]) -> None:
    projections, _prometheus = scraped
    for path in ("/metrics", "/metrics/jobs", "/metrics/nodes", "/metrics/partitions",
                 "/metrics/scheduler", "/metrics/jobs-users-accts", "/metrics/sluice"):
        body = projections.get(path)
        checked = subprocess.run([str(PROMTOOL), "check", "metrics"], input=body,
                                 capture_output=True, check=False, timeout=30)
        assert checked.returncode == 0, f"{path}: {checked.stdout!r} {checked.stderr!r}"


def test_the_committed_dashboards_are_what_the_builder_writes() -> None:
    folder = Path(__file__).resolve().parents[2] / "infra" / "grafana" / "dashboards"
    for uid in DASHBOARDS:
        assert json.loads((folder / f"{uid}.json").read_text()) == build(uid), (
            f"run python -m infra.grafana.build_dashboards ({uid} differs)")
