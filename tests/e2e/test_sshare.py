"""``sshare`` against a real system (``sluice up`` on the real broker, munge): the configured
account tree, a finished job's usage charged to its user and accounts, Slurm's columns and rows
(the caller's own, ``-a``, ``-A``, ``-U``, ``-l``, ``-P``) and a bad field refused without a
traceback."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest

from tests.e2e.harness import Run, sluice_up_with

pytestmark = [pytest.mark.kafka, pytest.mark.e2e]


CLUSTER = """\
AuthRequired: true
AuthNodeNames: ["node*"]
PriorityWeightFairshare: 1000
PriorityDecayHalfLife: 0
Accounts:
  - Name: physics
    Fairshare: 3
    Users: [root]
  - Name: bio
    Fairshare: 1
    Users: [nobody]
"""


@pytest.fixture(scope="module")
def sluice(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    """``sluice ARGS...`` against one one-node system (2 CPUs) with two accounts."""
    with sluice_up_with(kafka_bootstrap, tmp_path_factory.mktemp("sshare"), "ssh", 1,
                        CLUSTER) as run:
        yield run


def _table(text: str) -> dict[tuple[str, str], list[str]]:
    """``-P`` output by (account, user)."""
    header, *lines = text.splitlines()
    rows = [dict(zip(header.split("|"), line.split("|"), strict=True)) for line in lines]
    return {(r["Account"].strip(), r["User"]): list(r.values()) for r in rows}


def test_a_finished_jobs_usage_is_charged_up_its_account_tree(sluice: Run) -> None:
    me = "root" if os.getuid() == 0 else None
    if me is None:
        pytest.skip("the configured tree names root as physics's user")
    submitted = sluice("submit", "--parsable", "-A", "physics", "-n", "2", "--wrap", "sleep 3")
    assert submitted.returncode == 0, submitted.stdout + submitted.stderr
    job = submitted.stdout.strip()
    deadline = time.monotonic() + 90
    while sluice("history", "-j", job, "-n", "-X", "-o", "State").stdout.strip() != "COMPLETED":
        assert time.monotonic() < deadline, "the job did not complete"
        time.sleep(0.5)

    mine = sluice("sshare", "-P")  # every account, the caller's own user rows
    assert mine.returncode == 0 and mine.stderr == "", mine.stdout + mine.stderr
    rows = _table(mine.stdout)
    assert list(rows) == [("root", ""), ("bio", ""), ("physics", ""), ("physics", "root")]
    header = mine.stdout.splitlines()[0].split("|")
    assert header == ["Account", "User", "RawShares", "NormShares", "RawUsage",
                      "EffectvUsage", "FairShare"]
    used = int(rows[("physics", "root")][4])
    assert 6 <= used <= 12, mine.stdout  # 2 CPUs for ~3 s (start and end as the shard saw them)
    assert rows[("physics", "")][2:5] == ["3", "0.750000", str(used)]
    assert rows[("bio", "")][2:5] == ["1", "0.250000", "0"]
    assert rows[("root", "")][2] == "" and rows[("root", "")][4] == str(used)
    assert rows[("physics", "root")][5] == "1.000000"  # all of physics's usage

    everyone = _table(sluice("sshare", "-a", "-l", "-P").stdout)
    assert ("bio", "nobody") in everyone
    assert everyone[("bio", "nobody")][-1] == "inf"  # LevelFS: used nothing
    assert everyone[("bio", "nobody")][-2] == "1.000000"  # FairShare: bio under-served, first
    assert everyone[("physics", "root")][-2] == "0.500000"

    users_only = sluice("sshare", "-a", "-U", "-A", "bio", "-n")
    assert users_only.stdout.split()[:2] == ["bio", "nobody"], users_only.stdout
    assert len(users_only.stdout.splitlines()) == 1

    bad = sluice("sshare", "-o", "Account,Nope")
    assert bad.returncode == 1 and "Traceback" not in bad.stderr
    assert 'Invalid field requested: "Nope"' in bad.stderr


def test_sacctmgr_shows_the_associations_of_the_configuration_in_force(sluice: Run) -> None:
    found = sluice("sacctmgr", "-nP", "show", "assoc", "where", "user=nobody",
                   "format=account,user,share")
    assert found.returncode == 0 and found.stderr == "", found.stdout + found.stderr
    assert found.stdout.splitlines() == ["bio|nobody|1"]
    accounts = sluice("sacctmgr", "show", "account", "-P")
    assert accounts.stdout.splitlines()[1:] == ["bio|bio|bio", "physics|physics|physics",
                                                "root|root|root"], accounts.stdout
    refused = sluice("sacctmgr", "-i", "add", "user", "dave", "account=bio")
    assert refused.returncode == 1 and "sluice config apply FILE" in refused.stderr
    assert "Traceback" not in refused.stderr
