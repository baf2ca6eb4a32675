"""Confluent framing through a real schema registry (Apicurio, started by the fixture).

Records are written by confluent-kafka's registry-aware ``AvroSerializer`` (Confluent wire
format: ``00`` + schema id + Avro body) and go through the real worker and node daemons.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from typing import Any

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient, record_subject_name_strategy
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from schemas import SluidGenerator, encode
from schemas.catalog import CATALOG, schema_json
from streams.topics import Topics
from tests.e2e.harness import LocalSystem
from tests.e2e.ledger import (
    TEST_USER,
    dead_letters,
    facts,
    job_workdir,
    produce_raw,
    submit_records,
)

pytestmark = [pytest.mark.kafka, pytest.mark.e2e]


def _serializer(url: str, schema: str, register: bool) -> AvroSerializer:
    """A registry-aware serializer: registering its schema, or using the subject's latest."""
    client = SchemaRegistryClient({"url": url})
    return AvroSerializer(client, schema, conf={
        "auto.register.schemas": register, "use.latest.version": not register,
        "subject.name.strategy": record_subject_name_strategy,
    })


def _old_submit_schema() -> str:
    """SubmitJob as an older client knows it: its JobSpec lacks fields added since."""
    raw = json.loads(schema_json("SubmitJob"))
    spec = next(f for f in raw["fields"] if f["name"] == "spec")["type"]
    spec["fields"] = [f for f in spec["fields"] if f["name"] not in ("comment", "hot_swap")]
    return json.dumps(raw)


def _submission(sluid: str, name: str) -> dict[str, Any]:
    return {"job_sluid": sluid, "spec": {
        "name": name, "user": TEST_USER, "command": ["sh", "-c", f"echo {name}"],
        "workdir": job_workdir()}}


def _sluice(system: LocalSystem, *argv: str) -> subprocess.CompletedProcess[str]:
    import os

    env = {**os.environ, **system.settings.as_env()}
    return subprocess.run([sys.executable, "-m", "cli.main", *argv], env=env,
                          capture_output=True, text=True, timeout=120, check=False)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_confluent_framed_submissions_run_to_completion(
    system: LocalSystem, own_schema_registry_url: str
) -> None:
    # its own registry: the old schema it registers becomes the subject's latest version
    url = own_schema_registry_url
    system.settings = system.settings.with_(schema_registry_url=url)
    registered = _sluice(system, "schemas", "register", "--json")
    again = _sluice(system, "schemas", "register", "--json")
    assert registered.returncode == 0, registered.stderr
    ids = json.loads(registered.stdout)
    assert json.loads(again.stdout) == ids  # idempotent
    assert set(ids) == {entry.full_name for entry in CATALOG.entries()}

    system.start_core()
    system.start_nodes(1)
    system.wait_nodes_idle(1)
    sluids = SluidGenerator(system.settings.cluster_id)
    current, old, bogus = sluids.new(), sluids.new(), sluids.new()
    topic = Topics(system.settings).requests
    context = SerializationContext(topic, MessageField.VALUE)
    new_value = _serializer(url, schema_json("SubmitJob"), register=False)(
        _submission(current, "conf-new"), context)
    old_value = _serializer(url, _old_submit_schema(), register=True)(
        _submission(old, "conf-old"), context)
    assert new_value is not None and old_value is not None
    assert new_value[0] == 0 and int.from_bytes(new_value[1:5], "big") == ids["sluice.SubmitJob"]
    assert int.from_bytes(old_value[1:5], "big") != ids["sluice.SubmitJob"]
    unknown = b"\x00" + (2**31 - 7).to_bytes(4, "big") + new_value[5:]
    produce_raw(system.settings, [
        (current.encode(), new_value), (old.encode(), old_value), (bogus.encode(), unknown),
    ])

    def ended() -> dict[str, str] | None:
        found = {r.record["job_sluid"]: r.record["state"]
                 for r in facts(system.settings, "JobEnded")}
        return found if {current, old} <= set(found) else None

    states = system.wait(ended, 120, "both Confluent-framed jobs to end")
    letters = {r.record["key"]: r.record["error"] for r in dead_letters(system.settings)}
    assert states[current] == "COMPLETED" and states[old] == "COMPLETED"
    assert letters[bogus.encode()].startswith(f"UnknownSchemaId: schema id {2**31 - 7}")
    assert current.encode() not in letters and old.encode() not in letters
    assert system.processes["worker"].poll() is None


@pytest.mark.parametrize("registry", ["none", "down"])
def test_without_a_working_registry_confluent_records_are_named_dead_letters(
    system: LocalSystem, registry: str
) -> None:
    env = {"SLUICE_SCHEMA_REGISTRY_WAIT_S": "2", "SLUICE_SCHEMA_REGISTRY_URL": (
        "" if registry == "none" else f"http://127.0.0.1:{_closed_port()}")}
    system.start("worker", "worker", "--loglevel", "info", env=env)
    sluids = SluidGenerator(system.settings.cluster_id)
    framed_job, good = sluids.new(), sluids.new()
    body = encode("SubmitJob", _submission(framed_job, "framed"))[10:]
    produce_raw(system.settings, [
        (framed_job.encode(), b"\x00" + (1).to_bytes(4, "big") + body),
        submit_records(good),
    ])

    def settled() -> tuple[list[Any], dict[bytes, str]] | None:
        # The framed record is dead-lettered once the registry wait is over, which may be
        # after the good job (another partition) is queued: wait for both.
        queued = facts(system.settings, "JobQueued")
        letters = {r.record["key"]: r.record["error"] for r in dead_letters(system.settings)}
        return (queued, letters) if queued and framed_job.encode() in letters else None

    queued, letters = system.wait(settled, 90, "the good job queued, the framed one a letter")
    assert [r.record["job_sluid"] for r in queued] == [good]
    reason = letters[framed_job.encode()]
    if registry == "none":
        assert reason.startswith("NoSchemaRegistry: the record is Confluent-framed (schema id 1)")
    else:
        assert reason.startswith("RegistryUnavailable: schema id 1")
        assert "within 2s" in reason
    assert system.processes["worker"].poll() is None
