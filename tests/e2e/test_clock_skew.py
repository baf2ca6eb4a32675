"""A node daemon whose clock is off: real daemons, worker and broker; the skewed daemon's
interpreter reads a wall clock shifted by a ``sitecustomize`` (its monotonic clock, the kernel's
and the broker's are untouched), as a host whose NTP stopped would. Behind: tolerated (the
health agent). Ahead by more than ``CommandTTL``: the node refuses its launches as expired, and
the shard drains it and requeues the job at once (``scheduler.nodes.refused_launches``); a node
in service whose clock jumps that far ahead is drained by its heartbeats alone, without a launch
(``agents.health_clock``, ``scheduler.nodes.clock_ahead``)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agents.auth import jwt_token
from agents.node.environment import COMPAT_BIN
from cli.audit import verify
from cli.client import Client
from projections.replay import read_facts
from tests.e2e.harness import LocalSystem, apply_config
from tests.e2e.ledger import TEST_USER, facts

pytestmark = [pytest.mark.kafka, pytest.mark.e2e, pytest.mark.slow]

TIMEOUT_S = 3.0
"""SLUICE_NODE_TIMEOUT of this test (node daemons heartbeat every 0.5 s)."""

_SKEWED_TIME = """\
import os, time
_skew = float(os.environ["SKEW_S"])
_flag = os.environ.get("SKEW_FLAG", "")
_on = not _flag
_time, _time_ns = time.time, time.time_ns
def _off():
    global _on
    if not _on:
        _on = os.path.exists(_flag)
    return _skew if _on else 0.0
