"""``SignalRun`` on a node (agents.node.signals) on real child processes (no Kafka): the batch
shell alone, or the whole run; once per signal SLUID; never a process that is not the run's."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from agents.node.proctrack import signal_child
from agents.node.runs import RunTable
from agents.node.signals import RunSignals
from agents.node.steps import StepTable
from tests.unit.node.test_runs import _launch

TRAPS = """
trap 'echo batch >> "$D/got"' USR1
sh -c 'trap "echo child >> \\"$D/got\\"" USR1; echo > "$D/child"
        while [ ! -e "$D/stop" ]; do sleep 0.05; done' &
while [ ! -e "$D/child" ]; do sleep 0.02; done
echo > "$D/ready"
while [ ! -e "$D/stop" ]; do sleep 0.05; done
wait
"""


def _wait(predicate: Any, timeout_s: float = 30) -> bool:
    deadline = time.monotonic() + timeout_s
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.02)
    return bool(predicate())


def _got(tmp_path: Path) -> list[str]:
    path = tmp_path / "got"
    return sorted(path.read_text().split()) if path.exists() else []


def _running(tmp_path: Path) -> tuple[RunTable, RunSignals, list[Any]]:
    reports: list[Any] = []

    def report(name: str, _launch: dict[str, Any], fields: dict[str, Any]) -> None:
        reports.append((name, fields))

    table = RunTable("n01", tmp_path, 1.0, report, allow_root=True)
    steps = StepTable("n01", tmp_path, table, report, 1.0)
    launch = _launch(tmp_path, ["sh", "-c", TRAPS])
    launch["env"] = {"D": str(tmp_path)}
    table.launch(launch)
    assert _wait((tmp_path / "ready").exists)
    return table, RunSignals("n01", table, steps), reports


def _command(scope: str, once: str, sig: int = signal.SIGUSR1) -> dict[str, Any]:
    return {"run_sluid": "sRUN", "signal": int(sig), "scope": scope, "signal_sluid": once}


def _end(tmp_path: Path, table: RunTable, reports: list[Any]) -> None:
    (tmp_path / "stop").write_text("")
    assert _wait(lambda: (table.poll(), reports)[1] != [])
    assert reports[0][0] == "ReportJobExit" and reports[0][1]["exit_code"] == 0


def test_batch_signals_the_batch_shell_alone_and_once(tmp_path: Path) -> None:
    table, signals, reports = _running(tmp_path)

    assert signals.deliver(_command("BATCH", "sSIG1")) == 1
    assert _wait(lambda: _got(tmp_path) == ["batch"])
    time.sleep(0.3)
    assert _got(tmp_path) == ["batch"]  # the shell's child was not signalled
    assert signals.deliver(_command("BATCH", "sSIG1")) == 0  # the same signal again: nothing
    _end(tmp_path, table, reports)  # the run was not killed: it ends by itself, exit 0


def test_full_signals_the_shell_and_its_children_and_steps_alone_signals_no_shell(
        tmp_path: Path) -> None:
    table, signals, reports = _running(tmp_path)

    assert signals.deliver(_command("STEPS", "sSIG1")) == 0  # no step runs: nobody
    assert signals.deliver(_command("FULL", "sSIG2")) >= 2
    assert _wait(lambda: _got(tmp_path) == ["batch", "child"])
    _end(tmp_path, table, reports)


def test_a_signal_for_a_run_this_node_does_not_run_or_an_unusable_one_sends_nothing(
        tmp_path: Path) -> None:
    table, signals, reports = _running(tmp_path)
    assert signals.deliver({**_command("FULL", "sSIG3"), "run_sluid": "sOTHER"}) == 0
    assert signals.deliver(_command("FULL", "sSIG4", sig=0)) == 0
    assert signals.deliver(_command("EVERYONE", "sSIG5")) == 0
    assert signals.deliver({**_command("FULL", "sSIG6"), "run_sluid": "../x"}) == 0
    time.sleep(0.2)
    assert _got(tmp_path) == []
    _end(tmp_path, table, reports)


def test_a_signal_for_one_step_reaches_no_batch_shell_whatever_its_scope(tmp_path: Path,
                                                                         ) -> None:
    table, signals, reports = _running(tmp_path)
    for scope in ("FULL", "BATCH", "STEPS"):
        assert signals.deliver({**_command(scope, f"sSIG{scope}"), "step_sluid": "sSTEP"}) == 0
    time.sleep(0.2)
    assert _got(tmp_path) == []  # that step runs nowhere here: nobody got it
    _end(tmp_path, table, reports)


def test_signal_child_hits_only_a_live_child_of_the_parent_it_names() -> None:
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        assert not signal_child(sleeper.pid, 1, signal.SIGTERM)  # not init's child: untouched
        assert not signal_child(1, 0, signal.SIGTERM)
        time.sleep(0.1)
        assert sleeper.poll() is None
        assert signal_child(sleeper.pid, os.getpid(), signal.SIGTERM)
        assert sleeper.wait(5) == -signal.SIGTERM
    finally:
        sleeper.kill()
        sleeper.wait()
