"""Requeue after node failure, non-zero exit, prolog failure and RequeueJob (Slurm's rules).

Given facts / when a request / then the exact facts, in order.
"""

from __future__ import annotations

import dataclasses

from scheduler import (
    CancelJob,
    HoldJob,
    JobEnded,
    JobHeld,
    JobPending,
    JobRejected,
    JobStarted,
    LaunchRun,
    RequeueJob,
    SubmitJob,
    UpdateJob,
    node_commands,
    parse_config,
)
from tests.unit.core.gwt import T0, M, given, nodes, queued, schedule_pass, spec
from tests.unit.core.requeue_fixtures import (
    AFTER_DELAY,
    EXPEDITE_ON,
    J1,
    J2,
    ended,
    epilog,
    epilog_done,
    exited,
    expediting,
    kill,
    node_back,
    node_failed,
    prolog_failed,
    requeued,
    run_of,
    running,
)
from tests.unit.core.test_foundation import state_changed

TWO = ("n1", "n2")
THREE = ("n1", "n2", "n3")


# -- configuration and submission ------------------------------------------------------------


def test_the_requeue_keys_default_to_slurms_values() -> None:
    requeue = parse_config("").requeue
    assert (requeue.expedited_requeue, requeue.requeue_delay_s, requeue.job_requeue) == (
        False,
        120,
        True,
    )
    assert (requeue.max_batch_requeue, requeue.hot_swap, requeue.hot_swap_wait_s) == (5, False, 60)


def test_the_requeue_keys_read_slurms_spellings() -> None:
    config = parse_config(
        "SlurmctldParameters: enable_expedited_requeue,\n"
        "SchedulerParameters: requeue_delay=30,nohold_on_prolog_fail,bf_window=60\n"
        "JobRequeue: 0\nMaxBatchRequeue: 3\nHotSwap: yes\nHotSwapWait: 90\n"
        "Partitions:\n  - PartitionName: p\n    HotSwap: no\n"
    )
    requeue = config.requeue
    assert requeue.expedited_requeue and requeue.nohold_on_prolog_fail and requeue.hot_swap
    assert (requeue.requeue_delay_s, requeue.job_requeue, requeue.max_batch_requeue) == (
        30,
        False,
        3,
    )
    assert requeue.hot_swap_wait_s == 90 and config.partitions[0].hot_swap == "no"
    assert config.scheduler.bf_window_s == 3600


def test_an_unknown_slurmctld_parameter_is_an_error() -> None:
    try:
        parse_config("SlurmctldParameters: [enable_expedited_requeue, enable_teleport]\n")
    except ValueError as error:
        assert "enable_teleport" in str(error)
    else:
        raise AssertionError("accepted an unknown SlurmctldParameters entry")


def test_rate_limits_in_the_cluster_configuration_say_where_they_belong() -> None:
    try:
        parse_config("SlurmctldParameters: rl_enable,rl_bucket_size=50\n")
    except ValueError as error:
        assert "the rl_* rate limits are the intake's" in str(error)
        assert "sluice.conf" in str(error)
    else:
        raise AssertionError("accepted rate limits the core does not apply")


def test_expedite_is_refused_unless_the_cluster_enables_it() -> None:
    request = SubmitJob(job_sluid=J1, spec=spec(requeue="expedite"))
    [fact] = given().when(request).facts
    assert isinstance(fact, JobRejected)
    assert fact.reason == "ExpediteNotEnabled" and not fact.retryable
    given(config=EXPEDITE_ON).when(request).then(queued(J1, spec(requeue="expedite"), job_id=1))


def test_a_job_cannot_be_updated_to_expedite_unless_enabled() -> None:
    outcome = given(queued(J1)).when(UpdateJob(job_sluid=J1, changes={"requeue": "expedite"}))
    assert [f.reason for f in outcome.matching(JobRejected)] == ["ExpediteNotEnabled"]


# -- node failure ----------------------------------------------------------------------------


