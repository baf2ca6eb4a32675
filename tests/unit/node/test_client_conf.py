"""The client configuration a node daemon writes for its jobs (agents/node/client_conf.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.auth.node_keys import ensure_keys
from agents.node.client_conf import job_client_conf
from streams.settings import Settings


def test_without_the_nodes_env_key_the_file_is_written_without_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A node with no key file for sealed environments (a pod without the keys Secret) is no
    reason to fail: jobs get the rest of the configuration (it crashed the daemon at the first
    launch: the missing key's error was not one the writer expected)."""
    monkeypatch.delenv("SLUICE_CONF", raising=False)
    settings = Settings.from_env({"SLUICE_HOME": str(tmp_path / "home")})
    path = job_client_conf(settings, tmp_path / "node")
    text = Path(path).read_text()
    assert "EnvPublicKey" not in text and "KafkaBootstrap" in text


def test_with_the_key_its_public_half_is_given_to_jobs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SLUICE_CONF", raising=False)
    settings = Settings.from_env({"SLUICE_HOME": str(tmp_path / "home")})
    ensure_keys(settings)
    assert "EnvPublicKey=" in Path(job_client_conf(settings, tmp_path / "node")).read_text()


def test_a_conf_named_for_jobs_comes_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """sluice up's secured default: the daemon speaks SASL_SSL as ``node``, its jobs get the
    users' listener. Written from the daemon's settings, a batch job's srun was sent to the
    SASL_SSL listener without a password and refused to start."""
    users = tmp_path / "sluice.conf"
    users.write_text("KafkaBootstrap=127.0.0.1:41313\n")
    monkeypatch.setenv("SLUICE_CONF", str(tmp_path / "daemon.conf"))
    (tmp_path / "daemon.conf").write_text("KafkaBootstrap=127.0.0.1:19703\n")
    monkeypatch.setenv("SLUICE_JOB_CONF", str(users))
    settings = Settings.from_env({"SLUICE_HOME": str(tmp_path / "home")})
    assert job_client_conf(settings, tmp_path / "node") == str(users)
    monkeypatch.setenv("SLUICE_JOB_CONF", str(tmp_path / "missing.conf"))  # named, not there
    assert job_client_conf(settings, tmp_path / "node") == str(tmp_path / "daemon.conf")
