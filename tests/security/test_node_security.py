"""Issue #13's node half, on a system started with ``sluice up`` (real broker, munged, nodes).

Jobs run as their owner (``runuser -u nobody -- sluice submit``); node commands written straight
to ``sluice.node-commands`` with a plain client (unsigned, tampered, replayed) run nothing and
become ``NodeCommandRefused`` facts; a job sees none of the daemon's settings; ``--export``
values are sealed (no topic holds them in the clear); ``-D /nonexistent`` is not created.
"""

from __future__ import annotations

import os
import shutil
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import TopicPartition

from cli.client import Client
from schemas import decode, encode
from streams.clients import consumer, producer
from streams.topics import Topics
from tests.e2e.ledger import facts
from tests.security.test_attacks import UpSystem
from tests.security.test_attacks import up as up  # noqa: PLC0414 - the module's system

pytestmark = [pytest.mark.kafka, pytest.mark.e2e]


def _raw(up: UpSystem, topic: str) -> list[tuple[bytes, bytes, list[tuple[str, bytes]]]]:
    """Every record of ``topic`` as written: key, value, headers (a plain client)."""
    reader = consumer(up.settings.bootstrap, overrides={"isolation.level": "read_uncommitted"})
    found: list[tuple[bytes, bytes, list[tuple[str, bytes]]]] = []
    try:
        metadata = reader.list_topics(topic, timeout=10).topics[topic]
        for partition in metadata.partitions:
            low, high = reader.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
            if high <= low:
                continue
            reader.assign([TopicPartition(topic, partition, low)])
            offset = low
            while offset < high - 1:
                message = reader.poll(5.0)
                if message is None:
                    break
                if message.error() is not None:
                    continue
                offset = message.offset() or 0
                found.append((message.key() or b"", message.value() or b"",
                              [(k, v or b"") for k, v in message.headers() or []]))
    finally:
        reader.close()
    return found


def _refusals(up: UpSystem, reason: str) -> list[dict[str, Any]]:
    return [f.record for f in facts(up.settings, "NodeCommandRefused")
            if f.record["reason"] == reason]


@pytest.fixture
def work(up: UpSystem) -> Iterator[Path]:
    """A directory nobody may write in."""
    path = up.public / f"work-{uuid.uuid4().hex[:8]}"
    path.mkdir(mode=0o777)
    path.chmod(0o777)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _submit_as_nobody(up: UpSystem, work: Path, *argv: str) -> str:
    done = up.sluice("submit", "--parsable", "-W", "-D", str(work), *argv, as_user="nobody")
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.strip().splitlines()[0]


def test_nobodys_job_runs_as_nobody_into_a_file_nobody_owns(up: UpSystem, work: Path) -> None:
    job_id = _submit_as_nobody(up, work, "--", "id", "-un")
    out = work / f"sluice-{job_id}.out"
    assert out.read_text() == "nobody\n"
    assert out.stat().st_uid == int(os.popen("id -u nobody").read())
    assert up.job(job_id)["state"] == "COMPLETED"


def test_an_unsigned_launch_runs_nothing_and_is_reported(up: UpSystem, work: Path) -> None:
    target = Client(up.settings).get("/v1/nodes/node01")["node"]
    marker = work / f"forged-{uuid.uuid4().hex[:8]}"
    run_sluid = f"sFORGED{uuid.uuid4().hex[:8].upper()}"
    launch = {
        "job_sluid": "sFORGEDJOB", "job_id": 999_999, "run_sluid": run_sluid,
        "node_sluid": target["node_sluid"], "node_name": "node01", "batch_host": True,
        "nodes": ["node01"], "restart_count": 0, "user": "root", "partition": "",
        "name": "evil", "command": ["touch", str(marker)], "workdir": str(work), "env": {},
        "output": "", "error": "", "time_limit_s": 0, "issued_ms": int(time.time() * 1000),
    }
    out = producer(up.settings.bootstrap)
    out.produce(Topics(up.settings).node_commands, encode("LaunchRun", launch),
                target["node_sluid"].encode())
    assert out.flush(30) == 0
    refused = up.wait(lambda: [r for r in _refusals(up, "CommandUnsigned")
                               if r["run_sluid"] == run_sluid], "a NodeCommandRefused fact")
    assert refused[0]["name"] == "node01" and refused[0]["command"] == "LaunchRun"
    assert not marker.exists()


def test_a_replayed_or_altered_signed_launch_runs_nothing(up: UpSystem, work: Path) -> None:
    job_id = _submit_as_nobody(up, work, "--", "sh", "-c", "echo once >> replayed.txt")
    run_sluid = up.job(job_id)["run_sluid"]
    signed = [(k, v, h) for k, v, h in _raw(up, Topics(up.settings).node_commands)
              if v and decode(v)[0] == "LaunchRun" and decode(v)[1]["run_sluid"] == run_sluid]
    assert signed and any(name == "sluice-command-sig" for name, _ in signed[0][2])
    key, value, headers = signed[0]
    marker = work / "altered-marker"
    name, record = decode(value)
    altered = encode(name, {**record, "command": ["touch", str(marker)]})
    out = producer(up.settings.bootstrap)
    topic = Topics(up.settings).node_commands
    out.produce(topic, value, key, headers=headers)  # the same signed bytes again
    out.produce(topic, altered, key, headers=headers)  # its signature on other bytes
    assert out.flush(30) == 0
    up.wait(lambda: [r for r in _refusals(up, "CommandReplayed") if r["run_sluid"] == run_sluid],
            "the replay refused")
    up.wait(lambda: [r for r in _refusals(up, "CommandSignatureInvalid")
                     if r["run_sluid"] == run_sluid], "the altered launch refused")
    assert (work / "replayed.txt").read_text() == "once\n"
    assert not marker.exists()


