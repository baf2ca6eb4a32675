"""A run's every process dies with it (issue #11, part 4), on real node daemons: after
``kill -9`` of the daemon, on cancel, time limit and requeue, and on a restart that finds
leftovers. Processes are matched by unique argv tokens (``sleep 6001.<n>``)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import LocalSystem
from tests.e2e.ledger import TEST_USER
from tests.unit.node.procs import alive_with, supervisors_of, token, wait_count, wait_gone

pytestmark = [pytest.mark.kafka, pytest.mark.e2e, pytest.mark.slow]

KILL_WAIT_S = 3  # the harness's --kill-wait


def _escaper(t: str, s: str) -> list[str]:
    """Two background children, and a double fork that setsid()s away (one without env)."""
    return ["sh", "-c", f"sleep {t} & sleep {t} & "
                        f"( setsid sh -c 'env -i sleep {s} & sleep {s}' & ) ; wait"]


def _submit(system: LocalSystem, workdir: Path, command: list[str], **spec: Any) -> str:
    sluid = system.client.sluids.new()
    full = {"user": TEST_USER, "nodes_min": 1, "command": command, "workdir": str(workdir),
            "time_limit_s": 600, **spec}
    system.client.send(sluid, "SubmitJob", {"job_sluid": sluid, "spec": full})
    return sluid


def _job(system: LocalSystem, sluid: str) -> dict[str, Any]:
    return dict(system.client.get(f"/v1/jobs/{sluid}")["job"])


def _running(system: LocalSystem, *tokens: str) -> None:
    for t in tokens:
        wait_count(t, 2, 120)


def _node(system: LocalSystem, name: str, proctrack: str) -> None:
    system.start_node(name, 1, 2048, 0, "--proctrack", proctrack)


@pytest.mark.parametrize("proctrack", ["auto", "pgid"])
def test_after_kill_9_of_its_node_daemon_no_process_of_the_run_is_left(
    system: LocalSystem, tmp_path: Path, proctrack: str,
) -> None:
    system.start_core()
    _node(system, "n01", proctrack)
    system.wait_nodes_idle(1)
    t, s = token(), token()
    _submit(system, tmp_path, _escaper(t, s))
    _running(system, t, s)

    daemon = system.processes.pop("n01")
    os.kill(daemon.pid, signal.SIGKILL)  # the daemon alone, as in the issue
    daemon.wait(10)

    assert wait_gone(t, 10) == []
    assert wait_gone(s, 10) == []
    if proctrack == "auto" and (cgroups := _run_cgroups(system, "n01")):
        system.wait(lambda: not any(p.exists() for p in cgroups), 10, "the run cgroup to go")
        with contextlib.suppress(OSError):
            cgroups[0].parent.rmdir()  # the killed daemon's (empty) node directory


def _run_cgroups(system: LocalSystem, node: str) -> list[Path]:
    """The run cgroups a node daemon made, from its record of runs."""
    runs = system.settings.home / "nodes" / node / "runs"
    paths = [json.loads(p.read_text())["cgroup"] for p in runs.glob("s*")]
    return [Path(p) for p in paths if p]


def test_cancel_time_limit_and_requeue_kill_the_grandchildren_too(
    system: LocalSystem, tmp_path: Path,
) -> None:
    system.start_core()
    for name in ("n01", "n02", "n03"):
        _node(system, name, "auto")
    system.wait_nodes_idle(3)
    tokens = {kind: (token(), token()) for kind in ("cancel", "timeout", "requeue")}
    cancelled = _submit(system, tmp_path, _escaper(*tokens["cancel"]))
    timed = _submit(system, tmp_path, _escaper(*tokens["timeout"]), time_limit_s=4)
    requeued = _submit(system, tmp_path, _escaper(*tokens["requeue"]))
    for pair in tokens.values():
        _running(system, *pair)

    system.client.send(cancelled, "CancelJob", {"job_sluid": cancelled, "user": TEST_USER,
                                                "reason": ""})
    system.client.send(requeued, "RequeueJob", {"job_sluid": requeued, "user": TEST_USER,
                                                "hold": True})
    system.wait(lambda: _job(system, timed)["state"] == "TIMEOUT", 60, "the time limit")

    for kind, pair in tokens.items():
        for t in pair:
            assert wait_gone(t, KILL_WAIT_S + 10) == [], f"{kind}: {alive_with(t)} left"
    assert _job(system, cancelled)["state"] == "CANCELLED"
    system.wait(lambda: _job(system, requeued)["state"] == "PENDING", 30, "the requeue")


def test_a_restarted_daemon_kills_the_leftovers_of_its_runs_before_it_registers(
    system: LocalSystem, tmp_path: Path,
) -> None:
    system.start_core()
    _node(system, "n01", "auto")
    system.wait_nodes_idle(1)
    t, s = token(), token()
    sluid = _submit(system, tmp_path, _escaper(t, s))
    _running(system, t, s)
    run_sluid = system.wait(lambda: _job(system, sluid)["runs"], 30, "the run")[0]["run_sluid"]
    supervisors = supervisors_of(run_sluid)
    assert supervisors

    daemon = system.processes["n01"]
    os.kill(daemon.pid, signal.SIGSTOP)  # the daemon, frozen, sees nothing of what follows
    for pid in supervisors:  # its supervisors die with it, as if all were killed at once
        os.kill(pid, signal.SIGKILL)
    system.kill("n01")
    assert len(alive_with(t)) == 2  # left behind: nothing runs that would kill them
    _node(system, "n01", "auto")

    assert wait_gone(t, 30) == []
    assert wait_gone(s, 5) == []
    log_path = system.settings.home / "logs" / "n01.log"
    system.wait(lambda: log_path.read_text().count("up, commands from partition") == 2, 60,
                "the restarted daemon to register")
    restarted = log_path.read_text().split("process tracking:")[-1]
    swept = restarted.index(f"killed the processes left by earlier runs {run_sluid}")
    assert swept < restarted.index("up, commands from partition")  # before it registers
