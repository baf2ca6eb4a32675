"""``squeue --start`` against a real system (``sluice up`` on the real broker): a job blocked
behind a running one shows the shard's planned start (the running job's limit, on backfill's
grid) and nodes; through the relay and straight through Kafka; as JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.e2e.harness import free_port

pytestmark = [pytest.mark.kafka, pytest.mark.e2e]

Run = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def sluice(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    """``sluice ARGS...`` against one two-node system (2 CPUs each)."""
    tmp = tmp_path_factory.mktemp("qstart")
    unique = f"qst{os.getpid()}x{int(time.time() * 1000) % 10**8}"
    env = {
        **os.environ, "KAFKA_BOOTSTRAP": kafka_bootstrap, "SLUICE_HOME": str(tmp / "home"),
        "SLUICE_TOPIC_PREFIX": unique, "SLUICE_CLUSTER": unique,
        "SLUICE_API": f"127.0.0.1:{free_port()}",
        "SLUICE_WORKER_METRICS": f"127.0.0.1:{free_port()}",
        "SLUICE_ALLOW_ROOT_JOBS": "true",  # the test may run as root: its jobs are root's
        "TZ": "UTC",
    }

    def run(*argv: str, **more: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "cli.main", *argv], cwd=tmp,
                              env={**env, **more}, capture_output=True, text=True,
                              timeout=240, check=False)

    up = run("up", "--nodes", "2", "--cpus", "2", "--mem", "1024")
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        yield run
    finally:
        run("down")


def _start_s(text: str) -> float:
    return time.mktime(time.strptime(text, "%Y-%m-%dT%H:%M:%S")) - time.timezone


def _submit(sluice: Run, *argv: str) -> str:
    done = sluice("submit", "--parsable", *argv)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.strip()


def test_a_job_blocked_behind_a_running_one_shows_its_planned_start_and_nodes(
        sluice: Run) -> None:
    busy = _submit(sluice, "-N", "2", "--exclusive", "-t", "5", "--wrap", "sleep 600")
    try:
        deadline = time.monotonic() + 60
        while sluice("queue", "-j", busy, "-h", "-o", "%t").stdout.strip() != "R":
            assert time.monotonic() < deadline, "the busy job did not start"
            time.sleep(0.5)
        started = time.time()
        wide = _submit(sluice, "-N", "2", "-t", "3", "-J", "wide", "--wrap", "true")
        narrow = _submit(sluice, "-N", "1", "-t", "1", "-J", "narrow", "--wrap", "true")
        shown = sluice("queue", "--start")  # what the squeue wrapper runs
        assert shown.returncode == 0 and shown.stderr == "", shown.stdout + shown.stderr
        header, *lines = shown.stdout.splitlines()
        assert header.split() == ["JOBID", "PARTITION", "NAME", "USER", "ST", "START_TIME",
                                  "NODES", "SCHEDNODES", "NODELIST(REASON)"]
        rows = {line.split()[0]: line.split() for line in lines}
        assert set(rows) == {wide, narrow}  # pending jobs only: not the running one
        # the running job's 5-minute limit, on backfill's grid (bf_resolution: 60 s)
        wide_start = _start_s(rows[wide][5])
        assert 300 - 5 <= wide_start - started <= 300 + 65, shown.stdout
        assert rows[wide][7] == "node[01-02]"
        # conservative backfill: the narrow job after the wide one's 3 minutes, on one node
        assert 180 - 5 <= _start_s(rows[narrow][5]) - wide_start <= 180 + 65, shown.stdout
        assert rows[narrow][7] in ("node01", "node02")
        assert [line.split()[0] for line in lines] == [wide, narrow]  # by start time
        # without the relay: the same plan through Kafka and the long poll (reused: < 10 s)
        direct = sluice("queue", "--start", "-h", SLUICE_RELAY="0")
        assert direct.returncode == 0 and direct.stderr == "", direct.stderr
        assert direct.stdout.splitlines() == lines
        as_json = json.loads(sluice("queue", "--start", "--json").stdout)
        planned = {str(j["job_id"]): j for j in as_json["jobs"]}
        assert planned[wide]["sched_nodes"] == "node[01-02]"
        assert abs(planned[wide]["planned_start_ms"] / 1000 - wide_start) < 1
    finally:
        sluice("cancel", busy)


OLD_RELEASE = "aedbdc86c2fae10531ec1dde5ad5b3b89ec001a1"
"""The last commit of main before ``squeue --start`` planned starts (no ``PlanStarts``)."""


@pytest.fixture(scope="module")
def old_system(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory
               ) -> Iterator[Callable[..., subprocess.CompletedProcess[str]]]:
    """A one-node system of the release before ``PlanStarts`` (worker and views), and this
    release's CLI against it: ``run(tree, *argv)`` with tree ``old`` or ``new``."""
    repo = Path(__file__).resolve().parents[2]
    tmp = tmp_path_factory.mktemp("qstartold")
    old = tmp / "old"
    old.mkdir()
    archive = subprocess.run(["git", "-C", str(repo), "archive", OLD_RELEASE],
                             capture_output=True, check=False)
    if archive.returncode != 0:
        pytest.skip(f"no git history to build the older release from: {archive.stderr!r}")
    subprocess.run(["tar", "-x", "-C", str(old)], input=archive.stdout, check=True)
    unique = f"qso{os.getpid()}x{int(time.time() * 1000) % 10**8}"
    env = {
        **os.environ, "KAFKA_BOOTSTRAP": kafka_bootstrap, "SLUICE_HOME": str(tmp / "home"),
        "SLUICE_TOPIC_PREFIX": unique, "SLUICE_CLUSTER": unique,
        "SLUICE_API": f"127.0.0.1:{free_port()}",
        "SLUICE_WORKER_METRICS": f"127.0.0.1:{free_port()}",
        "SLUICE_ALLOW_ROOT_JOBS": "true", "TZ": "UTC",
    }
    trees = {"old": str(old), "new": str(repo)}

    def run(tree: str, *argv: str, **more: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "cli.main", *argv], cwd=tmp,
                              env={**env, "PYTHONPATH": trees[tree], **more},
                              capture_output=True, text=True, timeout=240, check=False)

    up = run("old", "up", "--nodes", "1", "--cpus", "1", "--mem", "512")
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        yield run
    finally:
        run("old", "down")


