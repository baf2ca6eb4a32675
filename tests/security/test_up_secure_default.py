"""The README's `sluice up`, with no broker of its own given, starts the bundled broker secured:
the system's processes on SASL_SSL with one principal each, and a PLAINTEXT users' listener
where anyone (ANONYMOUS) may write requests (each carries its user's credential) and read the
ledger and the job starts, nothing else. Before, the embedded default was PLAINTEXT without
ACLs: any local user could write a forged fact straight to the ledger, a node command, a
heartbeat, and the views and the worker folded it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, Producer

from streams.settings import Settings
from streams.topics import Topics
from tests.e2e.harness import free_port

pytestmark = [pytest.mark.kafka, pytest.mark.e2e]


def _produce(bootstrap: str, topic: str) -> KafkaError | None:
    out = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": 15000,
                    "log_level": 0})
    errors: list[KafkaError | None] = []
    out.produce(topic, b"forged", key=b"k", on_delivery=lambda err, _m: errors.append(err))
    out.flush(20)
    assert errors, "no delivery report within 20 s"
    return errors[0]


def test_sluice_up_without_a_broker_starts_it_secured_with_a_users_listener(
    tmp_path: Path, unique: str,
) -> None:
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("KAFKA_", "SLUICE_KAFKA_")) and k != "SLUICE_CONF"}
    env.update({
        "SLUICE_HOME": str(home), "SLUICE_TOPIC_PREFIX": f"sd{unique}",
        "SLUICE_CLUSTER": f"sd{unique}", "SLUICE_API": f"127.0.0.1:{free_port()}",
        "SLUICE_WORKER_METRICS": f"127.0.0.1:{free_port()}", "SLUICE_ALLOW_ROOT_JOBS": "true",
        "SLUICE_CONF": str(tmp_path / "none.conf"),
    })

    def sluice(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "cli.main", *argv], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300, check=False)

    try:
        up = sluice("up", "--nodes", "1", "--cpus", "1", "--mem", "512")
        assert up.returncode == 0, up.stdout + up.stderr
        system = json.loads((home / "run" / "system.json").read_text())
        users = system["users_bootstrap"]
        assert system["bootstrap"] == users and "kafka" not in system  # no password for users
        assert "the broker is secured" in up.stdout and users in up.stdout
        spec = json.loads((home / "kafka" / "cluster.json").read_text())
        assert spec["secure"] is True
        assert users != f"127.0.0.1:{spec['nodes'][0]['port']}"
        conf = (home / "run" / "sluice.conf").read_text()
        assert f"KafkaBootstrap={users}" in conf and "KafkaSecurity" not in conf
        topics = Topics(Settings(prefix=f"sd{unique}", cluster=f"sd{unique}"))
        for topic in (topics.events, topics.node_commands, topics.heartbeats,
                      topics.shard_inbox, topics.job_starts):
            error = _produce(users, topic)
            assert error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, \
                (topic, error)
        assert _produce(users, topics.requests) is None  # the intake checks its credential
        job = sluice("submit", "-W", "--", "sh", "-c", "echo secured")
        assert job.returncode == 0, job.stdout + job.stderr
        assert "ended COMPLETED" in job.stdout
        assert (tmp_path / "sluice-1.out").read_text() == "secured\n"
    finally:
        down = sluice("down")
    assert "stopped the local Kafka broker" in down.stdout, down.stdout + down.stderr
