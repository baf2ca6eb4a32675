"""A Java producer with a registry-aware serializer (Apicurio serdes from Maven Central, Confluent
wire format) gets its job run: clients/java-registry, built with mvn, against the real registry
and broker; with a JWT (``SLUICE_JWT``) too, on a system that requires a credential as ``sluice
up`` starts it (the client sent none, and its job was denied ``Unauthenticated``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from agents.auth import jwt_token
from schemas import SluidGenerator
from schemas.catalog import schema_json
from streams.topics import Topics
from tests.e2e.harness import LocalSystem, apply_config
from tests.e2e.ledger import dead_letters, facts, job_workdir

pytestmark = [pytest.mark.kafka, pytest.mark.e2e]

CLIENT = Path(__file__).resolve().parents[2] / "clients" / "java-registry"
CCOMPAT = "/apis/ccompat/v7"


def _build() -> str:
    """The Java client's classpath (mvn package, cached by Maven)."""
    for tool in ("mvn", "java"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is not on PATH: the Java client needs it", pytrace=False)
    built = subprocess.run(["mvn", "-B", "-q", "package", "-DskipTests"], cwd=CLIENT,
                           capture_output=True, text=True, timeout=900, check=False)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    deps = (CLIENT / "target" / "classpath.txt").read_text().strip()
    return f"{CLIENT / 'target' / 'classes'}:{deps}"


def test_a_java_producer_with_apicurio_serdes_gets_its_job_run(
    system: LocalSystem, schema_registry_url: str, tmp_path: Path
) -> None:
    if not schema_registry_url.endswith(CCOMPAT):
        pytest.skip("the Java client uses Apicurio's serdes: needs an Apicurio registry")
    classpath = _build()
    system.settings = system.settings.with_(schema_registry_url=schema_registry_url)
    from streams.schema_registry import SchemaRegistry

    SchemaRegistry(schema_registry_url, timeout_s=30).register_all()  # sluice schemas register
    system.start_core()
    system.start_nodes(1)
    system.wait_nodes_idle(1)
    sluid = SluidGenerator(system.settings.cluster_id).new()
    schema_file = tmp_path / "SubmitJob.avsc"
    schema_file.write_text(schema_json("SubmitJob"))

    _send(classpath, system, schema_registry_url, schema_file, sluid, job_workdir(),
          "from-java")

    def ended() -> str | None:
        states = {r.record["job_sluid"]: r.record["state"]
                  for r in facts(system.settings, "JobEnded")}
        return states.get(sluid)

    state = system.wait(ended, 120, "the Java client's job to end")
    letters = [r.record["error"] for r in dead_letters(system.settings)]
    assert state == "COMPLETED", letters
    assert letters == []


def _send(classpath: str, system: LocalSystem, registry_url: str, schema_file: Path, sluid: str,
          workdir: str, name: str, env: dict[str, str] | None = None) -> None:
    sent = subprocess.run(
        ["java", "-cp", classpath, "dev.sluice.example.SubmitWithRegistry",
         system.settings.bootstrap, Topics(system.settings).requests,
         registry_url.removesuffix(CCOMPAT), str(schema_file), sluid, workdir, name],
        capture_output=True, text=True, timeout=180, check=False,
        env={**os.environ, "SLUICE_JWT": "", **(env or {})})
    assert sent.returncode == 0, sent.stdout + sent.stderr
    assert f"sent {sluid}" in sent.stdout


def test_the_java_registry_client_sends_its_jwt_where_a_credential_is_required(
    system: LocalSystem, schema_registry_url: str, tmp_path: Path
) -> None:
    if not schema_registry_url.endswith(CCOMPAT):
        pytest.skip("the Java client uses Apicurio's serdes: needs an Apicurio registry")
    classpath = _build()
    key_path = tmp_path / "jwt.key"
    key = jwt_token.create_key(key_path)
    system.settings = system.settings.with_(schema_registry_url=schema_registry_url,
                                            auth="jwt", jwt_key=str(key_path))
    from cli.client import Client
    from streams.schema_registry import SchemaRegistry

    system.client = Client(system.settings)
    SchemaRegistry(schema_registry_url, timeout_s=30).register_all()
    system.start_core()
    system.wait(lambda: system.client.get("/v1/status"), 60, "the views")
    system.start_nodes(1)  # its node JWT made from the same key (AuthNodeNames)
    system.wait_nodes_idle(1)
    apply_config(system, "AuthRequired: true\nAuthNodeNames: ['n01']\n")  # as sluice up
    workdir = Path(tempfile.mkdtemp(prefix="sluice-java-registry-"))
    workdir.chmod(0o777)  # the job runs as nobody, the token's user
    schema_file = tmp_path / "SubmitJob.avsc"
    schema_file.write_text(schema_json("SubmitJob"))
    sluid = SluidGenerator(system.settings.cluster_id).new()
    try:
        token = jwt_token.issue(key, "nobody", 600, int(time.time()))
        _send(classpath, system, schema_registry_url, schema_file, sluid, str(workdir),
              "from-java-jwt", {"SLUICE_JWT": token})

        def decided() -> tuple[str, str] | None:
            for fact in facts(system.settings):
                record = fact.record
                if fact.name == "JobEnded" and record["job_sluid"] == sluid:
                    return "ended", str(record["state"])
                if fact.name == "RequestDenied" and record["subject_sluid"] == sluid:
                    return "denied", f"{record['reason']}: {record['detail']}"
            return None

        outcome = system.wait(decided, 120, "the Java client's job to end or be denied")
        assert outcome[0] == "ended" and outcome[1] == "COMPLETED", outcome
        job = system.client.get(f"/v1/jobs/{sluid}")["job"]
        assert job["user"] == "nobody", job
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
