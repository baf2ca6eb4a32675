"""Kafka security against a loopback broker this module starts itself: SASL_SSL (SCRAM-SHA-512),
a local CA, StandardAuthorizer with ``allow.everyone.if.no.acl.found=false`` and Sluice's ACL
table (``streams.acls``). The shared PLAINTEXT broker of the rest of the suite is not touched.

Each principal has its own password file (mode 0600); each process is given only its own.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from infra.kafka import LocalKafka
from infra.kafka._tls import write_secret
from schemas import decode
from streams.acls import PRINCIPALS
from streams.clients import consumer, producer
from streams.kafka_admin import apply_acls, upsert_scram_users
from streams.security import KafkaSecurity
from streams.settings import Settings
from streams.topics import Topics
from tests.e2e.harness import LocalSystem

pytestmark = [pytest.mark.kafka, pytest.mark.e2e]

PORT = 20810  # kafkasec's private range 20800..20899


@dataclass
class SecureCluster:
    kafka: LocalKafka
    secrets_dir: Path
    settings: Settings

    @property
    def ca(self) -> str:
        assert self.kafka.tls is not None
        return str(self.kafka.tls.ca)

    def security(self, principal: str) -> KafkaSecurity:
        return KafkaSecurity("SASL_SSL", ca=self.ca, user=principal,
                             password_file=str(self.secrets_dir / f"{principal}.password"))

    def env(self, principal: str) -> dict[str, str]:
        return self.security(principal).as_env()


@contextmanager
def as_principal(cluster: SecureCluster, principal: str) -> Iterator[None]:
    """This test process's clients authenticate as ``principal`` inside the block."""
    saved = {k: os.environ.get(k) for k in cluster.env(principal)}
    os.environ.update(cluster.env(principal))
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture(scope="module")
def secure() -> Iterator[SecureCluster]:
    data = Path(f"/tmp/kafkasec-test-{os.getpid()}")
    kafka = LocalKafka.start(data / "kafka", port=PORT, secure=True, tie_to_parent=True)
    try:
        secrets_dir = data / "secrets"
        secrets_dir.mkdir(parents=True, exist_ok=True)
        secrets_dir.chmod(0o700)
        passwords = {name: secrets.token_urlsafe(18) for name in PRINCIPALS}
        for name, password in passwords.items():
            write_secret(secrets_dir / f"{name}.password", password)
        assert kafka.tls is not None
        write_secret(secrets_dir / "admin.password", kafka.tls.admin_password())
        upsert_scram_users(kafka.bootstrap, passwords, client=kafka.client_config)
        settings = Settings(bootstrap=kafka.bootstrap, prefix=f"sec{uuid.uuid4().hex[:6]}",
                            partitions=3, home=data / "home")
        cluster = SecureCluster(kafka, secrets_dir, settings.with_(cluster=settings.prefix))
        with as_principal(cluster, "admin"):
            from cli.services import prepare_topics

            prepare_topics(cluster.settings)
        apply_acls(cluster.settings, client=kafka.client_config)
        yield cluster
    finally:
        kafka.stop()
        shutil.rmtree(data, ignore_errors=True)


def _produce(topic: str) -> KafkaError | None:
    """Produce one record with the process's principal; the delivery error, if any."""
    out = producer(os.environ["_BOOT"], **{"message.timeout.ms": 15000, "log_level": 0})
    errors: list[KafkaError | None] = []
    out.produce(topic, b"x", key=b"k", on_delivery=lambda err, _msg: errors.append(err))
    out.flush(20)
    assert errors, "no delivery report within 20 s"
    return errors[0]


@pytest.fixture
def boot(secure: SecureCluster, monkeypatch: pytest.MonkeyPatch) -> SecureCluster:
    monkeypatch.setenv("_BOOT", secure.kafka.bootstrap)
    return secure


def test_a_client_without_credentials_cannot_connect(boot: SecureCluster) -> None:
    plain = AdminClient({"bootstrap.servers": boot.kafka.bootstrap, "log_level": 0})
    with pytest.raises(KafkaException):
        plain.list_topics(timeout=5)
    tls_only = AdminClient({"bootstrap.servers": boot.kafka.bootstrap, "log_level": 0,
                            "security.protocol": "SSL", "ssl.ca.location": boot.ca})
    with pytest.raises(KafkaException):
        tls_only.list_topics(timeout=5)


def test_a_wrong_password_is_refused(boot: SecureCluster) -> None:
    wrong = AdminClient({"bootstrap.servers": boot.kafka.bootstrap, "log_level": 0,
                         "security.protocol": "SASL_SSL", "ssl.ca.location": boot.ca,
                         "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "user",
                         "sasl.password": "not-the-password"})
    with pytest.raises(KafkaException) as caught:
        wrong.list_topics(timeout=10)
    assert "uthentication" in str(caught.value) or caught.value.args[0].code() in (
        KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED, KafkaError._TRANSPORT)


def test_a_user_may_write_requests(boot: SecureCluster) -> None:
    with as_principal(boot, "user"):
        assert _produce(Topics(boot.settings).requests) is None


@pytest.mark.parametrize("topic", ["events", "node_commands", "shard_inbox"])
def test_a_user_principal_cannot_write_the_ledger_node_commands_or_inbox(
    boot: SecureCluster, topic: str
) -> None:
    with as_principal(boot, "user"):
        error = _produce(getattr(Topics(boot.settings), topic))
    assert error is not None
    assert error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, error