def test_an_older_release_never_answers_and_the_queue_shows_na(
        old_system: Callable[..., subprocess.CompletedProcess[str]]) -> None:
    run = old_system
    # the jobs by the old release's CLI: this release's SubmitJob carries JobSpec.reservation,
    # a schema the old views' relay does not know (clients are upgraded after the system)
    busy = run("old", "submit", "--parsable", "-t", "5", "--wrap", "sleep 600")
    assert busy.returncode == 0, busy.stdout + busy.stderr
    waiting = run("old", "submit", "--parsable", "-t", "1", "--wrap", "true")
    assert waiting.returncode == 0, waiting.stdout + waiting.stderr
    job = waiting.stdout.strip()
    try:
        # the old views' relay does not know the request: refused at once
        relayed = run("new", "queue", "--start", "-h", "-o", "%i %S %Y")
        assert relayed.returncode == 0 and "Traceback" not in relayed.stderr, relayed.stderr
        assert relayed.stdout.split() == [job, "N/A", "(null)"]
        assert "could not ask for planned starts" in relayed.stderr
        assert relayed.stderr.rstrip().endswith("START_TIME shows N/A")
        # straight to Kafka: the old worker dead-letters it, nothing answers: the wait ends
        began = time.monotonic()
        direct = run("new", "queue", "--start", "-h", "-o", "%i %S %Y", SLUICE_RELAY="0")
        took = time.monotonic() - began
        assert direct.returncode == 0 and "Traceback" not in direct.stderr, direct.stderr
        assert direct.stdout.split() == [job, "N/A", "(null)"]
        assert "no planned starts within 10 s" in direct.stderr
        assert took < 10 + 15  # the wait and a process start, never a hang
    finally:
        run("old", "cancel", busy.stdout.strip(), job)
