"""A whole Sluice system (worker, projections, one node) with a JWT key, for the client tests."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.auth import jwt_token
from tests.e2e.harness import LocalSystem

MAX_REQUEST_BYTES = 32_768


@pytest.fixture(scope="package")
def jwt_system(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory,
               ) -> Iterator[LocalSystem]:
    home = tmp_path_factory.mktemp("clients") / "home"
    local = LocalSystem(kafka_bootstrap, home, f"cli{uuid.uuid4().hex[:10]}")
    key = home / "auth" / "jwt_hs256.key"
    key.parent.mkdir(parents=True)
    jwt_token.create_key(key)
    # A request larger than this is dead-lettered (RequestTooLarge) before it is decoded: how
    # the clients' own records are made undecodable to the intake (test_clients.py), no build
    # of another client needed. Every other record of these tests is far smaller.
    local.settings = local.settings.with_(jwt_key=str(key), max_request_bytes=MAX_REQUEST_BYTES)
    try:
        local.start_core()
        local.start_nodes(1)
        local.wait_nodes_idle(1)
        yield local
    finally:
        local.stop()


@pytest.fixture
def job_dir() -> Iterator[Path]:
    """A working directory the jobs' owner (nobody) can reach and write: outside pytest's own
    temporary tree, which is mode 0700."""
    path = Path(tempfile.mkdtemp(prefix="sluice-client-job-"))
    path.chmod(0o777)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def issue_token(system: LocalSystem, user: str) -> str:
    """A JWT from ``sluice token`` (the command an administrator runs for a user)."""
    done = subprocess.run(
        [sys.executable, "-m", "cli.main", "token", "--user", user],
        env={**system.settings.as_env(), "PATH": "/usr/bin:/bin"}, capture_output=True,
        text=True, timeout=60, check=False, cwd=Path(__file__).resolve().parents[2],
    )
    assert done.returncode == 0, done.stderr
    name, _, token = done.stdout.strip().partition("=")
    assert name == "SLUICE_JWT" and token
    return token
