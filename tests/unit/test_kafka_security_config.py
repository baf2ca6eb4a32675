"""The one Kafka security configuration, the ACL table's shape and the secured broker's
properties: no broker needed (tests/security/test_kafka_security.py runs them for real)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from infra.kafka._config import plan_cluster, server_properties
from infra.kafka._tls import TlsFiles, secure_properties, write_secret
from streams.acls import acl_table
from streams.security import (
    KafkaSecurity,
    KafkaSecurityError,
    faust_credentials,
    librdkafka_config,
)
from streams.settings import Settings
from streams.topics import Topics


def _secret(tmp_path: Path, text: str = "s3cret-pw", mode: int = 0o600) -> Path:
    path = tmp_path / "kafka.password"
    path.write_text(text + "\n")
    path.chmod(mode)
    return path


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"SLUICE_HOME": str(tmp_path / "home"), "SLUICE_CONF": str(tmp_path / "none.conf"),
            **extra}


def test_plaintext_by_default_adds_nothing(tmp_path: Path) -> None:
    assert librdkafka_config(KafkaSecurity.from_env(_env(tmp_path))) == {}
    assert faust_credentials(KafkaSecurity()) is None


def test_sasl_ssl_builds_the_librdkafka_settings_from_the_password_file(tmp_path: Path) -> None:
    env = _env(tmp_path, SLUICE_KAFKA_SECURITY="sasl_ssl", SLUICE_KAFKA_USER="alice",
               SLUICE_KAFKA_PASSWORD_FILE=str(_secret(tmp_path)), SLUICE_KAFKA_CA="/ca.pem")
    config = librdkafka_config(KafkaSecurity.from_env(env))
    assert config == {
        "security.protocol": "SASL_SSL", "ssl.endpoint.identification.algorithm": "https",
        "ssl.ca.location": "/ca.pem", "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "alice", "sasl.password": "s3cret-pw",
    }


def test_the_password_never_appears_in_the_child_env_or_repr(tmp_path: Path) -> None:
    sec = KafkaSecurity("SASL_SSL", user="alice", password_file=str(_secret(tmp_path)))
    assert "s3cret-pw" not in json.dumps(sec.as_env())
    assert "s3cret-pw" not in repr(sec)


def test_faust_gets_scram_sha_512_credentials_with_a_verifying_tls_context(
    tmp_path: Path
) -> None:
    import ssl

    sec = KafkaSecurity("SASL_SSL", user="worker", password_file=str(_secret(tmp_path)))
    creds = faust_credentials(sec)
    assert creds.username == "worker" and creds.password == "s3cret-pw"
    assert creds.mechanism.value == "SCRAM-SHA-512"
    assert creds.ssl_context.verify_mode == ssl.CERT_REQUIRED
    assert creds.ssl_context.check_hostname


def test_a_password_file_others_can_read_is_refused(tmp_path: Path) -> None:
    sec = KafkaSecurity("SASL_SSL", user="a", password_file=str(_secret(tmp_path, mode=0o644)))
    with pytest.raises(KafkaSecurityError, match="readable by others"):
        librdkafka_config(sec)


def test_missing_or_empty_password_files_are_named(tmp_path: Path) -> None:
    with pytest.raises(KafkaSecurityError, match="cannot be read"):
        librdkafka_config(KafkaSecurity("SASL_SSL", user="a",
                                        password_file=str(tmp_path / "absent")))
    with pytest.raises(KafkaSecurityError, match="empty"):
        librdkafka_config(KafkaSecurity("SASL_SSL", user="a",
                                        password_file=str(_secret(tmp_path, text=""))))


@pytest.mark.parametrize("env", [
    {"SLUICE_KAFKA_SECURITY": "SASL_PLAINTEXT"},
    {"SLUICE_KAFKA_SECURITY": "SASL_SSL"},
    {"SLUICE_KAFKA_SECURITY": "SASL_SSL", "SLUICE_KAFKA_USER": "a"},
    {"SLUICE_KAFKA_MECHANISM": "PLAIN"},
])
def test_bad_or_incomplete_settings_are_refused_by_name(
    tmp_path: Path, env: dict[str, str]
) -> None:
    with pytest.raises(KafkaSecurityError, match="SLUICE_KAFKA_"):
        KafkaSecurity.from_env(_env(tmp_path, **env))


def test_the_client_conf_file_gives_the_keys_but_the_environment_wins(tmp_path: Path) -> None:
    conf = tmp_path / "sluice.conf"
    conf.write_text("KafkaBootstrap=h:9093\nKafkaSecurity=SSL\nKafkaCA=/etc/sluice/ca.pem\n")
    env = _env(tmp_path, SLUICE_CONF=str(conf))
    assert KafkaSecurity.from_env(env) == KafkaSecurity("SSL", ca="/etc/sluice/ca.pem")
    env["SLUICE_KAFKA_SECURITY"] = "PLAINTEXT"
    assert KafkaSecurity.from_env(env).protocol == "PLAINTEXT"


def test_sluice_up_secure_record_is_the_lowest_layer(tmp_path: Path) -> None:
    run = tmp_path / "home" / "run"
    run.mkdir(parents=True)
    pw = _secret(tmp_path)
    (run / "system.json").write_text(json.dumps({"bootstrap": "x", "kafka": {
        "security": "SASL_SSL", "ca": "/c.pem", "user": "user", "password_file": str(pw)}}))
    sec = KafkaSecurity.from_env(_env(tmp_path))
    assert (sec.protocol, sec.user, sec.ca) == ("SASL_SSL", "user", "/c.pem")


def _writers(rows: list, topic: str) -> set[str]:  # type: ignore[type-arg]
    return {r.principal for r in rows if r.name == topic and r.kind == "TOPIC"
            and r.operation == "WRITE"}


def _readers(rows: list, topic: str) -> set[str]:  # type: ignore[type-arg]
    return {r.principal for r in rows if r.name == topic and r.kind == "TOPIC"
            and r.operation == "READ"}


def test_the_acl_table_gives_each_topic_only_its_writers_and_readers() -> None:
    settings = Settings(prefix="p", cluster="c")
    t, rows = Topics(settings), acl_table(settings)
    assert _writers(rows, t.requests) == {"user", "node", "views"}  # views: the API relay
    assert _writers(rows, t.shard_inbox) == {"worker"}
    assert _writers(rows, t.events) == {"worker"}
    assert _writers(rows, t.node_commands) == {"worker"}
    assert _readers(rows, t.node_commands) == {"node"}
    assert _readers(rows, t.events) == {"worker", "views"}
    assert _writers(rows, t.job_starts) == {"views"}
    # every reader that dead-letters what it cannot read: refused, the views' process stopped
    assert _writers(rows, t.dead_letters) == {"worker", "views", "node"}
    assert "user" in _readers(rows, t.job_starts)
    assert not any(r.kind == "CLUSTER" or r.operation == "ALL" for r in rows)
    assert not any(r.pattern == "PREFIXED" and r.name in ("p", "p.") for r in rows)


def test_principal_names_can_be_mapped() -> None:
    rows = acl_table(Settings(prefix="p"), {"node": "slurmd"})
    assert "slurmd" in _readers(rows, Topics(Settings(prefix="p")).node_commands)
    assert not any(r.principal == "node" for r in rows)


def test_a_secured_broker_has_sasl_ssl_clients_mtls_controllers_and_the_authorizer(
    tmp_path: Path
) -> None:
    files = TlsFiles(tmp_path)
    write_secret(files.keystore_password_file, "ks")
    write_secret(files.admin_password_file, "adminpw")
    spec = plan_cluster(1, None, "4.4.0", secure=True)
    text = server_properties(spec, spec.nodes[0], tmp_path / "data", secure_properties(files))
    props = dict(line.split("=", 1) for line in text.splitlines() if not line.startswith("#"))
    assert props["listeners"].startswith("SASL_SSL://127.0.0.1:")
    assert props["listener.security.protocol.map"] == \
        "CONTROLLER:SSL,SASL_SSL:SASL_SSL,USERS:PLAINTEXT"
    users = f"USERS://127.0.0.1:{spec.nodes[0].users_port}"
    assert users in props["listeners"].split(",") and users in props[
        "advertised.listeners"].split(",")
    assert props["inter.broker.listener.name"] == "SASL_SSL"
    assert spec.users_bootstrap == f"127.0.0.1:{spec.nodes[0].users_port}"
    assert props["listener.name.controller.ssl.client.auth"] == "required"
    assert props["allow.everyone.if.no.acl.found"] == "false"
    assert props["authorizer.class.name"].endswith("StandardAuthorizer")
    assert props["super.users"] == "User:admin;User:kafka-broker"
    assert "PLAINTEXT" not in props["listeners"] + props["advertised.listeners"]
    assert (tmp_path / "admin.password").stat().st_mode & 0o077 == 0


@pytest.mark.parametrize("secure", [False, True])
def test_no_member_of_another_protocol_takes_over_a_classic_group(secure: bool) -> None:
    """Kafka 4 converts a classic group with members to the consumer protocol (KIP-848) when
    a consumer-protocol member joins it, and its assignor then splits the partitions with the
    newcomer: on the users' listener another user took a TypeScript client's job starts so."""
    spec = plan_cluster(1, None, "4.4.0", secure=secure)
    text = server_properties(spec, spec.nodes[0], Path("/tmp/x"))
    props = dict(line.split("=", 1) for line in text.splitlines() if not line.startswith("#"))
    assert props["group.consumer.migration.policy"] == "disabled"
    assert int(props["offset.metadata.max.bytes"]) <= 64  # a group's commits cost little heap


def test_a_plaintext_cluster_has_no_users_listener() -> None:
    spec = plan_cluster(1, None, "4.4.0")
    assert spec.users_bootstrap == "" and spec.nodes[0].users_port == 0
    text = server_properties(spec, spec.nodes[0], Path("/tmp/x"))
    assert "USERS" not in text


def test_a_secured_cluster_recorded_without_a_users_listener_is_given_one() -> None:
    from infra.kafka._config import ClusterSpec, NodeSpec, with_users_ports

    old = ClusterSpec("id", "4.4.0", (NodeSpec(1, 19092, 19093),), secure=True)
    new = with_users_ports(old)
    assert new.nodes[0].port == 19092 and new.nodes[0].controller_port == 19093
    assert new.nodes[0].users_port not in (0, 19092, 19093)
    assert new.users_bootstrap == f"127.0.0.1:{new.nodes[0].users_port}"


def test_anonymous_on_the_users_listener_writes_requests_alone_and_joins_no_system_group(
) -> None:
    from streams.acls import ANONYMOUS, users_listener_table

    settings = Settings(prefix="sluice", cluster="c1")
    t = Topics(settings)
    rows = users_listener_table(settings)
    assert {r.principal for r in rows} == {ANONYMOUS}
    writes = {r.name for r in rows if r.operation in ("WRITE", "CREATE", "ALTER", "ALL")}
    assert writes == {t.requests}
    reads = {r.name for r in rows if r.kind == "TOPIC" and r.operation == "READ"}
    assert reads == {t.events, t.job_starts, t.jobcomp_start}
    groups = {(r.pattern, r.name) for r in rows if r.kind == "GROUP"}
    assert groups == {("LITERAL", "sluice-reader-unused"), ("PREFIXED", "sluice-watch-"),
                      ("PREFIXED", "sluice-ts-client-")}
    # assign()-only readers neither join nor commit (a commit makes a group: a flood of them
    # killed the broker): READ on a group name only for the TypeScript client's (kafkajs joins)
    joinable = {r.name for r in rows if r.kind == "GROUP" and r.operation == "READ"}
    assert joinable == {"sluice-ts-client-"}
    # nor may the SASL principals commit into those names (the `user` password is shared)
    assert not [r for r in acl_table(settings) if r.kind == "GROUP" and r.operation == "READ"
                and r.name in ("sluice-reader-unused", "sluice-watch-")]
    # the groups the worker joins (the assign()-only readers' name is joined by none)
    worker_groups = {r.name for r in acl_table(settings) if r.kind == "GROUP"
                     and r.principal == "worker"} - {"sluice-reader-unused"}
    assert worker_groups and not any(
        name.startswith(("sluice-watch-", "sluice-ts-client-")) for name in worker_groups)
    assert not [r for r in rows if r.kind == "TRANSACTIONAL_ID"]


def test_up_revokes_a_right_an_older_table_gave_anonymous(monkeypatch: pytest.MonkeyPatch) -> None:
    """``apply_acls`` only creates: a system made before ANONYMOUS lost READ on the assign()-only
    readers' groups kept it (and with it the commits that filled the broker's heap)."""
    from confluent_kafka.admin import (  # type: ignore[attr-defined]
        AclBinding,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    from streams import kafka_admin
    from streams.acls import ANONYMOUS, users_listener_table

    settings = Settings(prefix="sluice", cluster="c1")
    keep = users_listener_table(settings)
    stale = AclBinding(ResourceType.GROUP, "sluice-watch-", ResourcePatternType.PREFIXED,
                       "User:ANONYMOUS", "*", AclOperation.READ, AclPermissionType.ALLOW)
    other = AclBinding(ResourceType.GROUP, "sluice-watch-", ResourcePatternType.PREFIXED,
                       "User:user", "*", AclOperation.READ, AclPermissionType.ALLOW)
    current = [stale, other, *(r.binding() for r in keep)]
    deleted: list[object] = []

    class _Admin:
        def delete_acls(self, filters: list[object], request_timeout: float) -> dict[str, Any]:
            deleted.extend(filters)
            done: Any = type("Done", (), {"result": lambda self, timeout: []})()
            return {"f": done}

    monkeypatch.setattr(kafka_admin, "current_acls", lambda *_a, **_k: current)
    monkeypatch.setattr(kafka_admin, "_admin", lambda *_a, **_k: _Admin())
    revoked = kafka_admin.revoke_others(settings, ANONYMOUS, keep)
    assert revoked == [stale]
    assert len(deleted) == 1 and kafka_admin.acl_fields(deleted[0])[:5] == (  # type: ignore[arg-type]
        "User:ANONYMOUS", "READ", "GROUP", "PREFIXED", "sluice-watch-")
    current = [other, *(r.binding() for r in keep)]
    assert kafka_admin.revoke_others(settings, ANONYMOUS, keep) == []


def test_sluice_up_revokes_for_every_principal_what_the_table_dropped(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The SASL principals lost READ on the assign()-only readers' groups too; an embedded
    broker made before kept it for each (``apply_acls`` only creates)."""
    from cli import up_secure
    from streams.acls import ANONYMOUS, PRINCIPALS

    calls: dict[str, list[Any]] = {}
    monkeypatch.setattr(up_secure, "revoke_others",
                        lambda _s, principal, keep, client=None: calls.setdefault(principal, keep))
    up_secure.revoke_stale(Settings(prefix="sluice", cluster="c1"), None)
    assert set(calls) == {ANONYMOUS, *PRINCIPALS}
    for principal, keep in calls.items():
        assert keep and {r.principal for r in keep} == {principal}
        assert not [r for r in keep if r.kind == "GROUP" and r.operation == "READ"
                    and r.name in ("sluice-reader-unused", "sluice-watch-")]



def test_the_broker_caps_connections_under_its_descriptor_limit() -> None:
    """20,000 idle TCP connections of a local user to the users' listener took every file
    descriptor of the bundled broker (limit 20,000): it died flushing its metadata log."""
    from infra.kafka._config import connection_limits

    assert connection_limits(True, 20000) == {
        "max.connections": 10000, "listener.name.users.max.connections": 1000}
    assert connection_limits(True, 1024) == {
        "max.connections": 512, "listener.name.users.max.connections": 128}
    assert connection_limits(False, 20000) == {"max.connections": 10000}
    spec = plan_cluster(1, None, "4.4.0", secure=True)
    text = server_properties(spec, spec.nodes[0], Path("/tmp/x"), {"x": 1})
    props = dict(line.split("=", 1) for line in text.splitlines() if not line.startswith("#"))
    assert 0 < int(props["listener.name.users.max.connections"]) < int(props["max.connections"])
