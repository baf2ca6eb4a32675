"""Authorization in the core (scheduler/access/authz.py): who may do what, given facts / when
request."""

from __future__ import annotations

from typing import Any

from scheduler import (
    ApplyConfig,
    Attributed,
    CancelJob,
    DrainNode,
    HoldJob,
    Identity,
    JobQueued,
    NodeResponding,
    RegisterNode,
    ReportJobExit,
    RequestDenied,
    RunKillRequested,
    SubmitJob,
    Tick,
    UpdateJob,
)
from tests.unit.core.gwt import T0, given, nodes, queued, schedule_pass, sluid, spec

J1, J2 = sluid(1), sluid(2)
ALICE = Identity(user="alice", uid=1001, gid=1001, kind="munge")
BOB = Identity(user="bob", uid=1002, gid=1002, kind="munge")
ROOT = Identity(user="root", uid=0, gid=0, kind="munge", service=True)
REQUIRED = "AuthRequired: true\nOperators: [olga]\nAdministrators: [ada]\nAuthNodeNames: ['n*']\n"


def as_(identity: Identity, request: Any) -> Attributed:
    return Attributed(request=request, identity=identity)


def denial(facts: list[Any]) -> RequestDenied:
    assert len(facts) == 1 and isinstance(facts[0], RequestDenied), facts
    return facts[0]


def running_job(config: str = REQUIRED) -> Any:
    """alice's job J1 running on n1 (state after one scheduling pass)."""
    scenario = given(nodes("n", 2), queued(J1), config=config)
    for fact in scenario.when(schedule_pass()).facts:
        from scheduler import evolve

        scenario.state = evolve(scenario.state, fact)
    return scenario


def test_a_user_cannot_cancel_another_users_job_and_the_refusal_names_both() -> None:
    refused = denial(running_job().when(as_(BOB, CancelJob(job_sluid=J1))).facts)
    assert (refused.request, refused.reason, refused.requester) == ("CancelJob", "NotOwner", "bob")
    assert refused.subject_sluid == J1


def test_the_owner_and_an_operator_may_cancel() -> None:
    for who in (ALICE, Identity(user="olga", kind="jwt"), ROOT):
        facts = running_job().when(as_(who, CancelJob(job_sluid=J1))).facts
        assert [type(f) for f in facts] == [RunKillRequested], who


def test_the_records_own_user_field_is_not_trusted() -> None:
    refused = denial(running_job().when(as_(BOB, CancelJob(job_sluid=J1, user="alice"))).facts)
    assert refused.reason == "UserMismatch"


def test_without_a_credential_a_required_cluster_refuses_and_changes_nothing() -> None:
    refused = denial(running_job().when(CancelJob(job_sluid=J1, user="alice")).facts)
    assert refused.reason == "Unauthenticated" and refused.requester == ""


def test_a_request_about_a_job_this_shard_lacks_is_left_to_the_shard_that_has_it() -> None:
    assert running_job().when(CancelJob(job_sluid=J2)).facts == []


def test_a_submission_is_owned_by_the_verified_user() -> None:
    facts = given(config=REQUIRED).when(as_(BOB, SubmitJob(job_sluid=J2, spec=spec(user="")))).facts
    assert isinstance(facts[0], JobQueued) and facts[0].spec.user == "bob"
    lied = given(config=REQUIRED).when(as_(BOB, SubmitJob(job_sluid=J2, spec=spec()))).facts
    assert denial(lied).reason == "UserMismatch"


def test_an_operator_may_not_submit_for_another_user() -> None:
    olga = Identity(user="olga", kind="jwt")
    facts = given(config=REQUIRED).when(as_(olga, SubmitJob(job_sluid=J2, spec=spec()))).facts
    assert denial(facts).reason == "UserMismatch"


def test_an_administrator_submits_for_a_user_and_the_fact_names_who_did() -> None:
    """Slurm's ``sbatch --uid`` (root only there): the job is the named user's, the JobQueued
    records the administrator; whatever submitter the record carried is replaced."""
    for who in (Identity(user="ada", kind="jwt"), ROOT):
        request = SubmitJob(job_sluid=J2, spec=spec(user="alice"), submitter="mallory")
        facts = given(config=REQUIRED).when(as_(who, request)).facts
        assert isinstance(facts[0], JobQueued), facts
        assert (facts[0].spec.user, facts[0].submitter) == ("alice", who.user)


