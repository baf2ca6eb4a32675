"""The foundation lifecycle the shell relies on: nodes, submit, start, exit, cancel, timeout."""

from __future__ import annotations

import pytest

from scheduler import (
    CancelJob,
    CloseCycle,
    CycleCompleted,
    JobEnded,
    JobPending,
    JobQueued,
    JobRejected,
    JobStarted,
    NodeRegistered,
    NodeStateChanged,
    RegisterNode,
    ReportJobExit,
    RequestDenied,
    RunKillRequested,
    SubmitJob,
    Tick,
)
from tests.unit.core.gwt import (
    T0,
    M,
    at,
    given,
    node_sluid,
    nodes,
    queued,
    registered,
    schedule_pass,
    sluid,
    spec,
)

J1, J2 = sluid(1), sluid(2)


def started(
    job_sluid: str,
    job_id: int,
    names: tuple[str, ...],
    run: str = "",
    time_limit_s: int = 0,
    submit_ms: int = T0,
    user: str = "alice",
) -> JobStarted:
    return JobStarted(
        **M,
        job_sluid=job_sluid,
        job_id=job_id,
        run_sluid=run or sluid(900 + job_id),
        restart_count=0,
        nodes=names,
        node_sluids=tuple(node_sluid(n) for n in names),
        partition="main",
        user=user,
        time_limit_s=time_limit_s,
        submit_ms=submit_ms,
    )


def state_changed(name: str, state: str, reason: str = "", by: str = "") -> NodeStateChanged:
    return NodeStateChanged(**M, node_sluid=node_sluid(name), name=name, state=state, reason=reason,
                            by=by)


def test_a_registering_node_on_the_default_cluster_joins_main_and_goes_idle() -> None:
    request = RegisterNode(
        node_sluid=node_sluid("n1"), name="n1", cpus=8, mem_mb=1024, gpus=2, gpu_type="h100"
    )
    given().when(request).then(
        NodeRegistered(
            **M,
            node_sluid=node_sluid("n1"),
            name="n1",
            cpus=8,
            mem_mb=1024,
            gpus=2,
            gpu_type="h100",
            features=(),
            partitions=("main",),
        ),
        state_changed("n1", "IDLE"),
    ).then_nodes(n1="IDLE")


@pytest.mark.parametrize("name", ["node[9", "node9]", "node,x", "node 9", "node\t9",
                                  "node\x1b[2J", "n" * 254])
def test_a_node_name_no_host_list_can_hold_is_refused_and_registers_nothing(name: str) -> None:
    """Registered, 'node[9' (AuthNodeNames: [node*] matched it) made every user's sinfo fail:
    'name 'node[9' cannot be written in a host list' (red team)."""
    request = RegisterNode(node_sluid=node_sluid("n9"), name=name, cpus=1, mem_mb=0)
    outcome = given().when(request).then_kinds(RequestDenied)
    assert outcome.facts[0].reason == "InvalidNodeRegistration"
    assert not outcome.state.nodes


def test_re_registering_a_known_node_unchanged_is_idempotent() -> None:
    request = RegisterNode(node_sluid=node_sluid("n1"), name="n1", cpus=1, mem_mb=0)
    given(registered("n1")).when(request).then_nothing()


def test_a_node_missing_from_a_config_that_lists_nodes_is_refused_as_invalid_reg() -> None:
    config = "Nodes:\n  - NodeName: a[1-2]\n    CPUs: 4\n"
    request = RegisterNode(node_sluid=node_sluid("zz"), name="zz", cpus=4, mem_mb=0)
    given(config=config).when(request).then(
        state_changed("zz", "INVALID_REG", "Node is not in the cluster configuration")
    )


def test_a_submission_is_queued_with_the_next_job_id() -> None:
    given(queued(J1)).when(SubmitJob(job_sluid=J2, spec=spec())).then(
        JobQueued(**M, job_sluid=J2, job_id=2, spec=spec())
    )


def test_a_duplicate_submission_is_one_job() -> None:
    given(queued(J1)).when(SubmitJob(job_sluid=J1, spec=spec())).then_nothing()


def test_submissions_breaking_a_rule_are_rejected_with_a_named_reason() -> None:
    cases = {
        "InvalidNodeCount": spec(nodes_min=0),
        "InvalidTimeLimit": spec(time_limit_s=-1),
        "InvalidPartition": spec(partition="nope"),
        "EmptyCommand": spec(command=()),
    }
    for reason, bad in cases.items():
        outcome = given().when(SubmitJob(job_sluid=J1, spec=bad))
        [fact] = outcome.facts
        assert isinstance(fact, JobRejected) and fact.reason == reason, (reason, fact)
    bigger = spec(nodes_min=3, nodes_max=2)
    [fact] = given().when(SubmitJob(job_sluid=J1, spec=bigger)).facts
    assert isinstance(fact, JobRejected) and fact.reason == "InvalidNodeCount"


def test_a_job_larger_than_any_configured_partition_is_rejected() -> None:
    config = "Nodes:\n  - NodeName: a[1-2]\n    CPUs: 4\n"
    [fact] = given(config=config).when(SubmitJob(job_sluid=J1, spec=spec(nodes_min=3))).facts
    assert isinstance(fact, JobRejected)
    assert (fact.reason, fact.retryable) == ("NodeCountTooLarge", False)


