"""A node whose credential expires while its job runs: its reports are refused for real
(``CredentialExpired``), and its daemon stops heartbeating past the token's expiry (d9459bb, as a
slurmd that cannot authenticate is ``Not responding``), so the node goes DOWN one node timeout
later and its run ends there, never RUNNING for ever. Real broker, worker and node daemon.

Before d9459bb the heartbeats (which carry no credential) kept such a node in service: the run
ended only by the missing-run rule (Slurm's ``_purge_missing_jobs``; still unit-tested in
tests/unit/core/test_missing_runs.py) while the node kept taking jobs to lose the same way.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agents.auth import jwt_token
from cli.client import Client
from tests.e2e.harness import LocalSystem, apply_config
from tests.e2e.ledger import TEST_USER, facts

pytestmark = [pytest.mark.kafka, pytest.mark.e2e, pytest.mark.slow]

NODE_TIMEOUT_S = 3.0
GRACE_S = 3
TOKEN_LIFE_S = 45
"""The node's credential lives this long: long enough to register and start the job."""


def _job(system: LocalSystem, sluid: str) -> dict[str, Any]:
    return dict(system.client.get(f"/v1/jobs/{sluid}")["job"])


def _sluice(system: LocalSystem, *argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **system.settings.as_env()}
    return subprocess.run([sys.executable, "-m", "cli.main", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120, check=False)


def _node_whose_credential_expires(system: LocalSystem, tmp_path: Path) -> int:
    """Worker, projections and node n01 with AuthType jwt; n01's own token expires
    ``TOKEN_LIFE_S`` from now (the time returned), while the test's stays valid."""
    key_path = tmp_path / "jwt.key"
    key = jwt_token.create_key(key_path)
    system.settings = system.settings.with_(auth="jwt", jwt_key=str(key_path))
    system.client = Client(system.settings)
    system.start("worker", "worker", "--loglevel", "info",
                 env={"SLUICE_NODE_TIMEOUT": str(NODE_TIMEOUT_S)})
    system.start("projections", "projections")
    apply_config(system, f"MissingRunGrace: {GRACE_S}\n")

    issued = int(time.time())
    token = jwt_token.issue(key, TEST_USER, TOKEN_LIFE_S, issued, node="n01")
    system.start("n01", "node", "--name", "n01", "--cpus", "2", "--mem", "2048",
                 "--heartbeat", "0.5", "--kill-wait", "3",
                 env={"SLUICE_JWT": token, "SLUICE_NODE_TIMEOUT": str(NODE_TIMEOUT_S)})
    system.wait_nodes_idle(1)
    return issued + TOKEN_LIFE_S


def _run(system: LocalSystem, tmp_path: Path, command: list[str], expires: int) -> str:
    sluid = system.client.sluids.new()
    spec = {"user": TEST_USER, "nodes_min": 1, "command": command, "workdir": str(tmp_path),
            "requeue": "no"}
    system.client.send(sluid, "SubmitJob", {"job_sluid": sluid, "spec": spec})
    system.wait(lambda: _job(system, sluid)["state"] == "RUNNING", 60, "the job to run")
    assert time.time() < expires, "the job started after the node's credential expired"
    return sluid


def test_a_node_whose_credential_expired_goes_down_and_its_run_ends_node_fail(
    system: LocalSystem, tmp_path: Path,
) -> None:
    expires = _node_whose_credential_expires(system, tmp_path)
    until = expires + 2  # the command exits once the node's credential has expired
    command = ["sh", "-c", f'while [ "$(date +%s)" -lt {until} ]; do sleep 0.2; done; exit 0']
    sluid = _run(system, tmp_path, command, expires)

    ended = system.wait(lambda: (j := _job(system, sluid))["state"] not in ("RUNNING", "PENDING")
                        and j, TOKEN_LIFE_S + 90, "the job to end")
    assert ended["state"] == "NODE_FAIL"
    assert ended["reason"].startswith("Not responding"), ended["reason"]
    node = system.client.get("/v1/nodes/n01")["node"]
    assert node["state"] == "DOWN" and "Not responding" in node["reason"], node
    [end] = [f.record for f in facts(system.settings, "JobEnded")
             if f.record["job_sluid"] == sluid]
    assert end["state"] == "NODE_FAIL" and end["time_ms"] >= (expires - 1) * 1000

    shown = _sluice(system, "show", "job", str(ended["job_id"]), cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "JobState=NODE_FAIL" in shown.stdout
    assert "Reason=NodeDown" in shown.stdout  # Slurm's word; the words themselves after it
    history = _sluice(system, "history", "-X", "-P", "-n", "-j", str(ended["job_id"]),
                      "-o", "JobID,State,Reason", cwd=tmp_path)
    assert history.returncode == 0, history.stderr
    [row] = history.stdout.splitlines()
    assert row.split("|") == [str(ended["job_id"]), "NODE_FAIL", "NodeDown"], row


def test_a_cancelled_run_on_a_node_that_then_fails_ends_cancelled(
    system: LocalSystem, tmp_path: Path,
) -> None:
    """The cancel is decided while the node still counts as up (its daemon stopped
    heartbeating at the token's expiry; the node timeout has not passed): its kill is refused
    on the way back (the exit report, ``CredentialExpired``), the node then goes DOWN, and the
    job ends CANCELLED, as Slurm's job took that state at the cancel (it said NODE_FAIL)."""
    expires = _node_whose_credential_expires(system, tmp_path)
    sluid = _run(system, tmp_path, ["sleep", "600"], expires)
    system.wait(lambda: time.time() > expires + 0.3, TOKEN_LIFE_S + 5,
                "the node's token to expire")
    system.client.send(sluid, "CancelJob", {"job_sluid": sluid, "user": ""})

    ended = system.wait(lambda: (j := _job(system, sluid))["state"] not in ("RUNNING", "PENDING")
                        and j, 90, "the cancelled job to end")
    assert ended["state"] == "CANCELLED", ended
    [kill] = [f.record for f in facts(system.settings, "RunKillRequested")
              if f.record["job_sluid"] == sluid]
    assert kill["reason"] == "CANCELLED"
    assert system.client.get("/v1/nodes/n01")["node"]["state"] == "DOWN"