def test_a_user_submit_for_lists_may_submit_for_those_users_only() -> None:
    config = REQUIRED + "SubmitFor:\n  bridge: [alice, 'ml-*']\n"
    bridge = Identity(user="bridge", kind="jwt")
    for user in ("alice", "ml-vision"):
        facts = given(config=config).when(as_(bridge, SubmitJob(
            job_sluid=J2, spec=spec(user=user)))).facts
        assert isinstance(facts[0], JobQueued), facts
        assert (facts[0].spec.user, facts[0].submitter) == (user, "bridge")
    for user in ("bob", "root"):
        refused = given(config=config).when(as_(bridge, SubmitJob(
            job_sluid=J2, spec=spec(user=user)))).facts
        assert denial(refused).reason == "UserMismatch", user
    bob = given(config=config).when(as_(BOB, SubmitJob(job_sluid=J2, spec=spec()))).facts
    assert denial(bob).reason == "UserMismatch"  # the list is bridge's, not everyone's


def test_a_user_submit_for_lists_may_cancel_those_users_jobs_and_do_nothing_else() -> None:
    """The bridge cancels the job of a gang whose pods were deleted; it holds no other power
    over the job, and none over jobs of users it may not submit for."""
    bridge = Identity(user="bridge", kind="jwt")
    listed = running_job(REQUIRED + "SubmitFor:\n  bridge: [alice]\n")
    facts = listed.when(as_(bridge, CancelJob(job_sluid=J1, reason="pods deleted"))).facts
    assert [type(f) for f in facts] == [RunKillRequested], facts
    assert denial(listed.when(as_(bridge, HoldJob(job_sluid=J1))).facts).reason == "NotOwner"
    unlisted = running_job(REQUIRED + "SubmitFor:\n  bridge: [bob]\n")
    refused = denial(unlisted.when(as_(bridge, CancelJob(job_sluid=J1))).facts)
    assert (refused.reason, refused.requester) == ("NotOwner", "bridge")


def test_a_users_own_submission_names_no_submitter() -> None:
    for who, user in ((ALICE, "alice"), (ROOT, ""), (ROOT, "root")):
        request = SubmitJob(job_sluid=J2, spec=spec(user=user), submitter="mallory")
        facts = given(config=REQUIRED).when(as_(who, request)).facts
        assert isinstance(facts[0], JobQueued), facts
        assert (facts[0].spec.user, facts[0].submitter) == (who.user, "")


def test_without_a_credential_no_submitter_is_recorded() -> None:
    request = SubmitJob(job_sluid=J2, spec=spec(user="alice"), submitter="ada")
    facts = given().when(request).facts  # AuthRequired off: the legacy rules
    assert isinstance(facts[0], JobQueued) and facts[0].submitter == ""


def test_nobody_changes_a_jobs_command_after_submission_not_even_root() -> None:
    change = UpdateJob(job_sluid=J1, changes={"command": '["sh", "-c", "evil"]'})
    scenario = given(queued(J1), config=REQUIRED)
    assert denial(scenario.when(as_(ROOT, change)).facts).reason == "CommandImmutable"
    assert denial(scenario.when(as_(ALICE, change)).facts).reason == "CommandImmutable"


def test_nobody_replaces_a_jobs_sealed_environment_or_script_not_even_an_operator() -> None:
    """A box anyone can seal to the nodes' key for the job's user: an operator who could put one
    in a user's pending job (``LD_PRELOAD``) would run code as that user (red team 2026-12-07)."""
    olga = Identity(user="olga", kind="jwt")
    scenario = given(queued(J1), config=REQUIRED)
    for field in ("sealed_env", "script"):
        change = UpdateJob(job_sluid=J1, changes={field: "AAAA"})
        for who in (olga, ROOT, ALICE):
            assert denial(scenario.when(as_(who, change)).facts).reason == "CommandImmutable"
    legacy = given(queued(J1)).when(UpdateJob(job_sluid=J1, changes={"sealed_env": "AAAA"}))
    assert [f.reason for f in legacy.facts] == ["InvalidUpdate"]  # no credential: the handler's


def test_an_admin_hold_needs_an_operator() -> None:
    scenario = given(queued(J1), config=REQUIRED)
    assert denial(scenario.when(as_(ALICE, HoldJob(job_sluid=J1, admin=True))).facts).reason == (
        "NotOperator")


def test_apply_config_needs_an_administrator_and_an_operator_is_not_one() -> None:
    apply = ApplyConfig(config_sluid=J2, kind="cluster", text="Operators: [mallory]\n")
    scenario = given(config=REQUIRED)
    for who in (ALICE, Identity(user="olga", kind="munge")):
        assert denial(scenario.when(as_(who, apply)).facts).reason == "NotAdministrator"
    assert denial(scenario.when(apply).facts).reason == "Unauthenticated"
    for who in (ROOT, Identity(user="ada", kind="jwt")):
        assert scenario.when(as_(who, apply)).facts[0].__class__.__name__ == "ConfigApplied"


