"""Launches and kills the API server did not take are run again, but never a launch of a run
its kill has already ended (agents/bridge/daemon.py, ``Bridge._retry``).

A ``LaunchRun`` the API server failed (a restart) waits for the next check (every 2 s). When
the run's ``KillRun`` came in between, with the API server back, the kill ended the run (its
report and epilog sent, the run forgotten); the launch run again after it made the run anew and
bound the gang's pods: pods running for a job Sluice had ended (a cancel), or, after a requeue,
the old run's launch releasing the new run's pods as "requeued"."""

from __future__ import annotations

from typing import Any

from urllib3.exceptions import MaxRetryError

from agents.bridge.daemon import Bridge

RUN = {"job_sluid": "s00000000000J1", "run_sluid": "s00000000000R1", "nodes": ["n1"]}


class Gangs:
    """The gang table's launch and kill, with the API server down until ``up``."""

    def __init__(self) -> None:
        self.up = False
        self.done: list[tuple[str, str, str]] = []

    def _call(self, what: str, node: str, record: dict[str, Any]) -> None:
        if not self.up:
            raise MaxRetryError(None, "/api/v1", "connection refused")  # type: ignore[arg-type]
        self.done.append((what, node, record["run_sluid"]))

    def launch(self, node: str, record: dict[str, Any]) -> None:
        self._call("launch", node, record)

    def kill(self, node: str, record: dict[str, Any]) -> None:
        self._call("kill", node, record)

    def settle_runs(self) -> None:
        return

    def check_waiting(self) -> None:
        return


def bridge() -> tuple[Bridge, Gangs]:
    made = Bridge.__new__(Bridge)
    gangs = Gangs()
    made.gangs = gangs  # type: ignore[assignment]
    made._retry = []
    return made, gangs


def retry(made: Bridge) -> None:
    """What the loop's check does with the commands to run again."""
    again, made._retry = made._retry, []
    for name, node, record in again:
        made._run_command(name, node, record)


def test_a_launch_the_api_server_failed_is_run_again_once_it_answers() -> None:
    made, gangs = bridge()
    made._run_command("LaunchRun", "n1", dict(RUN))
    gangs.up = True
    retry(made)
    assert gangs.done == [("launch", "n1", RUN["run_sluid"])]
    assert made._retry == []


def test_a_kill_that_ended_the_run_voids_its_launch_waiting_to_be_run_again() -> None:
    made, gangs = bridge()
    made._run_command("LaunchRun", "n1", dict(RUN))  # the API server restarts: to run again
    gangs.up = True
    made._run_command("KillRun", "n1", {**RUN, "reason": "CANCELLED"})  # before the check
    retry(made)
    assert gangs.done == [("kill", "n1", RUN["run_sluid"])]


def test_a_kill_that_failed_too_runs_again_after_the_launch() -> None:
    made, gangs = bridge()
    made._run_command("LaunchRun", "n1", dict(RUN))
    made._run_command("KillRun", "n1", {**RUN, "reason": "CANCELLED"})
    gangs.up = True
    retry(made)
    assert gangs.done == [("launch", "n1", RUN["run_sluid"]), ("kill", "n1", RUN["run_sluid"])]


def test_another_runs_launch_still_runs_again_after_a_kill() -> None:
    made, gangs = bridge()
    made._run_command("LaunchRun", "n1", {**RUN, "run_sluid": "s00000000000R2"})
    gangs.up = True
    made._run_command("KillRun", "n1", {**RUN, "reason": "CANCELLED"})
    retry(made)
    assert gangs.done == [("kill", "n1", RUN["run_sluid"]), ("launch", "n1", "s00000000000R2")]
