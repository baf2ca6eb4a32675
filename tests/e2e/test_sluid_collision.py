"""Two clients that mint the same job SLUID (1/512 for two mints in one millisecond, made
certain here by a test-only seam): on the real broker, worker, views and node daemons, every
job runs once and every ``sluice submit`` prints its own job id."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli.client import Client
from schemas.sluid import SluidGenerator
from tests.conftest import UniqueNames
from tests.e2e.harness import LocalSystem

pytestmark = [pytest.mark.kafka, pytest.mark.e2e]

SEAM = '''\
"""``sluice`` whose client mints $TEST_FIRST_SLUID as its first job SLUID (a test seam)."""
import os
import sys

import cli.client
from schemas.sluid import SluidGenerator


class FirstSluid(SluidGenerator):
    def __init__(self, cluster_id: int) -> None:
        super().__init__(cluster_id)
        self.first = os.environ["TEST_FIRST_SLUID"]

    def new(self) -> str:
        first, self.first = self.first, ""
        return first or super().new()


cli.client.SluidGenerator = FirstSluid
from cli.main import main  # noqa: E402

sys.exit(main(sys.argv[1:]))
'''
SUBMITTED = re.compile(r"Submitted batch job (\d+) \((s\w+)\)")


@pytest.fixture
def collision_system(kafka_bootstrap: str, tmp_path: Path,
                     unique: UniqueNames) -> Iterator[LocalSystem]:
    """The harness's system (on a free port; ``SLUICE_TEST_API`` names another: a fixed one
    was another system's when one ran on this host)."""
    local = LocalSystem(kafka_bootstrap, tmp_path / "home", f"jobsluid-{unique}")
    if os.environ.get("SLUICE_TEST_API"):
        local.settings = local.settings.with_(api=os.environ["SLUICE_TEST_API"])
        local.client = Client(local.settings)
    try:
        yield local
    finally:
        local.stop()


def test_colliding_submissions_each_run_once_and_each_client_prints_its_own_job(
        collision_system: LocalSystem, tmp_path: Path) -> None:
    system = collision_system
    system.start_core()
    system.start_nodes(2, cpus=2)
    system.wait_nodes_idle(2)
    seam = tmp_path / "first_sluid.py"
    seam.write_text(SEAM)
    work = tmp_path / "work"
    work.mkdir()
    clash = SluidGenerator(system.settings.cluster_id).new()
    env = {**os.environ, **system.settings.as_env(), "TEST_FIRST_SLUID": clash}
    argv = [sys.executable, str(seam), "submit", "-W", "--timeout", "120",
            "--wrap", "echo ran as $SLURM_JOB_ID"]  # one spec: a parallel sbatch --wrap loop
    clients = [subprocess.Popen(argv, cwd=work, env={**env, "SLUICE_RELAY": relay},
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for relay in ("1", "1", "0")]  # the relay's answer, and the long poll's
    outputs = [client.communicate(timeout=240) for client in clients]

    printed = []
    for client, (out, err) in zip(clients, outputs, strict=True):
        assert client.returncode == 0, out + err + system.log_tail()
        [(job_id, sluid)] = SUBMITTED.findall(out)
        assert "ended COMPLETED" in out, out + err
        printed.append((int(job_id), sluid))
    ids, sluids = {i for i, _s in printed}, [s for _i, s in printed]
    assert len(ids) == 3 and len(set(sluids)) == 3  # three jobs, each told its own
    assert sluids.count(clash) == 1  # one kept the SLUID, two went again under new ones
    for job_id, sluid in printed:
        row = system.client.job(str(job_id))
        assert (row["job_sluid"], row["state"]) == (sluid, "COMPLETED")
        assert (work / f"sluice-{job_id}.out").read_text() == f"ran as {job_id}\n"
    assert len(system.client.get("/v1/jobs?all=1")["jobs"]) == 3  # each queued once
    refusals = [d["reason"] for d in system.client.denials(clash)]
    assert refusals == ["SluidInUse", "SluidInUse"]
