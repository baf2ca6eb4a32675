"""Another user's ``squeue --start`` under a victim's job SLUID, against a real system.

Any user may send a ``PlanStarts`` and name it by any SLUID: an attacker who read a pending
job's SLUID (``GET /v1/jobs``) sends one under it. The waits that poll that job without a
nonce (srun's wait for its allocation, ``sbatch --wait``, salloc's end) still get the job.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator

import pytest

from tests.e2e.harness import free_port

pytestmark = [pytest.mark.kafka, pytest.mark.e2e]

Run = Callable[..., subprocess.CompletedProcess[str]]

_ATTACK = """
import sys
from cli.client import Client
from streams.settings import Settings
Client(Settings.from_env()).send(sys.argv[1], "PlanStarts",
                                 {"request_sluid": sys.argv[1], "user": "", "nonce": 4242})
"""


@pytest.fixture(scope="module")
def system(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[tuple[Run, str]]:
    tmp = tmp_path_factory.mktemp("qhijack")
    unique = f"qhj{os.getpid()}x{int(time.time() * 1000) % 10**8}"
    api = f"127.0.0.1:{free_port()}"
    env = {
        **os.environ, "KAFKA_BOOTSTRAP": kafka_bootstrap, "SLUICE_HOME": str(tmp / "home"),
        "SLUICE_TOPIC_PREFIX": unique, "SLUICE_CLUSTER": unique, "SLUICE_API": api,
        "SLUICE_WORKER_METRICS": f"127.0.0.1:{free_port()}",
        "SLUICE_ALLOW_ROOT_JOBS": "true", "TZ": "UTC",
    }

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, *argv], cwd=tmp, env=env, capture_output=True,
                              text=True, timeout=240, check=False)

    up = run("-m", "cli.main", "up", "--nodes", "1", "--cpus", "1", "--mem", "512")
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        yield run, api
    finally:
        run("-m", "cli.main", "down")


def _get(api: str, path: str) -> dict[str, object]:
    with urllib.request.urlopen(f"http://{api}{path}", timeout=70) as answer:
        data: dict[str, object] = json.loads(answer.read())
    return data


def test_another_users_plan_starts_under_a_jobs_sluid_answers_none_of_its_waits(
        system: tuple[Run, str]) -> None:
    run, api = system
    busy = run("-m", "cli.main", "submit", "--parsable", "-t", "5", "--wrap", "sleep 600")
    assert busy.returncode == 0, busy.stderr
    try:
        blocked = run("-m", "cli.main", "submit", "--parsable", "--wrap", "true")
        assert blocked.returncode == 0, blocked.stderr
        job = _get(api, f"/v1/jobs/{blocked.stdout.strip()}")["job"]
        sluid = str(job["job_sluid"])  # type: ignore[index]
        attack = run("-c", _ATTACK, sluid)
        assert attack.returncode == 0, attack.stderr
        deadline = time.monotonic() + 60  # the attacker's own poll sees its answer
        while True:
            own = _get(api, f"/v1/decisions?ids={sluid}&nonces=4242&wait=5")["decisions"]
            if (own.get(sluid) or {}).get("starts"):  # type: ignore[attr-defined]
                break
            assert time.monotonic() < deadline, "the shards never answered the PlanStarts"
        # srun's wait for its allocation: the job has not started, nothing answers yet
        started = _get(api, f"/v1/decisions?ids={sluid}&until=started&wait=1")["decisions"]
        assert started == {sluid: None}
        # sbatch --wait / salloc: not ended
        ended = _get(api, f"/v1/decisions?ids={sluid}&until=ended&wait=1")["decisions"]
        assert ended == {sluid: None}
        plain = _get(api, f"/v1/decisions?ids={sluid}&wait=1")["decisions"]
        assert plain[sluid]["job"]["state"] == "PENDING"  # type: ignore[index]
    finally:
        run("-m", "cli.main", "cancel", busy.stdout.strip())
