"""An administrator's updates end to end with real credentials (``sluice up``: real broker,
munged, node daemons): ``scontrol update JobId=N TimeLimit=…`` of a running job (root raises
it, the owner may only lower it, another user may do neither; the run is killed, TIMEOUT, at
the limit in force, neither at the one it was launched with nor later), ``Priority=`` (root's
orders the queue; ``sprio`` shows it), and ``sdiag``."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.security.test_attacks import UpSystem, up  # noqa: F401 (the module's system)

pytestmark = [pytest.mark.kafka, pytest.mark.e2e, pytest.mark.slow]


def _scontrol(system: UpSystem, job_id: str, value: str, as_user: str = "") -> Any:
    done = system.sluice("scontrol", "update", f"JobId={job_id}", f"TimeLimit={value}",
                         as_user=as_user)
    assert "Traceback" not in done.stderr, done.stderr
    return done


def test_root_raises_the_owner_lowers_and_the_run_times_out_at_the_limit_in_force(
    up: UpSystem,  # noqa: F811 (the fixture imported above)
) -> None:
    submitted = up.sluice("submit", "--parsable", "-t", "0:20", "--", "sleep", "600",
                          as_user="nobody")
    assert submitted.returncode == 0, submitted.stderr
    job_id = submitted.stdout.strip()
    job = up.wait(lambda: (j := up.job(job_id))["state"] == "RUNNING" and j, "job running")
    start_s = job["start_ms"] / 1000

    raised = _scontrol(up, job_id, "0:60")  # root: an administrator may raise it
    assert raised.returncode == 0, raised.stderr
    assert up.job(job_id)["time_limit_s"] == 60

    other = _scontrol(up, job_id, "0:30", as_user="daemon")  # not the owner: not even lower
    assert other.returncode == 1
    assert f"Access/permission denied for job {job_id} (NotOwner" in other.stderr, other.stderr
    assert any(d["detail"].startswith("daemon may not update")
               for d in up.denials("UpdateJob", job["job_sluid"]))

    owner_up = _scontrol(up, job_id, "+1", as_user="nobody")  # the owner may not raise it
    assert owner_up.returncode == 1
    assert f"Access/permission denied for job {job_id} (AccessDenied" in owner_up.stderr
    assert up.job(job_id)["time_limit_s"] == 60

    # past the old limit and the node's own grace (KillWait, 10 s): still running
    time.sleep(max(0.0, start_s + 35 - time.time()))
    assert up.job(job_id)["state"] == "RUNNING"

    lowered = _scontrol(up, job_id, "-0:15", as_user="nobody")  # 60 s - 15 s: 45 s
    assert lowered.returncode == 0, lowered.stderr
    assert up.job(job_id)["time_limit_s"] == 45
    ended = up.wait(lambda: (j := up.job(job_id))["state"] not in ("RUNNING", "COMPLETING")
                    and j, "job ended", timeout_s=60)
    assert ended["state"] == "TIMEOUT", ended
    ran_s = (ended["end_ms"] - ended["start_ms"]) / 1000
    assert 45 <= ran_s < 52, ran_s

    late = _scontrol(up, job_id, "0:10")  # an ended job: nothing to change
    assert late.returncode == 1


def _submitted(system: UpSystem, *argv: str) -> str:
    done = system.sluice("submit", "--parsable", *argv, "--", "sleep", "600", as_user="nobody")
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _update(system: UpSystem, job_id: str, field: str, as_user: str = "") -> Any:
    done = system.sluice("scontrol", "update", f"JobId={job_id}", field, as_user=as_user)
    assert "Traceback" not in done.stderr, done.stderr
    return done


def test_only_an_administrator_sets_a_priority_and_the_scheduler_orders_by_it(
    up: UpSystem,  # noqa: F811 (the fixture imported above)
) -> None:
    blocker = _submitted(up, "-N", "2", "--exclusive")  # both nodes: the others wait
    up.wait(lambda: up.job(blocker)["state"] == "RUNNING", "blocker running")
    first, second = (_submitted(up, "-N", "2", "--exclusive") for _ in range(2))
    up.wait(lambda: up.job(second)["state"] == "PENDING", "jobs queued")

    other = _update(up, second, "Priority=100", as_user="daemon")
    assert other.returncode == 1
    assert f"Access/permission denied for job {second} (NotOwner" in other.stderr, other.stderr
    owner = _update(up, second, "Priority=100", as_user="nobody")
    assert owner.returncode == 1
    assert f"Access/permission denied for job {second} (AccessDenied" in owner.stderr
    bad = _update(up, second, "Priority=high")
    assert bad.returncode == 2 and "Invalid Priority value" in bad.stderr

    done = _update(up, second, "Priority=100")  # root: an administrator
    assert done.returncode == 0, done.stderr
    assert up.job(second)["priority"] == 100
    held = _update(up, first, "Priority=0", as_user="nobody")  # the owner's hold
    assert held.returncode == 0, held.stderr
    assert up.job(first)["reason"] == "JobHeldUser"
    released = up.sluice("scontrol", "release", first, as_user="nobody")
    assert released.returncode == 0, released.stderr
    shown = up.sluice("sprio", "-l", as_user="nobody")  # the shards' own answer
    assert shown.returncode == 0, shown.stderr
    rows = {line.split()[0]: line.split() for line in shown.stdout.splitlines()[1:]}
    assert shown.stdout.split()[:6] == ["JOBID", "PARTITION", "USER", "ACCOUNT", "PRIORITY",
                                        "SITE"], shown.stdout
    # no weights under sluice up: PRIORITY, SITE and NICE end each line (ACCOUNT is empty)
    assert rows[second][-3:] == ["100", "0", "0"], shown.stdout
    assert rows[first][-3:] == ["1", "0", "0"], shown.stdout
    assert blocker not in rows  # running: sprio lists pending jobs

    assert up.sluice("cancel", blocker, as_user="nobody").returncode == 0
    up.wait(lambda: up.job(second)["state"] == "RUNNING", "the prioritised job running")
    assert up.job(first)["state"] == "PENDING"  # submitted first, priority 1: still waiting
    assert up.sluice("cancel", first, second, as_user="nobody").returncode == 0


def test_sdiag_reports_the_jobs_cycles_and_requests_the_system_measured(
    up: UpSystem,  # noqa: F811 (the fixture imported above)
) -> None:
    env = {"SLUICE_WORKER_METRICS": up.env["SLUICE_WORKER_METRICS"]}
    done = up.sluice("sdiag", extra=env)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    submitted = int(out.split("Jobs submitted:")[1].split()[0])
    assert submitted >= 4  # this module's jobs at least
    assert "Last cycle:" in out and "Total cycles:" in out
    rpcs = dict(line.split()[0:2] for line in out.split("by message type\n")[1].splitlines()
                if "count:" in line)
    assert int(rpcs["UpdateJob"].removeprefix("count:")) >= 8
    assert int(rpcs["SubmitJob"].removeprefix("count:")) >= 4
    assert int(rpcs["PlanPriorities"].removeprefix("count:")) >= 1
