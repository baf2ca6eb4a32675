"""An administrator's node commands end to end (real broker, worker, projections, daemons):
``sluice drain``/``resume`` and ``scontrol update NodeName=… State=…`` change the node.

``sluice drain`` once keyed its DrainNode by the node's SLUID where the intake requires the
node's name: every drain was dead-lettered (KeyMismatch) and the command still said nothing
and exited 0 after a 10 s wait."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agents.node.environment import COMPAT_BIN
from tests.e2e.harness import LocalSystem

pytestmark = [pytest.mark.kafka, pytest.mark.e2e, pytest.mark.slow]


def _cli(system: LocalSystem, argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **system.settings.as_env()}
    env["PATH"] = f"{COMPAT_BIN}:{Path(sys.executable).parent}:{env.get('PATH', '')}"
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=120,
                          check=False)


def _node(system: LocalSystem, name: str) -> dict[str, object]:
    return dict(system.client.get(f"/v1/nodes/{name}")["node"])


def test_drain_down_and_resume_change_the_node(system: LocalSystem, tmp_path: Path) -> None:
    system.start_core()
    system.start_nodes(2)
    system.wait_nodes_idle(2)
    sluice = [sys.executable, "-m", "cli.main"]
    done = _cli(system, [*sluice, "drain", "-r", "disk swap", "n01"], tmp_path)
    assert done.returncode == 0, done.stderr + system.log_tail()
    node = _node(system, "n01")
    assert (node["state"], node["reason"]) == ("DRAIN", "disk swap"), node
    assert _node(system, "n02")["state"] == "IDLE"
    done = _cli(system, [*sluice, "resume", "n01"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert _node(system, "n01")["state"] == "IDLE"
    done = _cli(system, ["scontrol", "update", "NodeName=n[01-02]", "State=DOWN",
                         "Reason=power"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert {_node(system, n)["state"] for n in ("n01", "n02")} == {"DOWN"}
    done = _cli(system, ["scontrol", "update", "NodeName=n[01-02]", "State=RESUME"], tmp_path)
    assert done.returncode == 0, done.stderr
    system.wait_nodes_idle(2)
    done = _cli(system, ["scontrol", "update", "NodeName=n01", "State=DRAIN"], tmp_path)
    assert done.returncode == 1 and "specify a reason" in done.stderr, done.stderr
    assert _node(system, "n01")["state"] == "IDLE"