def test_the_first_configuration_of_an_empty_cluster_comes_from_root_or_the_service_user() -> None:
    apply = ApplyConfig(config_sluid=J2, kind="cluster", text=REQUIRED)
    assert denial(given().when(as_(ALICE, apply)).facts).reason == "NotAdministrator"
    assert given().when(as_(ROOT, apply)).facts[0].__class__.__name__ == "ConfigApplied"


def test_drain_needs_an_operator() -> None:
    scenario = given(nodes("n", 1), config=REQUIRED)
    refused = denial(scenario.when(as_(ALICE, DrainNode(name="n1", reason="x"))).facts)
    assert refused.reason == "NotOperator" and refused.subject_sluid


def test_a_drain_names_the_verified_operator_not_the_record_s_claim() -> None:
    olga = Identity(user="olga", uid=1003, gid=1003, kind="munge")
    scenario = given(nodes("n", 2), config=REQUIRED)
    [drained] = scenario.when(as_(olga, DrainNode(name="n1", reason="fan", by="mallory"))).facts
    assert (drained.state, drained.reason, drained.by) == ("DRAIN", "fan", "olga")
    down = scenario.when(as_(ROOT, DrainNode(name="n2", reason="psu", down=True))).facts
    assert (down[0].state, down[0].reason, down[0].by) == ("DOWN", "psu", "root")


def test_a_node_registers_only_with_a_node_credential_and_a_listed_name() -> None:
    def register(name: str) -> RegisterNode:
        return RegisterNode(node_sluid=sluid(9), name=name, cpus=4, mem_mb=1024)

    scenario = given(config=REQUIRED)
    assert denial(scenario.when(as_(ALICE, register("n9"))).facts).reason == "NotNodeCredential"
    assert denial(scenario.when(as_(ROOT, register("evil"))).facts).reason == "NodeNotListed"
    node_jwt = Identity(user="sluice", kind="jwt", node="n8")
    assert denial(scenario.when(as_(node_jwt, register("n9"))).facts).reason == (
        "NotNodeCredential")
    assert scenario.when(as_(node_jwt, register("n8"))).facts[0].__class__.__name__ == (
        "NodeRegistered")


def test_an_exit_report_is_accepted_only_from_a_node_of_the_run() -> None:
    scenario = running_job()
    job = scenario.state.jobs[J1]
    report = ReportJobExit(job_sluid=J1, run_sluid=job.run_sluid, node_sluid=job.node_sluids[0],
                           node_name=job.nodes[0], exit_code=0)
    assert denial(scenario.when(as_(ALICE, report)).facts).reason == "NotNodeCredential"
    other = Identity(user="sluice", kind="jwt", node="n2" if job.nodes[0] == "n1" else "n1")
    forged = ReportJobExit(job_sluid=J1, run_sluid=job.run_sluid, node_sluid="x",
                           node_name=other.node, exit_code=0)
    assert denial(scenario.when(as_(other, forged)).facts).reason == "NotRunNode"
    assert scenario.when(as_(ROOT, report)).facts[0].__class__.__name__ == "JobEnded"


def test_a_tick_that_came_through_the_intake_is_refused() -> None:
    tick = Tick(shard="t", time_ms=0)
    assert denial(given().when(as_(ROOT, tick)).facts).reason == "InternalRequest"


def test_a_node_responding_that_came_through_the_intake_is_refused() -> None:
    answer = NodeResponding(node_sluid="s1", name="n1", runs=(), time_ms=0)
    assert denial(given().when(as_(ROOT, answer)).facts).reason == "InternalRequest"


def test_a_credential_the_intake_refused_is_a_refusal_whatever_the_request() -> None:
    expired = Identity(kind="denied", denied="CredentialExpired", detail="old")
    refused = denial(given().when(as_(expired, SubmitJob(job_sluid=J2, spec=spec()))).facts)
    assert (refused.reason, refused.detail, refused.subject_sluid) == (
        "CredentialExpired", "old", J2)


def test_a_refusal_carries_the_refused_requests_nonce_and_zero_for_one_without() -> None:
    """Its client finds its own refusal by the nonce, never another's under the same SLUID."""
    limited = Identity(kind="denied", denied="RateLimited", detail="bucket empty")
    submit = SubmitJob(job_sluid=J2, spec=spec(), nonce=0x5EED)
    assert denial(given().when(as_(limited, submit)).facts).nonce == 0x5EED
    cancel = CancelJob(job_sluid=J1, user="alice")
    assert denial(running_job().when(as_(BOB, cancel)).facts).nonce == 0


def test_without_auth_required_a_bare_request_keeps_the_legacy_rules() -> None:
    facts = running_job(config="").when(CancelJob(job_sluid=J1, user="alice")).facts
    assert [type(f) for f in facts] == [RunKillRequested]