def test_a_node_failure_requeues_a_batch_job_after_the_surviving_nodes_epilogs() -> None:
    scenario = given(nodes("n", 2), running(J1, 1, TWO, spec(nodes_min=2)))
    outcome = scenario.when(node_failed("n1"))
    outcome.then(
        state_changed("n1", "DOWN", "Not responding"),
        kill(J1, 1, "NODE_FAIL", ("n2",)),
        ended(J1, 1, "NODE_FAIL", "Not responding"),
    )
    state = outcome.evolved()
    assert state.jobs[J1].state == "COMPLETING" and state.jobs[J1].completing == ("n2",)
    assert J1 not in state.ended and J1 in state.completing
    outcome = scenario.when(epilog(J1, 1, "n2"))
    outcome.then(
        epilog_done(J1, 1, "n2"),
        requeued(J1, 1, "NODE_FAIL", begin_time_ms=AFTER_DELAY),
    ).then_nodes(n2="IDLE")
    job = outcome.evolved().jobs[J1]
    assert (job.state, job.reason, job.run_sluid, job.previous_run_sluid) == (
        "PENDING",
        "BeginTime",
        "",
        run_of(1),
    )
    assert job.restart_count == 1 and job.spec.begin_time_ms == AFTER_DELAY


def test_a_requeued_job_starts_a_new_run_that_names_the_previous_one() -> None:
    scenario = given(nodes("n", 2), running(J1, 1, TWO, spec(nodes_min=2)))
    scenario.when(node_failed("n1")).evolved()
    scenario.when(epilog(J1, 1, "n2")).evolved()
    scenario.when(schedule_pass(), T0 + 1000).evolved()  # not yet eligible
    node_back(scenario, "n1")
    outcome = scenario.when(schedule_pass(), AFTER_DELAY)
    [start] = outcome.matching(JobStarted)
    assert start.restart_count == 1 and start.run_sluid != run_of(1)
    state = outcome.evolved()
    [launch, _] = [c for f in outcome.facts for c in node_commands(state, f)]
    assert isinstance(launch, LaunchRun)
    assert (launch.previous_run_sluid, launch.restart_count) == (run_of(1), 1)


def test_an_expedite_job_losing_a_node_is_expedited_and_keeps_its_nodes_until_the_last_epilog() -> (
    None
):
    scenario = given(
        nodes("n", 3),
        running(J1, 1, THREE, spec(nodes_min=3, requeue="expedite")),
        config=EXPEDITE_ON,
    )
    scenario.when(node_failed("n1")).then(
        state_changed("n1", "DOWN", "Not responding"),
        kill(J1, 1, "NODE_FAIL", ("n2", "n3")),
        ended(J1, 1, "NODE_FAIL", "Not responding"),
        expediting(J1, 1, "NODE_FAIL"),
    ).evolved()
    assert scenario.state.jobs[J1].expediting and scenario.state.jobs[J1].epilog_failed
    scenario.when(epilog(J1, 1, "n2")).then(epilog_done(J1, 1, "n2")).evolved()
    assert scenario.state.jobs[J1].held == ("n2", "n3")  # deferred: nothing given back yet
    outcome = scenario.when(epilog(J1, 1, "n3"))
    outcome.then(
        epilog_done(J1, 1, "n3"),
        requeued(J1, 1, "NODE_FAIL", expedite=True, begin_time_ms=0),
    ).then_nodes(n2="IDLE", n3="IDLE")
    job = outcome.evolved().jobs[J1]
    assert job.is_pending and job.expediting and job.reason == "None"


def test_a_single_node_expedite_job_is_requeued_at_once_when_its_node_fails() -> None:
    given(
        nodes("n", 1), running(J1, 1, ("n1",), spec(requeue="expedite")), config=EXPEDITE_ON
    ).when(node_failed("n1")).then(
        state_changed("n1", "DOWN", "Not responding"),
        ended(J1, 1, "NODE_FAIL", "Not responding"),
        expediting(J1, 1, "NODE_FAIL"),
        requeued(J1, 1, "NODE_FAIL", expedite=True, begin_time_ms=0),
    )


