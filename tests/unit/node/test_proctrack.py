"""A run's every process dies with it: the supervisor, cgroup v2 and run-marker helpers on real
processes (and the real cgroup2 file system where this host gives one)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from agents.node.leftovers import RunRecords, sweep_leftovers
from agents.node.proctrack import CgroupTree, RunScope, detect_cgroups, remove_cgroup
from agents.node.supervised import Supervised
from tests.unit.node.procs import (
    NO_CGROUP,
    alive_with,
    cgroup2_mount,
    token,
    wait_count,
    wait_gone,
)

MakeScope = Callable[[str], RunScope]
_MOUNT = cgroup2_mount()


def _run_sluid() -> str:
    return "sT" + uuid.uuid4().hex[:12].upper()


def _escaper(t: str) -> list[str]:
    """Two background children and an orphan that setsid()s away with an empty environment."""
    return ["sh", "-c", f"( setsid env -i sleep {t} & ) ; sleep {t} & sleep {t} & wait"]


@pytest.fixture(params=["pgid", "cgroup"])
def make_scope(request: pytest.FixtureRequest) -> MakeScope:
    if request.param == "pgid":
        return RunScope
    cgroups: CgroupTree = request.getfixturevalue("tree")

    def in_cgroup(run_sluid: str) -> RunScope:
        assert cgroups.create(run_sluid) is not None
        return cgroups.scope(run_sluid)

    return in_cgroup


def _start(scope: RunScope, argv: list[str], tmp_path: Path) -> Supervised:
    env = {**os.environ, "SLUICE_RUN_SLUID": scope.run_sluid}
    return Supervised.start(scope, argv, env, tmp_path, subprocess.DEVNULL,
                            subprocess.DEVNULL, tmp_path)


def _ended(process: Supervised, timeout_s: float = 10) -> int:
    return process.wait(timeout_s)


def test_a_kill_reaches_grandchildren_and_processes_that_setsid_away(
    make_scope: MakeScope, tmp_path: Path,
) -> None:
    t = token()
    process = _start(make_scope(_run_sluid()), _escaper(t), tmp_path)
    wait_count(t, 3)

    process.signal(signal.SIGTERM)

    assert _ended(process) == -signal.SIGTERM
    assert wait_gone(t, 5) == []


def test_when_the_command_exits_whatever_it_left_running_is_killed(
    make_scope: MakeScope, tmp_path: Path,
) -> None:
    t = token()
    process = _start(make_scope(_run_sluid()), ["sh", "-c", f"sleep {t} & exit 3"], tmp_path)

    assert _ended(process) == 3
    assert alive_with(t) == []


def test_the_exit_status_is_the_commands_own(tmp_path: Path) -> None:
    killed = _start(RunScope(_run_sluid()), ["sh", "-c", "kill -USR1 $$"], tmp_path)
    exited = _start(RunScope(_run_sluid()), ["sh", "-c", "exit 7"], tmp_path)

    assert _ended(killed) == -signal.SIGUSR1
    assert _ended(exited) == 7


def test_a_command_that_cannot_start_raises_the_os_error_the_supervisor_met(
    tmp_path: Path,
) -> None:
    with pytest.raises(FileNotFoundError, match="No such file or directory"):
        _start(RunScope(_run_sluid()), [str(tmp_path / "missing")], tmp_path)
    script = tmp_path / "not-executable"
    script.write_text("#!/bin/sh\n")
    with pytest.raises(PermissionError):
        _start(RunScope(_run_sluid()), [str(script)], tmp_path)


_DAEMON = """
import json, os, subprocess, sys, time
from pathlib import Path
from agents.node.proctrack import RunScope
from agents.node.supervised import Supervised
run, cgroup, name, argv = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
scope = RunScope(run, Path(cgroup) if cgroup else None, name)
env = {**os.environ, "SLUICE_RUN_SLUID": run}
here = Path.cwd()
process = Supervised.start(scope, argv, env, here, subprocess.DEVNULL, subprocess.DEVNULL, here)
print(process.pid, flush=True)
time.sleep(600)
"""


def test_when_the_daemon_is_killed_its_supervisor_kills_the_whole_run_at_once(
    make_scope: MakeScope, tmp_path: Path,
) -> None:
    t = token()
    scope = make_scope(_run_sluid())
    daemon = subprocess.Popen(
        [sys.executable, "-c", _DAEMON, scope.run_sluid, str(scope.cgroup or ""),
         scope.cgroup_name, json.dumps(_escaper(t))],
        cwd=tmp_path, stdout=subprocess.PIPE, start_new_session=True,
    )
    assert daemon.stdout is not None
    supervisor = int(daemon.stdout.readline())
    wait_count(t, 3)
    assert supervisor in alive_with(scope.run_sluid)  # its argv names the run

    daemon.kill()
    daemon.wait(10)

    assert wait_gone(t, 10) == []
    assert wait_gone(scope.run_sluid, 5) == []  # and it is gone too


def test_in_a_cgroup_every_process_of_the_run_is_in_the_runs_cgroup(
    tree: CgroupTree, tmp_path: Path,
) -> None:
    t, run_sluid = token(), _run_sluid()
    assert tree.create(run_sluid) is not None
    scope = tree.scope(run_sluid)
    process = _start(scope, _escaper(t), tmp_path)
    pids = wait_count(t, 3)

    groups = {line for pid in pids for line in Path(f"/proc/{pid}/cgroup").read_text().split()
              if line.startswith("0::")}

    assert groups == {f"0::{scope.cgroup_name}"}
    assert scope.cgroup is not None
    assert set(pids) <= {int(p) for p in (scope.cgroup / "cgroup.procs").read_text().split()}
    process.signal(signal.SIGKILL)
    _ended(process)
    assert wait_gone(t, 5) == []
    assert remove_cgroup(scope.cgroup) and not scope.cgroup.exists()


def test_the_start_sweep_kills_what_recorded_runs_left_behind_and_forgets_them(
    tmp_path: Path,
) -> None:
    t, run_sluid = token(), _run_sluid()
    records = RunRecords(tmp_path)
    records.add(RunScope(run_sluid))
    # An orphan of a run whose supervisor is gone too: found by its marker alone.
    orphan = subprocess.Popen(["sleep", t], env={**os.environ, "SLUICE_RUN_SLUID": run_sluid},
                              start_new_session=True)
    wait_count(t, 1)

    assert sweep_leftovers(records, None, 5) == [run_sluid]

    assert orphan.wait(5) == -signal.SIGKILL
    assert records.scopes() == []


def test_the_start_sweep_empties_and_removes_every_run_cgroup_of_the_node(
    tree: CgroupTree, tmp_path: Path,
) -> None:
    t, run_sluid = token(), _run_sluid()
    cgroup = tree.create(run_sluid)
    assert cgroup is not None
    # No record and no marker: only the cgroup knows this process.
    stray = subprocess.Popen(["sleep", t], env={"PATH": os.environ["PATH"]},
                             start_new_session=True)
    (cgroup / "cgroup.procs").write_text(str(stray.pid))

    assert sweep_leftovers(RunRecords(tmp_path), tree, 5) == [run_sluid]

    assert stray.wait(5) == -signal.SIGKILL
    assert not cgroup.exists()


def test_detection_refuses_a_parent_outside_the_cgroup_mount() -> None:
    if _MOUNT is None:
        pytest.skip(NO_CGROUP)

    found, reason = detect_cgroups("/tmp/not-a-cgroup", "n01")
    escaped, why = detect_cgroups(str(_MOUNT / ".." / "x"), "n01")

    assert found is None and "is not under the cgroup2 mount" in reason
    assert escaped is None and "is not under the cgroup2 mount" in why


def test_a_node_asked_for_cgroups_the_host_does_not_give_refuses_to_start_with_the_reason(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "SLUICE_HOME": str(tmp_path), "KAFKA_BOOTSTRAP": "127.0.0.1:1"}
    argv = [sys.executable, "-m", "cli.main", "node", "--name", "n01", "--cpus", "1",
            "--mem", "64", "--proctrack"]

    refused = subprocess.run([*argv, "cgroup", "--cgroup-parent", str(tmp_path)], env=env,
                             capture_output=True, text=True, timeout=120, check=False)
    unknown = subprocess.run([*argv, "everything"], env=env, capture_output=True, text=True,
                             timeout=120, check=False)

    assert refused.returncode == 2
    assert refused.stderr.startswith("sluice node: cgroup v2 process tracking is not available")
    assert "Traceback" not in refused.stderr
    assert unknown.returncode == 2 and "invalid choice: 'everything'" in unknown.stderr


def test_a_runs_cgroup_is_populated_while_a_process_of_it_lives_even_in_a_sub_cgroup(
    tree: CgroupTree,
) -> None:
    run_sluid = _run_sluid()
    assert tree.create(run_sluid) is not None
    scope = tree.scope(run_sluid)
    assert scope.cgroup is not None
    assert not scope.cgroup_populated()
    sub = scope.cgroup / "step-0"
    sub.mkdir()
    t = token()
    sleeper = subprocess.Popen(["sleep", t])
    try:
        (sub / "cgroup.procs").write_text(str(sleeper.pid))
        assert scope.cgroup_populated()
    finally:
        sleeper.kill()
        sleeper.wait()
    assert not scope.cgroup_populated()
    remove_cgroup(scope.cgroup)
    assert not scope.cgroup_populated()
    assert not RunScope(run_sluid).cgroup_populated()  # no cgroup at all
