"""A Java producer with a registry-aware serializer (Apicurio serdes from Maven Central, Confluent
wire format) gets its job run: clients/java-registry, built with mvn, against the real registry
and broker."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from schemas import SluidGenerator
from schemas.catalog import schema_json
from streams.topics import Topics
from tests.e2e.harness import LocalSystem
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

    sent = subprocess.run(
        ["java", "-cp", classpath, "dev.sluice.example.SubmitWithRegistry",
         system.settings.bootstrap, Topics(system.settings).requests,
         schema_registry_url.removesuffix(CCOMPAT), str(schema_file), sluid, job_workdir(),
         "from-java"],
        capture_output=True, text=True, timeout=180, check=False)
    assert sent.returncode == 0, sent.stdout + sent.stderr
    assert f"sent {sluid}" in sent.stdout

    def ended() -> str | None:
        states = {r.record["job_sluid"]: r.record["state"]
                  for r in facts(system.settings, "JobEnded")}
        return states.get(sluid)

    state = system.wait(ended, 120, "the Java client's job to end")
    letters = [r.record["error"] for r in dead_letters(system.settings)]
    assert state == "COMPLETED", letters
    assert letters == []