def test_a_no_requeue_job_just_ends_node_fail() -> None:
    given(nodes("n", 2), running(J1, 1, TWO, spec(nodes_min=2, requeue="no"))).when(
        node_failed("n1")
    ).then(
        state_changed("n1", "DOWN", "Not responding"),
        kill(J1, 1, "NODE_FAIL", ("n2",)),
        ended(J1, 1, "NODE_FAIL", "Not responding"),
    ).then_nodes(n2="IDLE")


def test_with_jobrequeue_0_only_jobs_asking_for_requeue_are_requeued() -> None:
    config = "JobRequeue: 0\n"
    plain = given(nodes("n", 1), running(J1, 1, ("n1",), spec()), config=config)
    plain.when(node_failed("n1")).then(
        state_changed("n1", "DOWN", "Not responding"), ended(J1, 1, "NODE_FAIL", "Not responding")
    )
    asked = given(nodes("n", 1), running(J1, 1, ("n1",), spec(requeue="yes")), config=config)
    asked.when(node_failed("n1")).then(
        state_changed("n1", "DOWN", "Not responding"),
        ended(J1, 1, "NODE_FAIL", "Not responding"),
        requeued(J1, 1, "NODE_FAIL", begin_time_ms=AFTER_DELAY),
    )


def test_a_cancel_in_progress_wins_over_the_node_failure() -> None:
    """No requeue, and the job ends CANCELLED: Slurm's job took that state when it was
    cancelled, and a node failing before the kill's end changes nothing (it said NODE_FAIL)."""
    scenario = given(nodes("n", 2), running(J1, 1, TWO, spec(nodes_min=2)))
    scenario.when(CancelJob(job_sluid=J1)).evolved()
    scenario.when(node_failed("n1")).then(
        state_changed("n1", "DOWN", "Not responding"),
        ended(J1, 1, "CANCELLED", "Not responding"),
    ).then_nodes(n2="IDLE")


def test_a_time_limit_kill_in_progress_ends_timeout_when_the_node_fails() -> None:
    scenario = given(nodes("n", 2), running(J1, 1, TWO, spec(nodes_min=2, requeue="yes")))
    state = scenario.state
    job = state.jobs[J1]
    state.jobs[J1] = dataclasses.replace(job, kill_reason="TIMEOUT")
    outcome = scenario.when(node_failed("n1"))
    [end] = outcome.matching(JobEnded)
    assert (end.state, end.requeue_reason) == ("TIMEOUT", "")  # no requeue, as before


# -- non-zero exit of an expedite job ----------------------------------------------------------


def test_a_nonzero_exit_with_clean_epilogs_requeues_the_expedite_job_held() -> None:
    scenario = given(
        nodes("n", 2),
        running(J1, 1, TWO, spec(nodes_min=2, requeue="expedite")),
        config=EXPEDITE_ON,
    )
    scenario.when(exited(J1, 1, "n1", 3)).then(ended(J1, 1, "FAILED", exit_code=3)).evolved()
    assert scenario.state.jobs[J1].completing == TWO
    scenario.when(epilog(J1, 1, "n1")).then(epilog_done(J1, 1, "n1")).evolved()
    outcome = scenario.when(epilog(J1, 1, "n2"))
    outcome.then(
        epilog_done(J1, 1, "n2"),
        requeued(J1, 1, "EXIT_NONZERO", held=True, begin_time_ms=0),
    ).then_nodes(n1="IDLE", n2="IDLE")
    job = outcome.evolved().jobs[J1]
    assert (job.hold, job.reason, job.expediting) == ("user", "JobHeldUser", False)
    assert scenario.when(schedule_pass()).matching(JobStarted) == []


def test_a_nonzero_exit_with_a_failed_epilog_is_expedited_and_drains_the_node() -> None:
    scenario = given(
        nodes("n", 2),
        running(J1, 1, TWO, spec(nodes_min=2, requeue="expedite")),
        config=EXPEDITE_ON,
    )
    scenario.when(exited(J1, 1, "n1", 1)).evolved()
    scenario.when(epilog(J1, 1, "n1", ok=False, exit_code=2)).then(
        epilog_done(J1, 1, "n1", ok=False, detail="epilog exited 2"),
        state_changed("n1", "DRAIN", "Epilog error"),
        expediting(J1, 1, "EPILOG_FAILED"),
    ).evolved()
    scenario.when(epilog(J1, 1, "n2")).then(
        epilog_done(J1, 1, "n2"),
        requeued(J1, 1, "EXIT_NONZERO", expedite=True, begin_time_ms=0),
    ).then_nodes(n2="IDLE")