def test_the_job_sees_none_of_the_daemons_settings(up: UpSystem, work: Path) -> None:
    job_id = _submit_as_nobody(up, work, "--", "env")
    env = dict(line.split("=", 1) for line in
               (work / f"sluice-{job_id}.out").read_text().splitlines() if "=" in line)
    assert env["SLURM_JOB_ID"] == job_id
    assert not [k for k in env if k.startswith("KAFKA_")]
    run_variables = {"SLUICE_JOB_SLUID", "SLUICE_RUN_SLUID", "SLUICE_PREVIOUS_RUN_SLUID",
                     "SLUICE_SEGMENTS", "SLUICE_CONF", "SLUICE_PYTHON", "SLUICE_SEALED_TAGS"}
    assert {k for k in env if k.startswith("SLUICE_")} <= run_variables
    conf = env.pop("SLUICE_CONF", "")  # the cluster's public client configuration (srun's)
    assert str(up.home) not in " ".join(env.values())  # SLUICE_HOME's value went nowhere
    if conf:
        text = Path(conf).read_text()
        assert "KafkaBootstrap=" in text
        assert "PRIVATE KEY" not in text and "password" not in text.lower()


def test_export_values_are_sealed_everywhere_but_in_the_job(up: UpSystem, work: Path) -> None:
    secret = f"s3cr3t-{uuid.uuid4().hex}"
    job_id = _submit_as_nobody(up, work, f"--export=NONE,API_KEY={secret}", "--",
                               "sh", "-c", 'echo "key=$API_KEY"')
    assert (work / f"sluice-{job_id}.out").read_text() == f"key={secret}\n"
    topics = Topics(up.settings)
    for topic in (topics.events, topics.node_commands, topics.job_starts, topics.requests):
        for key, value, headers in _raw(up, topic):
            blob = key + value + b"".join(v for _k, v in headers)
            assert secret.encode() not in blob, f"the secret is readable on {topic}"
    queued = [f.record for f in facts(up.settings, "JobQueued")
              if f.record["job_id"] == int(job_id)]
    assert queued and queued[0]["spec"]["env"] == {} and queued[0]["spec"]["sealed_env"]
    assert secret not in str(Client(up.settings).get(f"/v1/jobs/{job_id}"))


def test_a_missing_working_directory_fails_the_job_and_is_not_created(up: UpSystem) -> None:
    missing = Path(f"/nonexistent-own-{uuid.uuid4().hex[:8]}")
    done = up.sluice("submit", "--parsable", "-W", "-D", str(missing), "--", "true",
                     as_user="nobody")
    job_id = done.stdout.strip().splitlines()[0]
    job = up.job(job_id)
    assert job["state"] == "FAILED" and "working directory" in job["reason"], job
    # -W: the job did not complete; sbatch --wait exits with the job's exit code
    assert done.returncode == job["exit_code"] != 0, done.stdout + done.stderr
    assert str(missing) in job["reason"]
    assert not missing.exists()


def test_a_root_job_is_refused_by_the_nodes_with_a_named_reason(up: UpSystem, work: Path) -> None:
    done = up.sluice("submit", "--parsable", "-W", "-D", str(work), "--", "touch", "root-was-here")
    job_id = done.stdout.strip().splitlines()[0]
    job = up.wait(lambda: (j := up.job(job_id))["state"] not in ("PENDING", "RUNNING") and j,
                  "the root job ended")
    assert job["state"] == "FAILED" and "RootJobRefused" in job["reason"], job
    assert not (work / "root-was-here").exists()


def test_a_job_of_a_user_whose_umask_is_077_writes_files_others_cannot_read(
        up: UpSystem, work: Path) -> None:
    """Red team, 6 Dec 2026: the job's output and the files it made took the node daemon's
    umask (022), so they were readable by every user of the host. ``sluice submit`` carries
    the caller's umask (``SLURM_UMASK``, as sbatch) and the node starts the job under it."""
    old = os.umask(0o077)  # inherited through runuser by nobody's sluice submit
    try:
        job_id = _submit_as_nobody(up, work, "--", "sh", "-c", "umask; echo secret > made")
    finally:
        os.umask(old)
    out = work / f"sluice-{job_id}.out"
    assert out.read_text() == "0077\n"
    assert out.stat().st_mode & 0o777 == 0o600
    assert (work / "made").stat().st_mode & 0o777 == 0o600
