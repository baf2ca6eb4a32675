"""A negative nice is an operator's (Slurm's ``validate_job_create_req`` and ``_update_job``).

A user who could submit with ``--nice=-1000`` or ``scontrol update Nice=-1000`` would jump the
whole queue. Slurm lets a user raise a job's nice (lower its priority) or lower it back to 0,
and refuses anything below 0 from anyone but an operator: at submission ``Invalid nice value``,
at an update ``Access/permission denied``. Here both are a ``RequestDenied`` ``NotOperator``.
"""

from __future__ import annotations

from typing import Any

from scheduler import (
    Identity,
    JobQueued,
    RequestDenied,
    SubmitJob,
    UpdateJob,
)
from scheduler.records import TestSubmitJob as SbatchTestOnly
from tests.unit.core.gwt import given, nodes, queued, spec
from tests.unit.core.test_authz import ALICE, J1, J2, REQUIRED, ROOT
from tests.unit.core.test_authz import as_ as attributed

OLGA = Identity(user="olga", kind="jwt")
ADA = Identity(user="ada", kind="jwt")
LEGACY = "Operators: [olga]\n"


def as_(identity: Identity, request: Any) -> Any:  # Scenario.when takes it as any request
    return attributed(identity, request)


def _submit(nice: int, user: str = "alice") -> SubmitJob:
    return SubmitJob(job_sluid=J2, spec=spec(user=user, nice=nice))


def _update(nice: str, user: str = "") -> UpdateJob:
    return UpdateJob(job_sluid=J1, changes={"nice": nice}, user=user)


def _pending(config: str) -> Any:
    return given(nodes("n", 1), queued(J1, spec(nice=100)), config=config)


def test_a_user_may_not_submit_with_a_negative_nice() -> None:
    facts = given(config=REQUIRED).when(as_(ALICE, _submit(-1000))).facts

    assert len(facts) == 1 and isinstance(facts[0], RequestDenied), facts
    assert (facts[0].reason, facts[0].requester) == ("NotOperator", "alice")
    assert "negative nice (-1000)" in facts[0].detail


def test_a_user_may_submit_with_a_positive_or_zero_nice() -> None:
    for nice in (0, 500):
        facts = given(config=REQUIRED).when(as_(ALICE, _submit(nice))).facts
        assert isinstance(facts[0], JobQueued) and facts[0].spec.nice == nice, facts


def test_operators_and_administrators_may_submit_with_a_negative_nice() -> None:
    for who in (OLGA, ADA, ROOT):
        facts = given(config=REQUIRED).when(as_(who, _submit(-50, user=who.user))).facts
        assert isinstance(facts[0], JobQueued) and facts[0].spec.nice == -50, (who, facts)


def test_an_administrator_submitting_for_a_user_may_give_a_negative_nice() -> None:
    """Slurm checks the submitting uid (root under ``sbatch --uid``)."""
    facts = given(config=REQUIRED).when(as_(ADA, _submit(-50, user="alice"))).facts
    assert isinstance(facts[0], JobQueued) and facts[0].spec.nice == -50, facts


def test_a_submit_for_user_such_as_the_bridge_may_not_give_a_negative_nice() -> None:
    """A pod's annotation must not buy its owner a place ahead of everyone."""
    config = REQUIRED + "SubmitFor:\n  bridge: [alice]\n"
    bridge = Identity(user="bridge", kind="jwt")
    facts = given(config=config).when(as_(bridge, _submit(-50, user="alice"))).facts
    assert isinstance(facts[0], RequestDenied) and facts[0].reason == "NotOperator", facts


def test_a_test_submission_is_refused_the_same_way() -> None:
    test = SbatchTestOnly(job_sluid=J2, spec=spec(nice=-1))
    facts = given(nodes("n", 1), config=REQUIRED).when(as_(ALICE, test)).facts
    assert isinstance(facts[0], RequestDenied) and facts[0].reason == "NotOperator", facts


def test_a_user_may_raise_the_nice_of_a_job_or_lower_it_to_zero_but_not_below() -> None:
    for nice, changed in (("200", True), ("0", True), ("-1", False), (" -7 ", False)):
        facts = _pending(REQUIRED).when(as_(ALICE, _update(nice))).facts
        if changed:
            assert isinstance(facts[0], JobQueued) and facts[0].spec.nice == int(nice), facts
        else:
            assert isinstance(facts[0], RequestDenied), (nice, facts)
            assert facts[0].reason == "NotOperator"


def test_an_operator_may_give_a_users_job_a_negative_nice() -> None:
    facts = _pending(REQUIRED).when(as_(OLGA, _update("-300"))).facts
    assert isinstance(facts[0], JobQueued) and facts[0].spec.nice == -300, facts


def test_a_nice_that_is_no_number_is_left_to_the_update_s_own_refusal() -> None:
    facts = _pending(REQUIRED).when(as_(ALICE, _update("-banana"))).facts
    assert facts[0].reason == "InvalidUpdate", facts


def test_without_a_credential_the_records_user_decides_as_every_legacy_rule() -> None:
    refused = given(config=LEGACY).when(_submit(-5)).facts
    assert isinstance(refused[0], RequestDenied) and refused[0].reason == "NotOperator"
    for user in ("olga", "root"):
        facts = given(config=LEGACY).when(_submit(-5, user=user)).facts
        assert isinstance(facts[0], JobQueued), (user, facts)
    update = _pending(LEGACY).when(_update("-5", user="alice")).facts
    assert isinstance(update[0], RequestDenied) and update[0].reason == "NotOperator"
    agent = _pending(LEGACY).when(_update("-5")).facts  # no user: an agent's, as handlers read
    assert isinstance(agent[0], JobQueued) and agent[0].spec.nice == -5, agent