def test_exit_zero_completes_an_expedite_job_normally() -> None:
    scenario = given(
        nodes("n", 2),
        running(J1, 1, TWO, spec(nodes_min=2, requeue="expedite")),
        config=EXPEDITE_ON,
    )
    scenario.when(exited(J1, 1, "n1", 0)).then(
        ended(J1, 1, "COMPLETED"),
    ).then_nodes(n1="IDLE", n2="IDLE")


def test_a_signal_death_is_no_nonzero_exit_status() -> None:
    """Slurm tests WEXITSTATUS: a script killed by a signal has exit status 0."""
    scenario = given(
        nodes("n", 1), running(J1, 1, ("n1",), spec(requeue="expedite")), config=EXPEDITE_ON
    )
    scenario.when(exited(J1, 1, "n1", 0, signal=9)).then(
        ended(J1, 1, "FAILED", signal=9),
    ).then_nodes(n1="IDLE")


def test_a_plain_requeue_job_that_exits_nonzero_just_fails() -> None:
    given(nodes("n", 1), running(J1, 1, ("n1",), spec(requeue="yes"))).when(
        exited(J1, 1, "n1", 1)
    ).then(ended(J1, 1, "FAILED", exit_code=1)).then_nodes(n1="IDLE")


# -- epilogs ---------------------------------------------------------------------------------


def test_a_failed_epilog_of_an_ended_job_drains_the_node() -> None:
    given(nodes("n", 1), running(J1, 1, ("n1",), spec()), ended(J1, 1, "COMPLETED")).when(
        epilog(J1, 1, "n1", ok=False, detail="epilog timed out")
    ).then(
        epilog_done(J1, 1, "n1", ok=False, detail="epilog timed out"),
        state_changed("n1", "DRAIN", "Epilog error"),
    )


def test_a_clean_epilog_nobody_waits_for_decides_nothing() -> None:
    given(nodes("n", 1), running(J1, 1, ("n1",), spec()), ended(J1, 1, "COMPLETED")).when(
        epilog(J1, 1, "n1")
    ).then_nothing()


def test_a_duplicate_epilog_report_decides_nothing() -> None:
    scenario = given(nodes("n", 2), running(J1, 1, TWO, spec(nodes_min=2)))
    scenario.when(node_failed("n1")).evolved()
    scenario.when(epilog(J1, 1, "n2")).evolved()
    scenario.when(epilog(J1, 1, "n2")).then_nothing()


def test_a_node_that_fails_while_its_epilog_is_awaited_counts_as_done() -> None:
    scenario = given(
        nodes("n", 2),
        running(J1, 1, TWO, spec(nodes_min=2, requeue="expedite")),
        config=EXPEDITE_ON,
    )
    scenario.when(exited(J1, 1, "n1", 1)).evolved()
    scenario.when(epilog(J1, 1, "n1")).evolved()
    scenario.when(node_failed("n2")).then(
        state_changed("n2", "DOWN", "Not responding"),
        epilog_done(J1, 1, "n2", detail="Node DOWN: Not responding"),
        requeued(J1, 1, "EXIT_NONZERO", held=True, begin_time_ms=0),
    ).then_nodes(n1="IDLE")


def test_a_cancel_while_the_requeue_waits_ends_the_job_and_frees_its_nodes() -> None:
    scenario = given(nodes("n", 2), running(J1, 1, TWO, spec(nodes_min=2)))
    scenario.when(node_failed("n1")).evolved()
    outcome = scenario.when(CancelJob(job_sluid=J1))
    outcome.then(
        JobEnded(**M, job_sluid=J1, job_id=1, run_sluid="", state="CANCELLED"),
    ).then_nodes(n2="IDLE")
    state = outcome.evolved()
    assert state.jobs[J1].state == "CANCELLED" and J1 in state.ended
    assert int(state.index.njobs.sum()) == 0


