"""``scontrol update JobId=N AdminComment=… / Extra=…``: Slurm keeps both and changes them while
the job runs too; ``AdminComment`` is an administrator's (``validate_slurm_user``), ``Extra`` the
owner's as well. Before, neither was a job field (``sluice update`` refused the words, the core
``'extra' is not a job field``)."""

from __future__ import annotations

from typing import Any

from scheduler import Identity, JobQueued, RequestDenied, UpdateJob, evolve
from scheduler.records import JobDetailsChanged
from tests.unit.core.gwt import given, nodes, queued, sluid, spec, started
from tests.unit.core.test_authz import ALICE, REQUIRED
from tests.unit.core.test_authz import as_ as attributed

J1 = sluid(1)
ADA = Identity(user="ada", kind="jwt")  # REQUIRED's administrator
OLGA = Identity(user="olga", kind="jwt")  # its operator


def _running() -> Any:
    return given(nodes("n", 2), queued(J1, spec()), started(J1, ("n1",), 600, 1),
                 config=REQUIRED)


def _update(**changes: str) -> UpdateJob:
    return UpdateJob(job_sluid=J1, changes=changes)


def test_an_administrator_sets_a_running_jobs_admin_comment_and_the_owner_its_extra() -> None:
    scenario = _running()
    [fact] = scenario.when(attributed(ADA, _update(admin_comment="checked"))).facts
    assert isinstance(fact, JobDetailsChanged), fact
    assert (fact.admin_comment, fact.changed) == ("checked", ("admin_comment",))
    state = evolve(scenario.state, fact)
    assert state.jobs[J1].spec.admin_comment == "checked" and state.jobs[J1].is_running
    [extra] = given(nodes("n", 2), queued(J1, spec()), started(J1, ("n1",), 600, 1),
                    config=REQUIRED).when(attributed(ALICE, _update(extra="k=v"))).facts
    assert isinstance(extra, JobDetailsChanged) and extra.extra == "k=v", extra
    assert evolve(scenario.state, extra).jobs[J1].spec.extra == "k=v"


def test_only_an_administrator_sets_admin_comment() -> None:
    for who in (ALICE, OLGA):
        [denied] = _running().when(attributed(who, _update(admin_comment="x"))).facts
        assert isinstance(denied, RequestDenied) and denied.reason == "NotAdministrator", denied


def test_a_pending_jobs_extra_changes_too() -> None:
    scenario = given(nodes("n", 1), queued(J1, spec()), config=REQUIRED)
    [fact] = scenario.when(attributed(ALICE, _update(extra="tag"))).facts
    assert isinstance(fact, JobQueued) and fact.spec.extra == "tag", fact
