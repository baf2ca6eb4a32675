"""An administrator's maintenance window end to end (real broker, worker, projections, node
daemons, the scontrol/sbatch/sinfo commands): a reservation of one node; a job outside it runs
around it and another waits rather than run into the window; a job of the reservation runs
inside it, on its node; the window shows in sinfo and scontrol; deleting it frees the node and
holds the job of it that never started (RESV_DEL_HOLD) until its user releases it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agents.node.environment import COMPAT_BIN
from tests.e2e.harness import LocalSystem

pytestmark = [pytest.mark.kafka, pytest.mark.e2e, pytest.mark.slow]

START_IN_S = 40


def _cli(system: LocalSystem, argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **system.settings.as_env()}
    env["PATH"] = f"{COMPAT_BIN}:{Path(sys.executable).parent}:{env.get('PATH', '')}"
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=120,
                          check=False)


def _submit(system: LocalSystem, cwd: Path, *argv: str) -> str:
    done = _cli(system, ["sbatch", "--parsable", *argv], cwd)
    assert done.returncode == 0, done.stderr + system.log_tail()
    return done.stdout.strip().split(";")[0]


def _job(system: LocalSystem, job_id: str) -> dict[str, object]:
    return dict(system.client.job(job_id))


def test_a_maintenance_window_end_to_end(system: LocalSystem, tmp_path: Path) -> None:
    system.start_core()
    system.start_nodes(2)
    system.wait_nodes_idle(2)
    created = _cli(system, ["scontrol", "create", "reservation", "ReservationName=maint",
                            f"StartTime=now+{START_IN_S}", "Duration=10", "Nodes=n01",
                            "Users=root", "Flags=MAINT"], tmp_path)
    assert created.returncode == 0, created.stderr + system.log_tail()
    assert created.stdout.strip() == "Reservation created: maint"
    begins = time.monotonic() + START_IN_S
    again = _cli(system, ["scontrol", "create", "reservation", "ReservationName=maint",
                          "StartTime=now", "Duration=10", "Nodes=n02", "Users=root"], tmp_path)
    assert again.returncode == 1
    assert again.stderr.startswith("Error creating the reservation: Duplicate reservation name")
    # outside the reservation: a 10-minute job would run into the window on n01, so it runs
    # on n02 (whole node); the next one waits rather than take n01
    around = _submit(system, tmp_path, "--exclusive", "--time=10", "--wrap", "sleep 300")
    system.wait(lambda: _job(system, around)["state"] == "RUNNING", 60, "the job outside")
    assert _job(system, around)["nodes"] == ["n02"]
    waits = _submit(system, tmp_path, "--exclusive", "--time=10", "--wrap", "sleep 300")
    inside = _submit(system, tmp_path, "--reservation=maint", "--time=1", "--wrap", "true")
    # two nodes from a reservation of one: it never fits; the delete holds it (below)
    stuck = _submit(system, tmp_path, "--reservation=maint", "-N", "2", "--time=1", "--wrap",
                    "true")
    refused = _cli(system, ["sbatch", "--reservation=nope", "--wrap", "true"], tmp_path)
    assert refused.returncode != 0
    assert "Requested reservation is invalid" in refused.stderr, refused.stderr
    seen = system.wait(lambda: _job(system, inside)["reason"] == "Reservation"
                       or _job(system, inside)["state"] != "PENDING", 30,
                       "the reservation's job waiting for the window")
    if _job(system, inside)["state"] != "PENDING":  # a loaded machine: the window has begun
        assert time.monotonic() >= begins - 2, seen
    assert _job(system, waits)["state"] == "PENDING"
    updated = _cli(system, ["scontrol", "update", "ReservationName=maint", "Duration=12"],
                   tmp_path)
    assert updated.stdout.strip() == "Reservation updated.", updated.stderr
    added = _cli(system, ["scontrol", "update", "ReservationName=maint", "Users+=daemon"],
                 tmp_path)
    assert added.stdout.strip() == "Reservation updated.", added.stderr
    shown = _cli(system, ["scontrol", "show", "reservation", "maint"], tmp_path)
    assert "State=INACTIVE" in shown.stdout and "Nodes=n01 NodeCnt=1" in shown.stdout, shown
    assert "Duration=00:12:00" in shown.stdout, shown.stdout
    assert "Users=root,daemon " in shown.stdout, shown.stdout
    # inside the window: the reservation's job runs there, on its node; the other still waits
    system.wait(lambda: _job(system, inside)["state"] == "COMPLETED", START_IN_S + 60,
                "the reservation's job")
    assert time.monotonic() >= begins - 2  # not before the window (2 s of clock slack)
    assert _job(system, inside)["nodes"] == ["n01"]
    assert _job(system, waits)["state"] == "PENDING"
    assert "State=ACTIVE" in _cli(system, ["scontrol", "show", "reservations"], tmp_path).stdout
    listed = _cli(system, ["sinfo", "-T"], tmp_path).stdout.splitlines()
    assert listed[1].split()[:2] == ["maint", "ACTIVE"] and listed[1].split()[-1] == "n01"
    node = _cli(system, ["sinfo", "-N", "-n", "n01", "-h", "-o", "%N %t"], tmp_path).stdout
    assert node.split() == ["n01", "maint"], node
    assert "State=IDLE+MAINT" in _cli(system, ["scontrol", "show", "node", "n01"],
                                      tmp_path).stdout
    deleted = _cli(system, ["scontrol", "delete", "ReservationName=maint"], tmp_path)
    assert deleted.returncode == 0 and deleted.stdout == "", deleted.stderr
    system.wait(lambda: _job(system, waits)["state"] == "RUNNING", 60, "the waiting job")
    assert _job(system, waits)["nodes"] == ["n01"]
    assert _cli(system, ["scontrol", "show", "reservation"], tmp_path).stdout.strip() == (
        "No reservations in the system")
    # the reservation's job that never fitted is held (Slurm's RESV_DEL_HOLD) until released
    system.wait(lambda: _job(system, stuck)["reason"] == "ReservationDeleted", 30,
                "the deleted reservation's job held")
    listed = _cli(system, ["squeue", "-h", "-j", stuck, "-o", "%t %r %Q"], tmp_path).stdout
    assert listed.split() == ["RD", "ReservationDeleted", "0"], listed
    released = _cli(system, ["scontrol", "release", stuck], tmp_path)
    assert released.returncode == 0, released.stderr
    system.wait(lambda: _job(system, stuck)["reason"] != "ReservationDeleted", 30,
                "the release")
    assert _job(system, stuck)["reservation"] == "" and _job(system, stuck)["flags"] == []
    for job in (around, waits):
        _cli(system, ["scancel", job], tmp_path)
    # released, it runs anywhere: on both nodes once the others are gone
    system.wait(lambda: _job(system, stuck)["state"] == "COMPLETED", 60, "the released job")
    assert sorted(_job(system, stuck)["nodes"]) == ["n01", "n02"]
