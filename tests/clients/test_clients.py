"""The Java, Go and TypeScript clients of clients/, built with mvn, go and npm, each run against
the real broker and a real worker and node: the job it submits runs to completion, the held job
it cancels ends CANCELLED, the owner is the user of its JWT (the records name no user), and it
prints the job-start notification of its job; with a token that does not verify, it prints the
refusal it reads in the ledger and exits 1 at once; a request the intake dead-letters, it
prints at once too (the views' ``GET /v1/decisions``). Each client is built once per run."""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.clients.builds import BuiltClient, build_go, build_java, build_ts
from tests.clients.conftest import MAX_REQUEST_BYTES, issue_token
from tests.e2e.harness import LocalSystem

pytestmark = [pytest.mark.kafka, pytest.mark.e2e]

BUILDS: dict[str, Callable[[Path], BuiltClient]] = {
    "java": lambda _out: build_java(),
    "go": build_go,
    "ts": lambda _out: build_ts(),
}
_BUILT: dict[str, BuiltClient] = {}


def _built(language: str, tmp_path_factory: pytest.TempPathFactory) -> BuiltClient:
    """The client of ``language``, built by the first test that needs it (each build took
    35 s for Maven, once per test)."""
    if language not in _BUILT:
        _BUILT[language] = BUILDS[language](tmp_path_factory.mktemp(f"client-{language}"))
    return _BUILT[language]


def _env(system: LocalSystem, token: str) -> dict[str, str]:
    return {
        **os.environ,
        "KAFKA_BOOTSTRAP": system.settings.bootstrap,
        "SLUICE_TOPIC_PREFIX": system.settings.prefix,
        "SLUICE_CLUSTER_ID": str(system.settings.cluster_id),
        "SLUICE_API": system.settings.api,
        "SLUICE_JWT": token,
    }


JOB_START = re.compile(r"^job-start job_sluid=(\S+) job_id=(\d+) user=(\S*) nodes=(\S*)$", re.M)


def _job(system: LocalSystem, sluid: str) -> dict[str, Any]:
    return dict(system.client.get(f"/v1/jobs/{sluid}")["job"])