time.time = lambda: _time() + _off()
time.time_ns = lambda: _time_ns() + int(_off() * 1e9)
"""


def _start_skewed_node(system: LocalSystem, name: str, skew_s: float, tmp_path: Path,
                       flag: Path | None = None) -> None:
    """Start node daemon ``name`` with its wall clock ``skew_s`` off (0: a true clock); with
    ``flag``, true until that file exists, then off (a clock that jumps)."""
    site = tmp_path / "skewed-clock"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(_SKEWED_TIME)
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
    env = {"PYTHONPATH": path, "SKEW_S": str(skew_s)}
    if flag is not None:
        env["SKEW_FLAG"] = str(flag)
    system.start(name, "node", "--name", name, "--cpus", "2", "--mem", "4096", "--gpus", "0",
                 "--heartbeat", "0.5", "--kill-wait", "3", env=env)


def _job(system: LocalSystem, sluid: str) -> dict[str, Any]:
    return dict(system.client.get(f"/v1/jobs/{sluid}")["job"])


def test_a_node_whose_clock_is_30_s_behind_stays_in_service_and_runs_its_job(
    system: LocalSystem, tmp_path: Path,
) -> None:
    system.start("worker", "worker", "--loglevel", "info",
                 env={"SLUICE_NODE_TIMEOUT": str(TIMEOUT_S)})
    system.start("projections", "projections")
    system.start_nodes(1, cpus=2, mem=4096)
    _start_skewed_node(system, "late01", -30.0, tmp_path)
    system.wait_nodes_idle(2)
    time.sleep(4 * TIMEOUT_S)  # its heartbeats all look 30 s old: it went DOWN every check

    sluid = system.client.sluids.new()
    spec = {"user": TEST_USER, "command": ["sh", "-c", "sleep 2"], "nodelist": "late01",
            "workdir": str(tmp_path), "time_limit_s": 60}
    system.client.send(sluid, "SubmitJob", {"job_sluid": sluid, "spec": spec})
    system.wait(lambda: _job(system, sluid)["state"] == "COMPLETED", 60, "the job to complete")

    changes = [r.record for r in facts(system.settings, "NodeStateChanged")
               if r.record["name"] == "late01"]
    assert [c["state"] for c in changes if c["state"] == "DOWN"] == []
    assert _job(system, sluid)["nodes"] == ["late01"]
    assert _job(system, sluid)["restart_count"] == 0
    log = (system.settings.home / "logs" / "worker.log").read_text()
    assert "before it was read" in log  # the skew is logged


AHEAD_S = 400.0
"""How far ahead the skewed node's clock runs: more than ``CommandTTL`` (300 s by default), as
the daemon seen on 2026-12-06 that refused every launch."""


def _cli(system: LocalSystem, *argv: str) -> str:
    env = {**os.environ, **system.settings.as_env()}
    env["PATH"] = f"{COMPAT_BIN}:{Path(sys.executable).parent}:{env.get('PATH', '')}"
    done = subprocess.run(list(argv), env=env, capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _submit(system: LocalSystem, tmp_path: Path, command: str, **spec: Any) -> str:
    sluid = system.client.sluids.new()
    body = {"user": TEST_USER, "command": ["sh", "-c", command], "workdir": str(tmp_path),
            "time_limit_s": 60, "exclusive": True, **spec}
    system.client.send(sluid, "SubmitJob", {"job_sluid": sluid, "spec": body})
    return sluid


def _with_jwts(system: LocalSystem, tmp_path: Path) -> None:
    """Every process of ``system`` signs its requests with a JWT it makes from one key (a node
    daemon a node JWT naming its node, made by its own clock), and the intake checks them."""
    key = tmp_path / "jwt_hs256.key"
    jwt_token.create_key(key)
    system.settings = system.settings.with_(auth="jwt", jwt_key=str(key))
    system.client = Client(system.settings)


def _forged_refusal_is_denied(system: LocalSystem, tmp_path: Path) -> None:
    """A fresh-looking refusal of n01's running launch, from a credential that is no node's:
    refused (``NotNodeCredential``); n01 is not drained and the job runs on."""
    busy = _submit(system, tmp_path, "sleep 60", nodelist="n01")
    run = system.wait(lambda: _job(system, busy)["state"] == "RUNNING" and _job(system, busy),
                      60, "a job running on n01")["runs"][0]
    key = jwt_token.read_key(Path(system.settings.jwt_key))
    mallory = jwt_token.issue(key, "mallory", 60, int(time.time()))
    node = system.client.get("/v1/nodes/n01")["node"]
    Client(system.settings.with_(jwt=mallory)).send(node["node_sluid"], "ReportCommandRefused", {
        "node_sluid": node["node_sluid"], "node_name": "n01", "command": "LaunchRun",
        "run_sluid": run["run_sluid"], "reason": "CommandExpired", "detail": "forged",
        "expiry_ms": int(time.time() * 1000) + 300_000})
    denied = system.wait(lambda: [r.record for r in facts(system.settings, "RequestDenied")
                                  if r.record["request"] == "ReportCommandRefused"], 30,
                         "the forged refusal denied")
    assert denied[0]["reason"] == "NotNodeCredential" and denied[0]["requester"] == "mallory"
    assert system.client.get("/v1/nodes/n01")["node"]["state"] != "DRAIN"
    assert _job(system, busy)["state"] == "RUNNING"
    system.client.send(busy, "CancelJob", {"job_sluid": busy})


@pytest.mark.parametrize("auth", ["none", "jwt"])
def test_a_node_whose_clock_runs_400_s_ahead_is_drained_and_its_job_runs_elsewhere_at_once(
    system: LocalSystem, tmp_path: Path, auth: str,
) -> None:
    """With ``jwt`` the cluster requires credentials: the skewed daemon's own node JWT (its
    ``iat`` 400 s in the future) carries the report that drains it, and nobody else's can.
    The health agent's heartbeat rule is off here (``SLUICE_CLOCK_AHEAD_BEATS=0``: it would
    drain the node within three heartbeats, before any launch): this is the launch's path."""
    if auth == "jwt":
        _with_jwts(system, tmp_path)
    system.start("worker", "worker", "--loglevel", "info",
                 env={"SLUICE_NODE_TIMEOUT": str(TIMEOUT_S), "SLUICE_CLOCK_AHEAD_BEATS": "0"})
    system.start("projections", "projections")
    system.start_node("n01", 2, 4096)
    _start_skewed_node(system, "ahead01", AHEAD_S, tmp_path)
    system.wait_nodes_idle(2)
    required = "AuthRequired: true\nAuthNodeNames: ['n01', 'ahead01']\n" if auth == "jwt" else ""
    apply_config(system, f"{required}SchedulerParameters:\n  requeue_delay: 0\n")

    # two whole-node jobs: one starts on each node (which one on which does not matter)
    jobs = [_submit(system, tmp_path, 'echo "ran on $SLURMD_NODENAME"; sleep 1')
            for _ in range(2)]
    first_runs = {s: system.wait(lambda s=s: _job(system, s)["runs"], 60, "a first run")[0]
                  for s in jobs}
    [victim] = [s for s in jobs if first_runs[s]["nodes"] == ["ahead01"]]
    for sluid in jobs:
        system.wait(lambda s=sluid: _job(system, s)["state"] == "COMPLETED", 60,
                    "both jobs to complete")

    job = _job(system, victim)
    first, second = job["runs"][0], job["runs"][1]
    assert second["nodes"] == ["n01"] and job["restart_count"] == 1
    restart_s = (second["start_ms"] - first["start_ms"]) / 1000
    print(f"\nclock {AHEAD_S:.0f} s ahead: first run on ahead01 → second run on n01 "
          f"{restart_s:.1f} s later")
    assert restart_s < 20  # seconds, not MissingRunGrace after a reconcile (~8 minutes)

    [ended] = [r.record for r in facts(system.settings, "JobEnded")
               if r.record["run_sluid"] == first["run_sluid"]]
    assert (ended["state"], ended["requeue_reason"]) == ("NODE_FAIL", "NODE_FAIL")
    assert ended["reason"].startswith("Launch refused by node ahead01: its clock runs ahead")
    refused = [r.record for r in facts(system.settings, "NodeCommandRefused")
               if r.record["run_sluid"] == first["run_sluid"]]
    assert refused[0]["command"] == "LaunchRun" and refused[0]["reason"] == "CommandExpired"
    output = (tmp_path / f"sluice-{job['job_id']}.out").read_text()
    assert output == "ran on n01\n", output  # nothing of the first run ran on ahead01

    node = system.client.get("/v1/nodes/ahead01")["node"]
    assert node["state"].startswith("DRAIN"), node
    assert node["reason"].startswith("Clock skew: refused a fresh launch as expired"), node
    [row] = _cli(system, "sinfo", "-R", "-h").splitlines()  # the reason's first 20 characters
    assert row.startswith("Clock skew: refused ") and row.endswith(" ahead01"), row
    assert "Reason=Clock skew: refused a fresh launch" in _cli(
        system, "scontrol", "show", "node", "ahead01")

    # the clock is fixed (the daemon restarts on a true clock); an administrator resumes it
    system.kill("ahead01")
    _start_skewed_node(system, "ahead01", 0.0, tmp_path)
    time.sleep(2 * TIMEOUT_S)
    assert system.client.get("/v1/nodes/ahead01")["node"]["state"].startswith("DRAIN")
    _cli(system, "scontrol", "update", "NodeName=ahead01", "State=RESUME")
    system.wait(lambda: system.client.get("/v1/nodes/ahead01")["node"]["state"] == "IDLE", 30,
                "ahead01 back in service")
    pinned = _submit(system, tmp_path, "true", nodelist="ahead01")
    system.wait(lambda: _job(system, pinned)["state"] == "COMPLETED", 60,
                "a job on the resumed node")
    assert _job(system, pinned)["nodes"] == ["ahead01"]

    if auth == "jwt":
        _forged_refusal_is_denied(system, tmp_path)

    # replay re-decides the drain and the requeue from the recorded inbox: the same facts
    reports = verify(system.settings, read_facts(system.settings))
    assert reports and all(not r.divergences for r in reports), [r.lines() for r in reports]
    assert sum(r.checked for r in reports) > 0


