"""A node of a system with ``AuthRequired`` (``sluice up``) that stops answering comes back when
its daemon answers again: the health agent's ``NodeResponding`` carries no credential (it is
internal, sealed by the worker) and must not be refused as ``Unauthenticated``.

Found by ``kill -STOP`` of a node daemon past the node timeout, then ``kill -CONT``: the node
stayed DOWN for good. The e2e tests of tests/e2e/test_node_return.py run without AuthRequired.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from tests.e2e.ledger import facts
from tests.security.test_attacks import UpSystem
from tests.security.test_attacks import up as up  # noqa: PLC0414 - the module's system

pytestmark = [pytest.mark.kafka, pytest.mark.e2e]


def _state(up: UpSystem, name: str) -> str:
    shown = up.sluice("show", "node", name)
    assert shown.returncode == 0, shown.stderr
    return next(word.split("=", 1)[1] for word in shown.stdout.split() if word.startswith("State="))


def test_a_paused_node_daemon_comes_back_on_a_cluster_requiring_credentials(up: UpSystem) -> None:
    pid = int((up.home / "run" / "node-node02.pid").read_text())
    os.kill(pid, signal.SIGSTOP)
    try:
        up.wait(lambda: _state(up, "node02") == "DOWN*", "node02 DOWN*", timeout_s=60)
    finally:
        os.kill(pid, signal.SIGCONT)
    up.wait(lambda: _state(up, "node02") == "IDLE", "node02 back in service", timeout_s=60)
    refused = [f for f in facts(up.settings, "RequestDenied")
               if f.record["request"] == "NodeResponding"]
    assert refused == []


def test_a_paused_daemon_s_run_is_fenced_before_its_job_can_run_elsewhere(
    up: UpSystem, tmp_path: Path,
) -> None:
    """While the daemon is stopped its supervisor gets no feed on the lifeline: once its lease
    runs out (an expedited job may start elsewhere as soon as the node is DOWN) it kills the
    run itself, not when the daemon resumes (docs/node-daemon.md, "Fencing a cut-off
    daemon": a requeueable job's run would wait the requeue delay more)."""
    from cli.system import AUTH_CONFIG
    from tests.unit.node.procs import alive_with, token

    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(AUTH_CONFIG + "SlurmctldParameters: enable_expedited_requeue\n")
    applied = up.sluice("config", "apply", str(cluster))
    assert applied.returncode == 0, applied.stderr
    t = token()
    submitted = up.sluice("submit", "--parsable", "-w", "node02", "--requeue=expedite", "--",
                          "sleep", t, as_user="nobody")
    assert submitted.returncode == 0, submitted.stderr
    job_id = submitted.stdout.strip()
    up.wait(lambda: up.job(job_id)["state"] == "RUNNING" and alive_with(t), "job running")
    pid = int((up.home / "run" / "node-node02.pid").read_text())
    os.kill(pid, signal.SIGSTOP)
    try:
        up.wait(lambda: _state(up, "node02") == "DOWN*", "node02 DOWN*", timeout_s=60)
        up.wait(lambda: not alive_with(t), "the run fenced while its daemon is stopped",
                timeout_s=30)
        assert _state(up, "node02") == "DOWN*"  # still stopped: the supervisor did it alone
    finally:
        os.kill(pid, signal.SIGCONT)
    # back in service, where the expedited job (-w node02) may start again at once
    up.wait(lambda: _state(up, "node02") in ("IDLE", "MIXED", "ALLOCATED"),
            "node02 back in service", timeout_s=60)