def _fold(scenario: Any, facts: list[Any]) -> None:
    from scheduler import evolve

    for fact in facts:
        scenario.state = evolve(scenario.state, fact)


def test_a_node_name_in_service_cannot_be_registered_by_another_identity() -> None:
    host_a = Identity(user="root", uid=0, gid=0, kind="munge", service=True, host="10.0.0.3")
    host_b = Identity(user="root", uid=0, gid=0, kind="munge", service=True, host="10.0.0.9")
    scenario = given(config=REQUIRED)
    first = scenario.when(as_(host_a, RegisterNode(node_sluid=sluid(20), name="n3", cpus=4,
                                                  mem_mb=1024, registrant="forged"))).facts
    registered = [f for f in first if f.__class__.__name__ == "NodeRegistered"]
    assert registered and registered[0].registrant == "munge root@10.0.0.3"  # not the field
    _fold(scenario, first)

    takeover = RegisterNode(node_sluid=sluid(21), name="n3", cpus=4, mem_mb=1024)
    refused = denial(scenario.when(as_(host_b, takeover)).facts)
    assert refused.reason == "NodeIdentityChanged"
    assert "munge root@10.0.0.3" in refused.detail and "10.0.0.9" in refused.detail
    assert denial(scenario.when(takeover).facts).reason == "NodeIdentityChanged"  # no credential
    again = scenario.when(as_(host_a, RegisterNode(node_sluid=sluid(20), name="n3", cpus=4,
                                                  mem_mb=1024))).facts
    assert not any(isinstance(f, RequestDenied) for f in again)  # the same host comes back


def test_a_dead_nodes_name_may_be_taken_by_a_replacement_host() -> None:
    from scheduler import NodeFailed

    host_a = Identity(user="root", uid=0, gid=0, kind="munge", service=True, host="10.0.0.3")
    host_b = Identity(user="root", uid=0, gid=0, kind="munge", service=True, host="10.0.0.9")
    scenario = given(config=REQUIRED)
    _fold(scenario, scenario.when(as_(host_a, RegisterNode(
        node_sluid=sluid(20), name="n3", cpus=4, mem_mb=1024))).facts)
    _fold(scenario, scenario.when(NodeFailed(node_sluid=sluid(20), name="n3",
                                             reason="Not responding", time_ms=T0)).facts)
    assert scenario.state.nodes[sluid(20)].state == "DOWN"

    facts = scenario.when(as_(host_b, RegisterNode(node_sluid=sluid(21), name="n3", cpus=4,
                                                  mem_mb=1024))).facts
    registered = [f for f in facts if f.__class__.__name__ == "NodeRegistered"]
    assert registered and registered[0].registrant == "munge root@10.0.0.9"


def test_a_nodes_reports_come_only_from_the_identity_that_registered_it() -> None:
    """Red team, 2026-12-07: any node credential reported for every node. A ``NodeUsers``
    daemon of one host (munge, not root) could end or fail the runs of every other host's
    node (``ReportJobExit`` naming that node), and refuse their commands for them."""
    from dataclasses import replace

    from scheduler import NodeRegistered, evolve
    from scheduler.records import ReportCommandRefused

    def daemon(host: str) -> Identity:
        return Identity(user="sluiced", uid=990, gid=990, kind="munge", host=host)

    hosts = {"n1": "10.0.0.1", "n2": "10.0.0.2"}
    facts = [replace(f, registrant=daemon(hosts[f.name]).registrant)
             if isinstance(f, NodeRegistered) else f for f in nodes("n", 2)]
    scenario = given(facts, queued(J1), config=REQUIRED + "NodeUsers: [sluiced]\n")
    for fact in scenario.when(schedule_pass()).facts:
        scenario.state = evolve(scenario.state, fact)
    job = scenario.state.jobs[J1]
    here = job.nodes[0]
    other = next(n for n in hosts if n != here)
    report = ReportJobExit(job_sluid=J1, run_sluid=job.run_sluid, node_sluid=job.node_sluids[0],
                           node_name=here, exit_code=1)
    refused = denial(scenario.when(as_(daemon(hosts[other]), report)).facts)
    assert refused.reason == "NotNodeCredential"
    assert f"registered by munge sluiced@{hosts[here]}" in refused.detail
    refusal = ReportCommandRefused(node_sluid=job.node_sluids[0], node_name=here,
                                   command="LaunchRun", reason="CommandUnsigned")
    assert denial(scenario.when(as_(daemon(hosts[other]), refusal)).facts).reason == (
        "NotNodeCredential")
    assert scenario.when(as_(daemon(hosts[here]), report)).facts[0].__class__.__name__ == (
        "JobEnded")