def test_the_pass_starts_a_fitting_job_on_the_first_nodes_in_natural_order() -> None:
    outcome = given(
        registered("n10"), registered("n2"), registered("n1"), queued(J1, spec(nodes_min=2))
    ).when(schedule_pass())
    outcome.then_kinds(JobStarted)
    start = outcome.facts[0]
    assert isinstance(start, JobStarted)
    assert start.nodes == ("n1", "n2")
    assert start.node_sluids == (node_sluid("n1"), node_sluid("n2"))
    outcome.then_nodes(n1="ALLOCATED", n2="ALLOCATED", n10="IDLE")


def test_a_job_that_does_not_fit_waits_for_resources() -> None:
    given(registered("n1"), queued(J1, spec(nodes_min=2))).when(schedule_pass()).then(
        JobPending(**M, job_sluid=J1, reason="Resources", priority=1)
    )


def test_the_pending_reason_is_recorded_only_when_it_changes() -> None:
    outcome = given(registered("n1"), queued(J1, spec(nodes_min=2))).when(schedule_pass())
    state = outcome.evolved()
    from scheduler import schedule

    assert schedule(state, T0 + 1000) == []


def test_the_batch_hosts_exit_zero_completes_the_job_and_frees_its_nodes() -> None:
    run = sluid(901)
    exit_ = ReportJobExit(
        job_sluid=J1, run_sluid=run, node_sluid=node_sluid("n1"), node_name="n1", exit_code=0
    )
    given(
        registered("n1"), queued(J1), started(J1, 1, ("n1",)), state_changed("n1", "ALLOCATED")
    ).when(exit_).then(
        JobEnded(**M, job_sluid=J1, job_id=1, run_sluid=run, state="COMPLETED"),
    ).then_nodes(n1="IDLE")


def test_a_non_zero_exit_fails_the_job() -> None:
    run = sluid(901)
    exit_ = ReportJobExit(
        job_sluid=J1, run_sluid=run, node_sluid=node_sluid("n1"), node_name="n1", exit_code=3
    )
    outcome = given(registered("n1"), queued(J1), started(J1, 1, ("n1",))).when(exit_)
    [ended] = outcome.matching(JobEnded)
    assert (ended.state, ended.exit_code) == ("FAILED", 3)


def test_an_exit_report_for_a_stale_run_or_unknown_job_is_ignored() -> None:
    stale = ReportJobExit(
        job_sluid=J1, run_sluid=sluid(555), node_sluid=node_sluid("n1"), node_name="n1", exit_code=0
    )
    unknown = ReportJobExit(
        job_sluid=J2, run_sluid=sluid(901), node_sluid=node_sluid("n1"), node_name="n1", exit_code=0
    )
    scenario = (registered("n1"), queued(J1), started(J1, 1, ("n1",)))
    given(*scenario).when(stale).then_nothing()
    given(*scenario).when(unknown).then_nothing()


def test_cancelling_a_pending_job_ends_it_directly() -> None:
    given(queued(J1)).when(CancelJob(job_sluid=J1)).then(
        JobEnded(**M, job_sluid=J1, job_id=1, run_sluid="", state="CANCELLED")
    )


def test_cancelling_a_running_job_requests_a_kill_and_the_exit_ends_it_cancelled() -> None:
    run = sluid(901)
    scenario = (registered("n1"), queued(J1), started(J1, 1, ("n1",)))
    given(*scenario).when(CancelJob(job_sluid=J1)).then(
        RunKillRequested(**M, job_sluid=J1, run_sluid=run, reason="CANCELLED", nodes=("n1",))
    )
    killed = RunKillRequested(**M, job_sluid=J1, run_sluid=run, reason="CANCELLED", nodes=("n1",))
    given(*scenario, killed).when(CancelJob(job_sluid=J1)).then_nothing()
    exit_ = ReportJobExit(
        job_sluid=J1,
        run_sluid=run,
        node_sluid=node_sluid("n1"),
        node_name="n1",
        exit_code=0,
        signal=15,
    )
    [ended] = given(*scenario, killed).when(exit_).matching(JobEnded)
    assert ended.state == "CANCELLED"


def test_a_run_at_its_time_limit_is_killed_once_with_timeout() -> None:
    run = sluid(901)
    scenario = (
        registered("n1"),
        queued(J1, spec(time_limit_s=60)),
        started(J1, 1, ("n1",), time_limit_s=60),
    )
    given(*scenario).when(schedule_pass(), T0 + 59_999).then_nothing()
    outcome = given(*scenario).when(schedule_pass(), T0 + 60_000)
    outcome.then(
        RunKillRequested(**M, job_sluid=J1, run_sluid=run, reason="TIMEOUT", nodes=("n1",))
    )
    state = outcome.evolved()
    from scheduler import schedule

    assert schedule(state, T0 + 120_000) == []


def test_a_tick_decides_nothing() -> None:
    given(queued(J1)).when(Tick(shard="s", time_ms=T0 + 5)).then_nothing()


def test_close_cycle_records_the_inbox_range_and_counts() -> None:
    outcome = given(nodes("n", 1), queued(J1), queued(J2)).when(
        CloseCycle(inbox_partition=3, inbox_from=10, inbox_to=20)
    )
    outcome.then(
        CycleCompleted(
            **at(T0), inbox_partition=3, inbox_from=10, inbox_to=20, pending=2, running=0, started=0
        )
    )
    assert outcome.evolved().inbox_offset == 20
