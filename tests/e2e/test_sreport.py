"""``sreport`` against a real system (``sluice up`` on the real broker): jobs run (one of two
accounts, an array, one on a node drained meanwhile), then sreport's numbers are checked
against the runs sacct's JSON shows (CPUs times seconds inside the window sreport prints) and
against each other (Allocated + Down + Idle = Reported), in Slurm's columns."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest

from tests.e2e.harness import Run, sluice_up_with

pytestmark = [pytest.mark.kafka, pytest.mark.e2e]


CLUSTER = """\
AuthRequired: true
AuthNodeNames: ["node*"]
Accounts:
  - Name: physics
    Users: [root]
  - Name: bio
    Users: [root, nobody]
"""


@pytest.fixture(scope="module")
def sluice(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    """``sluice ARGS...`` against one two-node system (2 CPUs each) with two accounts."""
    with sluice_up_with(kafka_bootstrap, tmp_path_factory.mktemp("sreport"), "srp", 2,
                        CLUSTER) as run:
        yield run


def _wait_done(sluice: Run, jobs: list[str]) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 120
    while True:
        rows = json.loads(sluice("history", "-a", "--json", "-S", "now-1hour").stdout)["jobs"]
        mine = [j for j in rows if str(j["job_id"]) in jobs
                or str(j.get("array_job_id")) in jobs]
        if mine and all(j["state"] == "COMPLETED" for j in mine) and len(mine) >= len(jobs):
            return rows
        assert time.monotonic() < deadline, rows
        time.sleep(0.5)


def _banner_window(text: str) -> tuple[int, int]:
    """The window sreport's second banner line names, in Unix ms (its end is the last second)."""
    words = text.splitlines()[1].split()
    first = next(i for i, w in enumerate(words) if w == "-")
    start = datetime.fromisoformat(words[first - 1]).astimezone()
    last = datetime.fromisoformat(words[first + 1]).astimezone()
    return int(start.timestamp() * 1000), int(last.timestamp() * 1000) + 1000


def _cpu_ms(jobs: list[dict[str, Any]], start: int, end: int) -> dict[str, int]:
    """CPU-ms by account of every run inside ``[start, end)``, from sacct's JSON rows."""
    used: dict[str, int] = {}
    for job in jobs:
        for run in job.get("runs") or []:
            cpus = sum(share[0] for share in (job.get("alloc") or {}).values())
            begin, finish = int(run["start_ms"]), int(run["end_ms"])
            part = max(0, min(finish, end) - max(begin, start))
            used[job["account"]] = used.get(job["account"], 0) + cpus * part
    return used


def _table(text: str) -> list[dict[str, str]]:
    header, *lines = text.splitlines()[4:]  # after the banner
    return [dict(zip(header.split("|"), line.split("|"), strict=True)) for line in lines]


def test_sreport_charges_each_account_the_cpu_time_its_runs_held(sluice: Run) -> None:
    hour = datetime.now().astimezone().replace(minute=0, second=0, microsecond=0)
    start = f"start={hour:%Y-%m-%dT%H:%M:%S}"
    one = sluice("submit", "--parsable", "-A", "physics", "-n", "2", "--wrap", "sleep 3")
    arr = sluice("submit", "--parsable", "-A", "bio", "--array", "0-1", "-n", "1",
                 "--wrap", "sleep 2")
    assert one.returncode == 0 and arr.returncode == 0, one.stderr + arr.stderr
    nodes = json.loads(sluice("show", "node", "--json").stdout)
    spare = sorted(n["name"] for n in nodes)[-1]
    drained = sluice("drain", spare, "--reason", "sreport test")
    assert drained.returncode == 0, drained.stderr
    jobs = [j for j in _wait_done(sluice, [one.stdout.strip(), arr.stdout.strip()])
            if j["account"] in ("physics", "bio")]
    time.sleep(2)
    assert sluice("resume", spare).returncode == 0

    by_assoc = sluice("sreport", "-P", "-t", "seconds", "cluster", "AccountUtilizationByUser",
                      start, "end=now")
    assert by_assoc.returncode == 0 and by_assoc.stderr == "", by_assoc.stdout + by_assoc.stderr
    assert by_assoc.stdout.splitlines()[2] == "Usage reported in CPU Seconds"
    window = _banner_window(by_assoc.stdout)
    expected = _cpu_ms(jobs, *window)
    rows = {(r["Account"], r["Login"]): r for r in _table(by_assoc.stdout)}
    assert list(rows)[:1] == [("root", "")]
    assert int(rows[("physics", "root")]["Used"]) == expected["physics"] // 1000
    assert int(rows[("bio", "")]["Used"]) == expected["bio"] // 1000
    assert expected["physics"] >= 2 * 3000 and expected["bio"] >= 2 * 2000
    assert ("bio", "nobody") not in rows  # no usage, no row (sreport's)
    assert set(rows[("physics", "root")]) == {"Cluster", "Account", "Login", "Proper Name",
                                              "Used", "Energy"}

    util = sluice("sreport", "-P", "-t", "seconds", "cluster", "utilization", start, "end=now")
    assert util.returncode == 0, util.stderr
    (line,) = _table(util.stdout)
    assert list(line) == ["Cluster", "Allocated", "Down", "PLND Down", "Idle", "Planned",
                          "Reported"]
    amounts = {k: int(v) for k, v in line.items() if k != "Cluster"}
    allocated_s = sum(_cpu_ms(json.loads(sluice("history", "-a", "--json", "-S", "now-1hour")
                                         .stdout)["jobs"], *window).values()) // 1000
    assert abs(amounts["Allocated"] - allocated_s) <= 1  # sums of ms, floored once
    assert amounts["Down"] >= 2 * 2  # the spare node's 2 CPUs, drained 2 s and more
    assert amounts["Allocated"] + amounts["Down"] + amounts["Idle"] == amounts["Reported"]
    assert amounts["Reported"] <= 4 * (window[1] - window[0]) // 1000

    top = sluice("sreport", "-P", "user", "topusage", start, "end=now", "-t", "seconds",
                 "format=Login,Account,Used")
    assert _table(top.stdout)[0] == {"Login": "root", "Account": "physics",
                                     "Used": str(expected["physics"] // 1000)}

    sizes = sluice("sreport", "-P", "job", "sizesbyaccount", start, "end=now", "PrintJobCount")
    counted = {r["Account"]: r for r in _table(sizes.stdout)}
    assert counted["physics"]["0-49 CPUs"] == "1" and counted["bio"]["0-49 CPUs"] == "2"

    bad = sluice("sreport", "cluster", "wckeyutilizationbyuser")
    assert bad.returncode == 1 and "Traceback" not in bad.stderr and "WCKeys" in bad.stderr