def test_nodes_completing_for_a_requeue_take_no_new_work() -> None:
    scenario = given(
        nodes("n", 2),
        running(J1, 1, TWO, spec(nodes_min=2, requeue="expedite")),
        queued(J2, spec(), job_id=2),
        config=EXPEDITE_ON,
    )
    scenario.when(exited(J1, 1, "n1", 1)).evolved()
    starts = scenario.when(schedule_pass()).matching(JobStarted)
    assert starts == []


# -- queue order and launch --------------------------------------------------------------------


def test_an_expediting_job_sorts_ahead_and_is_no_longer_expediting_once_started() -> None:
    scenario = given(
        nodes("n", 2),
        queued(J2, spec(nice=-100), job_id=2),  # earlier and with a higher priority
        running(J1, 1, ("n1",), spec(requeue="expedite")),
        config=EXPEDITE_ON,
    )
    scenario.when(node_failed("n1")).evolved()
    outcome = scenario.when(schedule_pass(), T0 + 1)
    [start] = outcome.matching(JobStarted)
    assert start.job_sluid == J1 and start.nodes == ("n2",)
    assert not outcome.evolved().jobs[J1].expediting


# -- prolog failure ----------------------------------------------------------------------------


def test_a_failed_prolog_drains_the_node_and_requeues_the_job_held() -> None:
    scenario = given(nodes("n", 2), running(J1, 1, TWO, spec(nodes_min=2)))
    scenario.when(prolog_failed(J1, 1, "n2")).then(
        state_changed("n2", "DRAIN", "Prolog error"),
        kill(J1, 1, "PROLOG_FAILED", TWO),
        ended(J1, 1, "REQUEUED", "Prolog error on n2: prolog exited 1", exit_code=1),
    ).evolved()
    scenario.when(epilog(J1, 1, "n1")).then(
        epilog_done(J1, 1, "n1"),
    ).then_nodes(n1="IDLE").evolved()
    scenario.when(epilog(J1, 1, "n2")).then(
        epilog_done(J1, 1, "n2"),
        requeued(J1, 1, "PROLOG_FAILED", held=True, begin_time_ms=AFTER_DELAY),
    )


def test_nohold_on_prolog_fail_requeues_without_a_hold() -> None:
    scenario = given(
        nodes("n", 1),
        running(J1, 1, ("n1",), spec()),
        config="SchedulerParameters: nohold_on_prolog_fail\n",
    )
    scenario.when(prolog_failed(J1, 1, "n1")).evolved()
    scenario.when(epilog(J1, 1, "n1")).then(
        epilog_done(J1, 1, "n1"),
        requeued(J1, 1, "PROLOG_FAILED", begin_time_ms=AFTER_DELAY),
    )


def test_a_failed_prolog_of_a_no_requeue_job_fails_it() -> None:
    given(nodes("n", 1), running(J1, 1, ("n1",), spec(requeue="no"))).when(
        prolog_failed(J1, 1, "n1")
    ).then(
        state_changed("n1", "DRAIN", "Prolog error"),
        kill(J1, 1, "PROLOG_FAILED", ("n1",)),
        ended(J1, 1, "FAILED", "Prolog error on n1: prolog exited 1", exit_code=1),
    )


# -- MaxBatchRequeue ---------------------------------------------------------------------------


def test_past_max_batch_requeue_the_job_is_held_and_the_count_starts_over() -> None:
    scenario = given(nodes("n", 1), running(J1, 1, ("n1",), spec()), config="MaxBatchRequeue: 1\n")
    outcome = scenario.when(node_failed("n1"))
    outcome.then(
        state_changed("n1", "DOWN", "Not responding"),
        ended(J1, 1, "NODE_FAIL", "Not responding"),
        requeued(J1, 1, "NODE_FAIL", held=True, begin_time_ms=AFTER_DELAY),
        JobPending(**M, job_sluid=J1, reason="JobHoldMaxRequeue", priority=0),
    )
    job = outcome.evolved().jobs[J1]
    assert (job.hold, job.reason, job.batch_requeues) == ("user", "JobHoldMaxRequeue", 0)
    assert scenario.when(schedule_pass(), AFTER_DELAY).matching(JobPending) == []