def test_a_node_principal_cannot_write_node_commands_or_the_ledger(boot: SecureCluster) -> None:
    with as_principal(boot, "node"):
        for topic in (Topics(boot.settings).node_commands, Topics(boot.settings).events):
            error = _produce(topic)
            assert error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def _read_first(topic: str) -> tuple[KafkaError | None, bytes | None]:
    """The topic's metadata error for the process's principal, and partition 0's first value."""
    reader = consumer(os.environ["_BOOT"], overrides={"log_level": 0})
    try:
        error = reader.list_topics(topic, timeout=10).topics[topic].error
        reader.assign([TopicPartition(topic, 0, 0)])
        for _ in range(10):
            message = reader.poll(0.5)
            if message is None:
                continue
            if message.error() is None:
                return error, message.value()
            if message.error().code() != KafkaError._PARTITION_EOF:
                return message.error(), None
        return error, None
    finally:
        reader.close()


@pytest.fixture(scope="module")
def ledger_record(secure: SecureCluster) -> bytes:
    """One record on partition 0 of the ledger, written by the super-user."""
    value = f"ledger-{uuid.uuid4().hex}".encode()
    with as_principal(secure, "admin"):
        out = producer(secure.kafka.bootstrap)
        out.produce(Topics(secure.settings).events, value, partition=0)
        assert out.flush(20) == 0
    return value


def test_the_node_principal_cannot_read_the_ledger(
    boot: SecureCluster, ledger_record: bytes
) -> None:
    with as_principal(boot, "node"):
        error, value = _read_first(Topics(boot.settings).events)
    assert value is None
    assert error is not None
    assert error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, error


def test_the_views_principal_may_read_the_ledger(
    boot: SecureCluster, ledger_record: bytes
) -> None:
    with as_principal(boot, "views"):
        error, value = _read_first(Topics(boot.settings).events)
    assert error is None
    assert value == ledger_record


def test_the_views_principal_may_read_the_dead_letters(boot: SecureCluster) -> None:
    """The views index the requests' dead letters by SLUID (projections/dead_letter_index.py):
    their principal reads the topic (it could only write it before)."""
    topic = Topics(boot.settings).dead_letters
    value = f"letter-{uuid.uuid4().hex}".encode()
    with as_principal(boot, "admin"):
        out = producer(boot.kafka.bootstrap)
        out.produce(topic, value, partition=0)
        assert out.flush(20) == 0
    with as_principal(boot, "views"):
        error, first = _read_first(topic)
    assert error is None
    assert first == value


def test_acls_apply_is_idempotent(boot: SecureCluster) -> None:
    assert apply_acls(boot.settings, client=boot.kafka.client_config) == []
    assert apply_acls(boot.settings, dry_run=True, client=boot.kafka.client_config) == []


def test_sluice_kafka_acls_show_lists_the_table(boot: SecureCluster) -> None:
    env = {**os.environ, **boot.settings.as_env(), **boot.env("admin")}
    shown = subprocess.run([sys.executable, "-m", "cli.main", "kafka", "acls", "show"], env=env,
                           capture_output=True, text=True, timeout=60, check=False)
    assert shown.returncode == 0, shown.stderr
    assert f"User:user WRITE TOPIC LITERAL {boot.settings.prefix}.requests" in shown.stdout
    dry = subprocess.run([sys.executable, "-m", "cli.main", "kafka", "acls", "apply",
                          "--dry-run"], env=env, capture_output=True, text=True, timeout=60,
                         check=False)
    assert dry.returncode == 0, dry.stderr
    assert "0 missing" in dry.stdout


def test_end_to_end_over_sasl_ssl_each_process_as_its_principal(
    boot: SecureCluster, tmp_path: Path
) -> None:
    with as_principal(boot, "admin"):
        system = LocalSystem(boot.kafka.bootstrap, tmp_path / "home", boot.settings.prefix)
    try:
        system.start("worker", "worker", "--loglevel", "info", env=boot.env("worker"))
        system.start("projections", "projections", env=boot.env("views"))
        for name in ("n01", "n02"):
            system.start(name, "node", "--name", name, "--cpus", "4", "--mem", "8192",
                         "--gpus", "0", "--heartbeat", "0.5", "--kill-wait", "3",
                         env=boot.env("node"))
        system.wait_nodes_idle(2, timeout_s=180)
        work = tmp_path / "work"
        work.mkdir()
        env = {**os.environ, **system.settings.as_env(), **boot.env("user")}
        done = subprocess.run(
            [sys.executable, "-m", "cli.main", "submit", "-N", "2", "-W", "--timeout", "120",
             "--", "sh", "-c", 'echo "secure $SLURMD_NODENAME"'],
            cwd=work, env=env, capture_output=True, text=True, timeout=180, check=False)
        assert done.returncode == 0, done.stdout + done.stderr + system.log_tail()
        assert "ended COMPLETED" in done.stdout
        assert (work / "sluice-1.out").read_text().startswith("secure n0")
        job = system.client.get("/v1/jobs/1")["job"]
        assert job["state"] == "COMPLETED" and len(job["nodes"]) == 2
        with as_principal(boot, "user"):
            starts = _read_all(boot.kafka.bootstrap, Topics(system.settings).job_starts)
        assert starts, "no job-start notification on the job-starts topic"
    finally:
        system.stop()


def _read_all(bootstrap: str, topic: str) -> list[dict[str, object]]:
    found: list[dict[str, object]] = []
    for _ in range(30):
        reader = consumer(bootstrap, overrides={"log_level": 0})
        try:
            parts = reader.list_topics(topic, timeout=10).topics[topic].partitions
            for p in parts:
                reader.assign([TopicPartition(topic, p, 0)])
                while (message := reader.poll(2.0)) is not None:
                    if message.error() is not None:
                        if message.error().code() == KafkaError._PARTITION_EOF:
                            break
                        raise KafkaException(message.error())
                    found.append(decode(message.value())[1])
        finally:
            reader.close()
        if found:
            return found
    return found
