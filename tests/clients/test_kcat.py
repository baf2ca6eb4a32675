"""The kcat recipe (clients/kcat/submit.sh, docs/clients.md): with the partitioner setting the
job runs as the JWT's user; without it the submission lands on a partition its key does not
hash to, and the job is rejected with PartitionMismatch, the detail naming the setting."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest

from schemas import SluidGenerator
from streams.partitioner import partition_for
from tests.clients.conftest import issue_token
from tests.e2e.harness import LocalSystem
from tests.e2e.ledger import facts

pytestmark = [pytest.mark.kafka, pytest.mark.e2e]

SCRIPT = Path(__file__).resolve().parents[2] / "clients" / "kcat" / "submit.sh"


def _submit(system: LocalSystem, workdir: Path, message: str, **extra: str,
            ) -> subprocess.CompletedProcess[str]:
    if shutil.which("kcat") is None:
        pytest.skip("kcat not installed (Debian package 'kcat'; CI installs it: .ci/run)")
    env = {**os.environ, "KAFKA_BOOTSTRAP": system.settings.bootstrap,
           "SLUICE_TOPIC_PREFIX": system.settings.prefix,
           "SLUICE_CLUSTER_ID": str(system.settings.cluster_id),
           "SLUICE_JWT": issue_token(system, "nobody"),
           "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",
           **extra}
    return subprocess.run([str(SCRIPT), str(workdir), message], env=env, capture_output=True,
                          text=True, timeout=120, check=False)


def _job(system: LocalSystem, sluid: str) -> dict[str, Any]:
    return dict(system.client.get(f"/v1/jobs/{sluid}")["job"])


def test_kcat_with_the_murmur2_partitioner_runs_the_job(jwt_system: LocalSystem,
                                                       job_dir: Path) -> None:
    done = _submit(jwt_system, job_dir, "hello from kcat")
    assert done.returncode == 0, done.stderr
    job = done.stdout.split()[-1]
    ended = jwt_system.wait(lambda: _job(jwt_system, job)["state"] == "COMPLETED"
                            and _job(jwt_system, job), 120, "the kcat job to complete")
    assert ended["user"] == "nobody"
    assert (job_dir / f"sluice-{ended['job_id']}.out").read_text().strip() == "hello from kcat"


def test_kcat_without_the_partitioner_is_rejected_naming_it(jwt_system: LocalSystem,
                                                           job_dir: Path) -> None:
    partitions = jwt_system.settings.partitions
    sluids = SluidGenerator(jwt_system.settings.cluster_id)
    # a SLUID that librdkafka's default (consistent_random: CRC32 % partitions) puts elsewhere
    job = next(s for s in iter(sluids.new, None)
               if zlib.crc32(s.encode()) % partitions != partition_for(s.encode(), partitions))
    done = _submit(jwt_system, job_dir, "never runs", JOB=job, KCAT_PARTITIONER="")
    assert done.returncode == 0, done.stderr

    def rejection() -> dict[str, Any] | None:
        found = [f.record for f in facts(jwt_system.settings, "JobRejected")
                 if f.record["job_sluid"] == job]
        return found[0] if found else None

    rejected = jwt_system.wait(rejection, 90, "the rejection of the misplaced submission")
    assert rejected["reason"] == "PartitionMismatch"
    assert "murmur2_random" in rejected["detail"] and "murmur2" in rejected["detail"]
    assert not list(job_dir.glob("sluice-*.out"))
    # what the submitter sees (docs/clients.md): the API row and `sluice show job`
    row = jwt_system.wait(lambda: _job(jwt_system, job)["state"] == "REJECTED"
                          and _job(jwt_system, job), 60, "the rejected row")
    assert row["reason"] == "PartitionMismatch"
    shown = subprocess.run([sys.executable, "-m", "cli.main", "show", "job", job],
                           env={**os.environ, **jwt_system.settings.as_env()},
                           capture_output=True, text=True, timeout=60, check=False)
    assert "PartitionMismatch" in shown.stdout, shown.stdout + shown.stderr