def test_a_node_in_service_whose_clock_jumps_400_s_ahead_is_drained_by_its_heartbeats(
    system: LocalSystem, tmp_path: Path,
) -> None:
    """No launch, no report from the node (with munge its credentials would be refused as
    rewound): its heartbeats alone prove the clock, and the health agent has it drained."""
    system.start("worker", "worker", "--loglevel", "info",
                 env={"SLUICE_NODE_TIMEOUT": str(TIMEOUT_S)})
    system.start("projections", "projections")
    system.start_node("n01", 2, 4096)
    jump = tmp_path / "jump"
    _start_skewed_node(system, "ahead01", AHEAD_S, tmp_path, flag=jump)
    system.wait_nodes_idle(2)
    apply_config(system, "SchedulerParameters:\n  requeue_delay: 0\n")
    served = _submit(system, tmp_path, "true", nodelist="ahead01")  # in service on a true clock
    system.wait(lambda: _job(system, served)["state"] == "COMPLETED", 60, "a job on ahead01")
    time.sleep(2 * TIMEOUT_S)
    assert system.client.get("/v1/nodes/ahead01")["node"]["state"] == "IDLE"

    jump.touch()  # its clock jumps 400 s ahead
    jumped = time.monotonic()
    node = system.wait(lambda: (n := system.client.get("/v1/nodes/ahead01")["node"])[
        "state"].startswith("DRAIN") and n, 30, "ahead01 drained by its heartbeats")
    print(f"\nclock jumped {AHEAD_S:.0f} s ahead: drained {time.monotonic() - jumped:.1f} s "
          "later")
    assert node["reason"].startswith("Clock skew: heartbeats "), node
    assert node["reason"].endswith(" s ahead"), node
    assert int(node["reason"].split()[3]) >= AHEAD_S - 5, node  # the lead, in whole seconds
    [drain] = [r.record for r in facts(system.settings, "NodeStateChanged")
               if r.record["name"] == "ahead01" and r.record["state"] == "DRAIN"]
    assert drain["reason"] == node["reason"] and drain["by"] == ""
    assert not list(facts(system.settings, "NodeCommandRefused"))  # without a launch
    [row] = _cli(system, "sinfo", "-R", "-h").splitlines()  # the reason's first 20 characters
    assert row.startswith("Clock skew: heartbea") and row.endswith(" ahead01"), row
    log = (system.settings.home / "logs" / "worker.log").read_text()
    assert log.count("reporting it to be drained") == 1, log  # once for the episode

    # the drained node takes no work: a whole-node job runs on n01
    elsewhere = _submit(system, tmp_path, "true")
    system.wait(lambda: _job(system, elsewhere)["state"] == "COMPLETED", 60, "a job on n01")
    assert _job(system, elsewhere)["nodes"] == ["n01"]

    reports = verify(system.settings, read_facts(system.settings))
    assert reports and all(not r.divergences for r in reports), [r.lines() for r in reports]
    assert sum(r.checked for r in reports) > 0