def test_the_fifth_counted_requeue_is_held_under_the_default_limit() -> None:
    scenario = given(nodes("n", 1), queued(J1, spec()))
    held = []
    for attempt in range(1, 6):
        scenario.when(schedule_pass(), T0 + attempt * 200_000).evolved()
        scenario.when(node_failed("n1")).evolved()
        job = scenario.state.jobs[J1]
        held.append(job.hold)
        node_back(scenario, "n1")
    assert held == ["", "", "", "", "user"]


# -- RequeueJob --------------------------------------------------------------------------------


def test_an_operator_requeue_kills_the_run_then_requeues_after_the_epilogs() -> None:
    scenario = given(nodes("n", 2), running(J1, 1, TWO, spec(nodes_min=2)))
    scenario.when(RequeueJob(job_sluid=J1, user="alice")).then(
        kill(J1, 1, "REQUEUED", TWO)
    ).evolved()
    scenario.when(exited(J1, 1, "n1", 0, signal=15)).then(
        ended(J1, 1, "REQUEUED", signal=15)
    ).evolved()
    scenario.when(epilog(J1, 1, "n1")).evolved()
    scenario.when(epilog(J1, 1, "n2")).then(
        epilog_done(J1, 1, "n2"),
        requeued(J1, 1, "ADMIN", begin_time_ms=AFTER_DELAY),
    ).then_nodes(n2="IDLE")


def test_requeue_hold_requeues_the_job_held() -> None:
    scenario = given(nodes("n", 1), running(J1, 1, ("n1",), spec()))
    scenario.when(RequeueJob(job_sluid=J1, hold=True)).then(
        kill(J1, 1, "REQUEUE_HOLD", ("n1",))
    ).evolved()
    scenario.when(exited(J1, 1, "n1", 0, signal=15)).evolved()
    scenario.when(epilog(J1, 1, "n1")).then(
        epilog_done(J1, 1, "n1"),
        requeued(J1, 1, "ADMIN", held=True, begin_time_ms=AFTER_DELAY),
    ).then_nodes(n1="IDLE")


def test_requeue_is_refused_to_strangers_no_requeue_jobs_and_jobs_not_running() -> None:
    stranger = given(nodes("n", 1), running(J1, 1, ("n1",), spec()))
    [refused] = stranger.when(RequeueJob(job_sluid=J1, user="mallory")).facts
    assert isinstance(refused, JobRejected) and refused.reason == "AccessDenied"
    no = given(nodes("n", 1), running(J1, 1, ("n1",), spec(requeue="no")))
    [refused] = no.when(RequeueJob(job_sluid=J1)).facts
    assert isinstance(refused, JobRejected) and refused.reason == "RequeueDisabled"
    [refused] = given(queued(J1)).when(RequeueJob(job_sluid=J1)).facts
    assert isinstance(refused, JobRejected) and refused.reason == "JobNotRunning"


def test_a_second_requeue_while_the_first_kill_runs_decides_nothing() -> None:
    scenario = given(nodes("n", 1), running(J1, 1, ("n1",), spec()))
    scenario.when(RequeueJob(job_sluid=J1)).evolved()
    scenario.when(RequeueJob(job_sluid=J1)).then_nothing()


def test_only_an_operator_may_hold_or_update_an_expediting_job() -> None:
    scenario = given(
        nodes("n", 1),
        running(J1, 1, ("n1",), spec(requeue="expedite")),
        config=EXPEDITE_ON + "Operators: [ops]\n",
    )
    scenario.when(node_failed("n1")).evolved()
    [refused] = scenario.when(HoldJob(job_sluid=J1, user="alice")).facts
    assert isinstance(refused, JobRejected) and refused.reason == "JobExpediting"
    [refused] = scenario.when(UpdateJob(job_sluid=J1, user="alice", changes={"name": "x"})).facts
    assert isinstance(refused, JobRejected) and refused.reason == "JobExpediting"
    [held] = scenario.when(HoldJob(job_sluid=J1, user="ops", admin=True)).facts
    assert isinstance(held, JobHeld) and held.admin
