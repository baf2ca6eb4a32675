"""``sbatch --test-only`` against a real system (``sluice up`` on the real broker): Slurm's
will-run line from the shard's plan, a submission's refusal for an invalid job, and no job."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cli.client import Client
from streams.settings import Settings
from tests.e2e.harness import free_port

pytestmark = [pytest.mark.kafka, pytest.mark.e2e]

Run = Callable[..., subprocess.CompletedProcess[str]]
LINE = re.compile(r"sbatch: Job (\d+) to start at (\S+) using (\d+) processors on nodes (\S+) "
                  r"in partition (\S+)")


@pytest.fixture(scope="module")
def system(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory,
           ) -> tuple[Path, dict[str, str]]:
    """The directory and environment of one system (``sluice`` starts it)."""
    tmp = tmp_path_factory.mktemp("testonly")
    unique = f"tst{os.getpid()}x{int(time.time() * 1000) % 10**8}"
    return tmp, {
        **os.environ, "KAFKA_BOOTSTRAP": kafka_bootstrap, "SLUICE_HOME": str(tmp / "home"),
        "SLUICE_TOPIC_PREFIX": unique, "SLUICE_CLUSTER": unique,
        "SLUICE_API": f"127.0.0.1:{free_port()}",
        "SLUICE_WORKER_METRICS": f"127.0.0.1:{free_port()}",
        "SLUICE_ALLOW_ROOT_JOBS": "true",  # the test may run as root: its jobs are root's
        "TZ": "UTC",
    }


@pytest.fixture(scope="module")
def sluice(system: tuple[Path, dict[str, str]]) -> Iterator[Run]:
    """``sluice ARGS...`` against one two-node system (2 CPUs each)."""
    tmp, env = system

    def run(*argv: str, **more: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "cli.main", *argv], cwd=tmp,
                              env={**env, **more}, capture_output=True, text=True, timeout=240,
                              check=False)

    up = run("up", "--nodes", "2", "--cpus", "2", "--mem", "1024")
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        yield run
    finally:
        run("down")


def _sbatch_test_only(sluice: Run, *argv: str) -> subprocess.CompletedProcess[str]:
    """``sbatch --test-only ARGS`` as the sbatch wrapper runs it (cli/slurm_compat/bin/sbatch)."""
    return sluice("submit", "--sbatch", "--test-only", *argv)


def _start_s(text: str) -> float:
    return time.mktime(time.strptime(text, "%Y-%m-%dT%H:%M:%S")) - time.timezone


def _jobs(sluice: Run) -> list[str]:
    return sluice("history", "-n", "-P", "-X", "-o", "JobID").stdout.split()


def test_an_idle_cluster_answers_now_and_queues_nothing(sluice: Run) -> None:
    before = _jobs(sluice)
    result = _sbatch_test_only(sluice, "-N", "2", "-n", "4", "-t", "10", "--wrap", "true")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == ""
    match = LINE.fullmatch(result.stderr.strip())
    assert match is not None, result.stderr
    job_id, start, cpus, nodes, partition = match.groups()
    assert abs(_start_s(start) - time.time()) < 120
    assert (cpus, nodes, partition) == ("4", "node[01-02]", "main")
    assert _jobs(sluice) == before  # no job: sacct shows none
    assert sluice("queue", "-h").stdout == ""  # nor squeue
    shown = sluice("show", "job", job_id)  # nor scontrol show job
    assert shown.returncode == 1 and "Traceback" not in shown.stderr, shown.stdout
    submitted = sluice("submit", "--parsable", "--wrap", "true")
    assert submitted.stdout.strip() == job_id  # the would-be id was the next one


def test_without_the_relay_the_answer_comes_through_kafka_and_the_long_poll(
        sluice: Run) -> None:
    result = sluice("submit", "--test-only", "-t", "5", "--wrap", "true", SLUICE_RELAY="0")
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.fullmatch(r"sluice submit: Job \d+ to start at \S+ using 1 processors on nodes "
                        r"node0[12] in partition main", result.stderr.strip()), result.stderr


def test_a_busy_cluster_answers_the_end_of_the_running_jobs_limit(sluice: Run) -> None:
    busy = sluice("submit", "--parsable", "-N", "2", "--exclusive", "-t", "5", "--wrap",
                  "sleep 600")
    assert busy.returncode == 0, busy.stdout + busy.stderr
    job = busy.stdout.strip()
    try:
        deadline = time.monotonic() + 60
        while sluice("queue", "-j", job, "-h", "-o", "%t").stdout.strip() != "R":
            assert time.monotonic() < deadline, "the busy job did not start"
            time.sleep(0.5)
        started = time.time()
        result = _sbatch_test_only(sluice, "-t", "1", "--wrap", "true")
        assert result.returncode == 0, result.stdout + result.stderr
        match = LINE.fullmatch(result.stderr.strip())
        assert match is not None, result.stderr
        # the 5-minute limit's end, on backfill's grid (bf_resolution, 60 s by default)
        assert 300 - 5 <= _start_s(match.group(2)) - started <= 300 + 65
        assert [line.split()[0] for line in sluice("queue", "-h", "-o", "%i").stdout.split(
            "\n") if line] == [job]
    finally:
        sluice("cancel", job)


def test_an_invalid_job_gets_the_submissions_refusal(sluice: Run) -> None:
    before = _jobs(sluice)
    tested = _sbatch_test_only(sluice, "-N", "9", "--wrap", "true")
    assert _jobs(sluice) == before
    submitted = sluice("submit", "--sbatch", "-N", "9", "--wrap", "true")
    assert tested.returncode == submitted.returncode == 1
    assert "Traceback" not in tested.stderr + tested.stdout
    assert "Batch job submission failed: Requested node configuration is not available" \
        in tested.stderr
    assert tested.stderr == submitted.stderr  # the same reason and words


def test_a_test_under_a_running_jobs_sluid_is_refused_and_does_not_end_its_wait(
        sluice: Run, system: tuple[Path, dict[str, str]]) -> None:
    """Anyone may send a test under the SLUID of another's job (``squeue`` shows SLUIDs): it
    is refused ``SluidInUse``, and ``sbatch --wait`` on the job (a long poll of its end by its
    SLUID) still waits for the job's end instead of returning the test's answer at once."""
    victim = sluice("submit", "-t", "5", "--wrap", "sleep 600")
    assert victim.returncode == 0, victim.stdout + victim.stderr
    match = re.search(r"Submitted batch job (\d+) \((s\w+)\)", victim.stdout + victim.stderr)
    assert match is not None, victim.stdout + victim.stderr
    job_id, job_sluid = match.groups()
    try:
        client = Client(Settings.from_env(system[1]))
        client.sluids.new = lambda: job_sluid  # type: ignore[method-assign]
        answer = client.test_only({"user": "", "command": ["true"], "workdir": str(system[0]),
                                   "time_limit_s": 60}, wait_s=60)
        assert (answer.state, answer.reason) == ("REJECTED", "SluidInUse"), answer
        waited = Client(Settings.from_env(system[1])).wait_ended(job_sluid, 3.0)
        assert waited.state == "UNKNOWN", waited  # the job runs on: no answer yet
    finally:
        sluice("cancel", job_id)