def _group_left(system: LocalSystem, job: str) -> bool:
    """Whether the client left a consumer group for ``job`` on the broker. Java and Go assign
    partitions without a group; kafkajs needs one, ``sluice-ts-client-<job>-<random>``
    (clients/ts/src/group.ts), which the TypeScript client deletes at exit (it used to stay,
    offsets committed, one per run)."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": system.settings.bootstrap})
    listed = admin.list_consumer_groups().result(timeout=30)
    return any(group.group_id.startswith(f"sluice-ts-client-{job}")
               for group in listed.valid)


@pytest.mark.parametrize("language", sorted(BUILDS))
def test_the_client_runs_a_job_cancels_one_and_prints_its_job_start(
    language: str, jwt_system: LocalSystem, tmp_path_factory: pytest.TempPathFactory,
    job_dir: Path,
) -> None:
    client = _built(language, tmp_path_factory)
    workdir = job_dir  # the job runs as nobody, its owner
    env = _env(jwt_system, issue_token(jwt_system, "nobody"))
    done = subprocess.run([*client.argv, "--workdir", str(workdir), "--timeout", "180"],
                          env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}\n{jwt_system.log_tail()}"

    submitted = re.search(r"^submitted (s\w{13})$", done.stdout, re.M)
    cancelled = re.search(r"^cancel requested (s\w{13})$", done.stdout, re.M)
    started = JOB_START.search(done.stdout)
    assert submitted and cancelled and started, done.stdout
    job, held = submitted.group(1), cancelled.group(1)
    assert started.group(1) == job

    ended = jwt_system.wait(lambda: _job(jwt_system, job)["state"] == "COMPLETED"
                            and _job(jwt_system, job), 120, f"{language} job to complete")
    assert int(started.group(2)) == ended["job_id"]
    assert ended["user"] == started.group(3) == "nobody"  # from the JWT: the record had no user
    assert started.group(4) == "n01"
    gone = jwt_system.wait(lambda: _job(jwt_system, held)["state"] == "CANCELLED"
                           and _job(jwt_system, held), 60, f"{language} held job to be cancelled")
    assert gone["user"] == "nobody"
    output = workdir / f"sluice-{ended['job_id']}.out"
    assert output.read_text().strip() == f"hello from {language}"
    assert not _group_left(jwt_system, job)


REFUSED = re.compile(r"^sluice-client: refused (s\w{13}) RequestDenied CredentialInvalid: ", re.M)


@pytest.mark.parametrize("language", sorted(BUILDS))
def test_the_client_says_why_its_job_was_refused_instead_of_waiting_for_a_start(
    language: str, jwt_system: LocalSystem, tmp_path_factory: pytest.TempPathFactory,
    job_dir: Path,
) -> None:
    """A token that does not verify: the shard records ``RequestDenied`` (CredentialInvalid),
    and the client, which reads the ledger too, prints it and exits 1 at once. It used to wait
    for a job-start notification that could never come, then say only that none came."""
    client = _built(language, tmp_path_factory)
    env = _env(jwt_system, "not.a.token")
    began = time.monotonic()
    done = subprocess.run([*client.argv, "--workdir", str(job_dir), "--timeout", "40"],
                          env=env, capture_output=True, text=True, timeout=300, check=False)
    took = time.monotonic() - began
    assert done.returncode == 1, f"{done.stdout}\n{done.stderr}"
    submitted = re.search(r"^submitted (s\w{13})$", done.stdout, re.M)
    cancelled = re.search(r"^cancel requested (s\w{13})$", done.stdout, re.M)
    refused = REFUSED.search(done.stderr)
    assert submitted and cancelled and refused, f"{done.stdout}\n{done.stderr}"
    assert refused.group(1) in (submitted.group(1), cancelled.group(1)), done.stderr
    assert took < 40, f"it waited for the timeout ({took:.0f} s): {done.stderr}"
    assert not _group_left(jwt_system, submitted.group(1))


DEAD_LETTERED = re.compile(
    r"^sluice-client: refused (s\w{13}) DeadLetter RequestTooLarge: key, value and headers were "
    r"larger than the cluster's limit .*\(dead-lettered by the intake\)$", re.M)


@pytest.mark.parametrize("language", sorted(BUILDS))
def test_the_client_says_at_once_that_its_request_was_dead_lettered(
    language: str, jwt_system: LocalSystem, tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """A request the intake cannot read (here: larger than the cluster's limit) is
    dead-lettered and never reaches the ledger: the clients waited for their whole timeout,
    then said no notification came. They now ask the views (``GET /v1/decisions`` without a
    nonce), which answer with the dead letter's reason and meaning as soon as they read it."""
    client = _built(language, tmp_path_factory)
    huge = "/" + "/".join(["d" * 200] * (MAX_REQUEST_BYTES // 200 + 1))  # never made
    began = time.monotonic()
    done = subprocess.run([*client.argv, "--workdir", huge, "--timeout", "60"],
                          env=_env(jwt_system, issue_token(jwt_system, "nobody")),
                          capture_output=True, text=True, timeout=120, check=False)
    took = time.monotonic() - began
    assert done.returncode == 1, f"{done.stdout}\n{done.stderr}"
    submitted = re.search(r"^submitted (s\w{13})$", done.stdout, re.M)
    cancelled = re.search(r"^cancel requested (s\w{13})$", done.stdout, re.M)
    refused = DEAD_LETTERED.search(done.stderr)
    assert submitted and cancelled and refused, f"{done.stdout}\n{done.stderr}"
    assert refused.group(1) in (submitted.group(1), cancelled.group(1)), done.stderr
    assert took < 40, f"it waited for the timeout ({took:.0f} s): {done.stderr}"
