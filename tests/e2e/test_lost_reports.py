"""A run whose exit report is refused for real still ends: the shard finds it missing from its
node's heartbeats (Slurm's ``_purge_missing_jobs``). Real broker, worker and node daemon.

The refusal is a real one: the node daemon holds a node JWT that expires while its job runs.
Its heartbeats carry no credential and keep flowing, so the node stays UP; its
``ReportJobExit`` (and every re-send of it) is refused by the intake as ``CredentialExpired``
and recorded as a ``RequestDenied``. Without the missing-run rule the job would stay RUNNING for
ever (it has no time limit). The daemon sends its unanswered report again (refused again)
before the shard gives up on it.
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


def _denied_exits(system: LocalSystem, sluid: str) -> list[dict[str, Any]]:
    return [f.record for f in facts(system.settings, "RequestDenied")
            if f.record["request"] == "ReportJobExit" and f.record["subject_sluid"] == sluid]


def test_a_run_whose_exit_report_is_refused_ends_as_missing_from_its_node_with_the_reason(
    system: LocalSystem, tmp_path: Path,
) -> None:
    expires = _node_whose_credential_expires(system, tmp_path)
    until = expires + 2  # the command exits once the node's credential has expired
    command = ["sh", "-c", f'while [ "$(date +%s)" -lt {until} ]; do sleep 0.2; done; exit 0']
    sluid = _run(system, tmp_path, command, expires)

    ended = system.wait(lambda: (j := _job(system, sluid))["state"] not in ("RUNNING", "PENDING")
                        and j, TOKEN_LIFE_S + 90, "the job to end")
    assert ended["state"] == "NODE_FAIL"
    assert ended["reason"].startswith("Run missing from node n01"), ended["reason"]

    # the exit report was refused for real, and the end came only after the grace
    denied = _denied_exits(system, sluid)
    assert denied, "the node's exit report was not refused"
    assert {d["reason"] for d in denied} == {"CredentialExpired"}
    assert len(denied) >= 2, "the daemon did not send its unanswered exit report again"
    [noted] = [f.record for f in facts(system.settings, "RunMissingNoted")
               if f.record["job_sluid"] == sluid and f.record["missing"]]
    [end] = [f.record for f in facts(system.settings, "JobEnded")
             if f.record["job_sluid"] == sluid]
    assert end["state"] == "NODE_FAIL"
    assert end["time_ms"] - noted["time_ms"] >= GRACE_S * 1000
    assert noted["time_ms"] >= denied[0]["time_ms"]  # missing only once the report was refused
    node = system.client.get("/v1/nodes/n01")["node"]
    assert node["state"] == "IDLE"  # the node itself is fine: it was not failed

    shown = _sluice(system, "show", "job", str(ended["job_id"]), cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "JobState=NODE_FAIL" in shown.stdout
    assert "Reason=NodeDown" in shown.stdout  # Slurm's word; the words themselves after it
    assert "ReasonDetail=Run missing from node n01" in shown.stdout
    history = _sluice(system, "history", "-X", "-P", "-n", "-j", str(ended["job_id"]),
                      "-o", "JobID,State,Reason", cwd=tmp_path)
    assert history.returncode == 0, history.stderr
    [row] = history.stdout.splitlines()
    job_id, state, reason = row.split("|")
    assert (job_id, state) == (str(ended["job_id"]), "NODE_FAIL")
    assert reason == "NodeDown", row  # sacct's Reason is Slurm's word (sluice audit: why)
    audit = _sluice(system, "audit", str(ended["job_id"]), cwd=tmp_path)
    assert "missing from node n01's heartbeat" in audit.stdout, audit.stdout


def test_a_cancelled_run_whose_exit_report_is_refused_ends_cancelled_as_missing(
    system: LocalSystem, tmp_path: Path,
) -> None:
    """A killed run runs its epilog and is dropped by its node at once: its unanswered exit
    report keeps it in the heartbeat's ``exited`` until the shard ends it, with the kill's own
    state."""
    expires = _node_whose_credential_expires(system, tmp_path)
    sluid = _run(system, tmp_path, ["sleep", "600"], expires)
    system.wait(lambda: time.time() > expires + 1, TOKEN_LIFE_S + 5, "the node's token to expire")
    system.client.send(sluid, "CancelJob", {"job_sluid": sluid, "user": ""})

    ended = system.wait(lambda: (j := _job(system, sluid))["state"] not in ("RUNNING", "PENDING")
                        and j, 90, "the cancelled job to end")
    assert ended["state"] == "CANCELLED"
    assert ended["reason"].startswith("Run missing from node n01"), ended["reason"]
    assert {d["reason"] for d in _denied_exits(system, sluid)} == {"CredentialExpired"}
    [kill] = [f.record for f in facts(system.settings, "RunKillRequested")
              if f.record["job_sluid"] == sluid]
    assert kill["reason"] == "CANCELLED"
