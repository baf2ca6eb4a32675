"""Slurm's ``RequeueExit`` and ``RequeueExitHold``: a batch job whose script exits with a listed
code is requeued, or requeued held in ``SPECIAL_EXIT`` until it is released.

Given facts / when a request / then the exact facts, in order. The nodes' occupancy
announcements (``NodeStateChanged`` IDLE/MIXED/ALLOCATED) are left out of the comparisons: these
tests are about the job's facts, and what a freed node is called is the occupancy's business.
"""

from __future__ import annotations

import pickle

import pytest

from scheduler import (
    ApplyConfig,
    CancelJob,
    ConfigError,
    JobEnded,
    JobPending,
    JobRejected,
    JobReleased,
    JobStarted,
    LaunchRun,
    NodeStateChanged,
    ReleaseJob,
    ReportEpilog,
    ReportJobExit,
    ShardState,
    decide,
    evolve,
    initial_state,
    node_commands,
    parse_config,
    restore_state,
    schedule,
    state_meta,
)
from scheduler.records import Fact, Request
from tests.unit.core.gwt import (
    CLUSTER,
    SHARD,
    T0,
    M,
    Outcome,
    given,
    node_sluid,
    nodes,
    restamp,
    schedule_pass,
    spec,
    strip,
)
from tests.unit.core.requeue_fixtures import (
    AFTER_DELAY,
    EXPEDITE_ON,
    J1,
    ended,
    epilog,
    epilog_done,
    exited,
    kill,
    requeued,
    run_of,
    running,
)
from tests.unit.core.test_foundation import state_changed
from tests.unit.core.test_properties import fingerprint

CODES = "RequeueExit: 3,10-12\nRequeueExitHold: 4\n"
TWO = ("n1", "n2")
OCCUPANCY = frozenset({"IDLE", "MIXED", "ALLOCATED"})


def _job_fact(fact: Fact) -> bool:
    return not (isinstance(fact, NodeStateChanged) and fact.state in OCCUPANCY)


def then(outcome: Outcome, *expected: Fact) -> Outcome:
    """Like ``Outcome.then``, without the nodes' occupancy announcements."""
    got = [strip(f) for f in outcome.facts if _job_fact(f)]
    want = [strip(f) for f in expected]
    assert got == want, "\n".join(["got:", *map(str, got), "want:", *map(str, want)])
    return outcome


def exit_now(state: ShardState, code: int) -> ReportJobExit:
    """The batch host's exit report of J1's current run."""
    job = state.jobs[J1]
    return ReportJobExit(
        job_sluid=J1,
        run_sluid=job.run_sluid,
        node_sluid=node_sluid(job.nodes[0]),
        node_name=job.nodes[0],
        exit_code=code,
    )


def epilogs_now(state: ShardState) -> list[ReportEpilog]:
    """Every node's clean epilog report for J1's current run."""
    job = state.jobs[J1]
    return [
        ReportEpilog(
            job_sluid=J1, run_sluid=job.run_sluid, node_sluid=node_sluid(n), node_name=n, ok=True
        )
        for n in job.nodes
    ]


def _ends_for_good(outcome: Outcome) -> None:
    """The run ended and the job with it: no requeue, every node of the run given back."""
    state = outcome.evolved()
    job = state.jobs[J1]
    assert job.has_ended and not job.held and J1 not in state.completing
    assert int(state.index.njobs.sum()) == 0


# -- configuration ---------------------------------------------------------------------------


def test_the_lists_are_empty_by_default() -> None:
    requeue = parse_config("").requeue
    assert requeue.requeue_exit == frozenset() and requeue.requeue_exit_hold == frozenset()


def test_the_lists_take_slurms_codes_and_ranges_or_a_yaml_list() -> None:
    requeue = parse_config("RequeueExit: 1-9,18\nRequeueExitHold: [10-12, 16, 0]\n").requeue
    assert requeue.requeue_exit == frozenset({1, 2, 3, 4, 5, 6, 7, 8, 9, 18})
    assert requeue.requeue_exit_hold == frozenset({0, 10, 11, 12, 16})
    assert parse_config("RequeueExit: 255\n").requeue.requeue_exit == frozenset({255})
    assert parse_config("RequeueExit: 7-7, 7\n").requeue.requeue_exit == frozenset({7})


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("RequeueExit: -1\n", 1, "cannot be negative"),
        ("JobRequeue: 1\nRequeueExitHold: 1,-3-5\n", 2, "cannot be negative"),
        ("RequeueExit: 9-1\n", 1, "'9-1' runs backwards"),
        ("RequeueExit: 256\n", 1, "exit code 256 is over 255"),
        ("RequeueExitHold: 250-300\n", 1, "exit code 300 is over 255"),
        ("RequeueExit: one\n", 1, "'one' is not an exit code or a range"),
        ("RequeueExit: 1--3\n", 1, "'1--3' is not an exit code or a range"),
        ("RequeueExit: [1, [2]]\n", 1, "must be a single value"),
        ("RequeueExit: 1-5\nMaxBatchRequeue: 3\nRequeueExitHold: 8,5\n", 3, "5 is also in"),
        ("RequeueExitHold: 2\nRequeueExit: 2\n", 1, "2 is also in RequeueExit"),
    ],
)
def test_errors_name_the_file_the_line_and_the_reason(text: str, line: int, words: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, "cluster.yaml")
    assert caught.value.line == line, caught.value
    assert str(caught.value).startswith(f"cluster.yaml:{line}: ")
    assert words in str(caught.value)


def test_a_bad_list_is_rejected_by_apply_config_and_the_running_one_stays() -> None:
    state = given(config=CODES).state
    bad = ApplyConfig(
        config_sluid=run_of(50), kind="cluster", text="RequeueExit: 300\n", source="x.yaml"
    )
    [fact] = decide(state, bad, T0)
    assert isinstance(fact, JobRejected) and fact.reason == "InvalidConfig"
    assert fact.detail.startswith("x.yaml:1: RequeueExit")
    assert evolve(state, fact).config.requeue.requeue_exit == frozenset({3, 10, 11, 12})


# -- RequeueExit -----------------------------------------------------------------------------


def test_an_exit_code_in_requeue_exit_requeues_the_job_after_the_epilogs() -> None:
    scenario = given(nodes("n", 2), running(J1, 1, TWO, spec(nodes_min=2)), config=CODES)
    outcome = then(scenario.when(exited(J1, 1, "n1", 3)), ended(J1, 1, "FAILED", exit_code=3))
    state = outcome.evolved()
    job = state.jobs[J1]
    assert (job.state, job.requeue_reason, job.completing) == ("COMPLETING", "REQUEUE_EXIT", TWO)
    assert J1 in state.completing and J1 not in state.ended
    then(scenario.when(epilog(J1, 1, "n1")), epilog_done(J1, 1, "n1")).evolved()
    outcome = then(
        scenario.when(epilog(J1, 1, "n2")),
        epilog_done(J1, 1, "n2"),
        requeued(J1, 1, "REQUEUE_EXIT", begin_time_ms=AFTER_DELAY),
    )
    job = outcome.evolved().jobs[J1]
    assert (job.state, job.reason, job.hold, job.restart_count) == ("PENDING", "BeginTime", "", 1)
    assert job.batch_requeues == 0  # Slurm's job_hold_requeue does not touch batch_flag
    assert int(scenario.state.index.njobs.sum()) == 0


def test_a_job_requeued_by_its_exit_code_runs_again_with_a_new_run() -> None:
    scenario = given(nodes("n", 1), running(J1, 1, ("n1",), spec()), config=CODES)
    scenario.when(exited(J1, 1, "n1", 11)).evolved()
    scenario.when(epilog(J1, 1, "n1")).evolved()
    assert scenario.when(schedule_pass(), T0 + 60_000).matching(JobStarted) == []
    outcome = scenario.when(schedule_pass(), AFTER_DELAY)
    [start] = outcome.matching(JobStarted)
    assert start.restart_count == 1 and start.run_sluid != run_of(1)
    state = outcome.evolved()
    [launch] = [c for f in outcome.facts for c in node_commands(state, f)]
    assert isinstance(launch, LaunchRun)
    assert (launch.previous_run_sluid, launch.restart_count) == (run_of(1), 1)


def test_exit_zero_in_requeue_exit_requeues_a_completed_run() -> None:
    scenario = given(nodes("n", 1), running(J1, 1, ("n1",), spec()), config="RequeueExit: 0\n")
    then(scenario.when(exited(J1, 1, "n1", 0)), ended(J1, 1, "COMPLETED")).evolved()
    then(
        scenario.when(epilog(J1, 1, "n1")),
        epilog_done(J1, 1, "n1"),
        requeued(J1, 1, "REQUEUE_EXIT", begin_time_ms=AFTER_DELAY),
    )


def test_the_exit_status_of_a_signal_death_is_zero() -> None:
    """Slurm tests ``WEXITSTATUS``: a script killed by a signal has exit status 0."""
    scenario = given(nodes("n", 1), running(J1, 1, ("n1",), spec()), config="RequeueExit: 0\n")
    then(scenario.when(exited(J1, 1, "n1", 0, signal=9)), ended(J1, 1, "FAILED", signal=9))
    assert scenario.when(exited(J1, 1, "n1", 0, signal=9)).evolved().jobs[J1].is_completing


def test_a_failed_epilog_drains_its_node_and_the_job_is_still_requeued() -> None:
    scenario = given(nodes("n", 2), running(J1, 1, TWO, spec(nodes_min=2)), config=CODES)
    scenario.when(exited(J1, 1, "n1", 10)).evolved()
    then(
        scenario.when(epilog(J1, 1, "n1", ok=False, exit_code=2)),
        epilog_done(J1, 1, "n1", ok=False, detail="epilog exited 2"),
        state_changed("n1", "DRAIN", "Epilog error"),
    ).evolved()
    then(
        scenario.when(epilog(J1, 1, "n2")),
        epilog_done(J1, 1, "n2"),
        requeued(J1, 1, "REQUEUE_EXIT", begin_time_ms=AFTER_DELAY),
    )


def test_requeue_exit_requeues_do_not_count_toward_max_batch_requeue() -> None:
    scenario = given(
        nodes("n", 1), running(J1, 1, ("n1",), spec()), config=CODES + "MaxBatchRequeue: 1\n"
    )
    for attempt in range(1, 4):
        scenario.when(exit_now(scenario.state, 3)).evolved()
        [report] = epilogs_now(scenario.state)
        outcome = scenario.when(report)
        assert outcome.matching(JobPending) == []
        job = outcome.evolved().jobs[J1]
        assert (job.hold, job.batch_requeues, job.restart_count) == ("", 0, attempt)
        later = AFTER_DELAY + attempt * 200_000
        outcome = scenario.when(schedule_pass(), later)
        [start] = outcome.matching(JobStarted)
        assert start.restart_count == attempt
        outcome.evolved()


# -- RequeueExitHold -------------------------------------------------------------------------


def test_an_exit_code_in_requeue_exit_hold_requeues_the_job_held_until_released() -> None:
    scenario = given(nodes("n", 2), running(J1, 1, TWO, spec(nodes_min=2)), config=CODES)
    then(scenario.when(exited(J1, 1, "n1", 4)), ended(J1, 1, "FAILED", exit_code=4)).evolved()
    assert scenario.state.jobs[J1].requeue_reason == "SPECIAL_EXIT"
    scenario.when(epilog(J1, 1, "n2")).evolved()
    outcome = then(
        scenario.when(epilog(J1, 1, "n1")),
        epilog_done(J1, 1, "n1"),
        requeued(J1, 1, "SPECIAL_EXIT", held=True, begin_time_ms=AFTER_DELAY),
    )
    job = outcome.evolved().jobs[J1]
    assert (job.state, job.hold, job.reason, job.restart_count) == (
        "PENDING",
        "user",
        "JobHeldUser",
        1,
    )
    assert job.batch_requeues == 0
    later = AFTER_DELAY + 60_000
    held = scenario.when(schedule_pass(), later)
    assert held.matching(JobStarted) == []
    assert [p.reason for p in held.matching(JobPending)] in ([], ["JobHeldUser"])
    release = scenario.when(ReleaseJob(job_sluid=J1, user="alice"))
    then(release, JobReleased(**M, job_sluid=J1)).evolved()
    [start] = scenario.when(schedule_pass(), later).matching(JobStarted)
    assert start.job_sluid == J1 and start.restart_count == 1


def test_someone_else_cannot_release_a_special_exit_hold() -> None:
    scenario = given(nodes("n", 1), running(J1, 1, ("n1",), spec()), config=CODES)
    scenario.when(exited(J1, 1, "n1", 4)).evolved()
    scenario.when(epilog(J1, 1, "n1")).evolved()
    [refused] = scenario.when(ReleaseJob(job_sluid=J1, user="mallory")).facts
    assert isinstance(refused, JobRejected) and refused.reason == "AccessDenied"


def test_a_special_exit_job_can_be_cancelled_while_held() -> None:
    scenario = given(nodes("n", 1), running(J1, 1, ("n1",), spec()), config=CODES)
    scenario.when(exited(J1, 1, "n1", 4)).evolved()
    scenario.when(epilog(J1, 1, "n1")).evolved()
    outcome = then(
        scenario.when(CancelJob(job_sluid=J1)),
        JobEnded(**M, job_sluid=J1, job_id=1, run_sluid="", state="CANCELLED"),
    )
    assert outcome.evolved().jobs[J1].state == "CANCELLED"


# -- what the lists do not change ------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "signal", "state"),
    [(0, 0, "COMPLETED"), (1, 0, "FAILED"), (13, 0, "FAILED"), (0, 9, "FAILED")],
)
def test_other_exit_codes_end_the_job_as_before(code: int, signal: int, state: str) -> None:
    outcome = given(nodes("n", 2), running(J1, 1, TWO, spec(nodes_min=2)), config=CODES).when(
        exited(J1, 1, "n1", code, signal=signal)
    )
    then(outcome, ended(J1, 1, state, exit_code=code, signal=signal))
    _ends_for_good(outcome)


@pytest.mark.parametrize(("job_requeue", "requeue"), [("1", "no"), ("0", ""), ("0", "no")])
def test_a_job_that_may_not_be_requeued_ignores_the_lists(job_requeue: str, requeue: str) -> None:
    """Slurm: ``--no-requeue`` (or ``JobRequeue=0`` without ``--requeue``) supersedes both."""
    config = CODES + f"JobRequeue: {job_requeue}\n"
    for code in (3, 4):
        outcome = given(
            nodes("n", 1), running(J1, 1, ("n1",), spec(requeue=requeue)), config=config
        ).when(exited(J1, 1, "n1", code))
        then(outcome, ended(J1, 1, "FAILED", exit_code=code))
        _ends_for_good(outcome)


def test_with_jobrequeue_0_a_job_asking_for_requeue_follows_the_lists() -> None:
    scenario = given(
        nodes("n", 1),
        running(J1, 1, ("n1",), spec(requeue="yes")),
        config=CODES + "JobRequeue: 0\n",
    )
    scenario.when(exited(J1, 1, "n1", 4)).evolved()
    then(
        scenario.when(epilog(J1, 1, "n1")),
        epilog_done(J1, 1, "n1"),
        requeued(J1, 1, "SPECIAL_EXIT", held=True, begin_time_ms=AFTER_DELAY),
    )


@pytest.mark.parametrize("reason", ["CANCELLED", "TIMEOUT"])
def test_a_cancel_or_time_limit_in_progress_wins_over_the_exit_code(reason: str) -> None:
    scenario = given(
        nodes("n", 1),
        running(J1, 1, ("n1",), spec()),
        kill(J1, 1, reason, ("n1",)),
        config=CODES,
    )
    outcome = scenario.when(exited(J1, 1, "n1", 3))
    then(outcome, ended(J1, 1, reason, exit_code=3))
    _ends_for_good(outcome)


def test_the_expedite_flags_nonzero_exit_rule_wins_over_the_lists() -> None:
    scenario = given(
        nodes("n", 1),
        running(J1, 1, ("n1",), spec(requeue="expedite")),
        config=EXPEDITE_ON + CODES,
    )
    scenario.when(exited(J1, 1, "n1", 4)).evolved()
    assert scenario.state.jobs[J1].requeue_reason == "EXIT_NONZERO"
    then(
        scenario.when(epilog(J1, 1, "n1")),
        epilog_done(J1, 1, "n1"),
        requeued(J1, 1, "EXIT_NONZERO", held=True, begin_time_ms=0),
    )


def test_an_expedite_flag_job_whose_exit_zero_is_listed_is_requeued_eligible_at_once() -> None:
    scenario = given(
        nodes("n", 1),
        running(J1, 1, ("n1",), spec(requeue="expedite")),
        config=EXPEDITE_ON + "RequeueExit: 0\n",
    )
    scenario.when(exited(J1, 1, "n1", 0)).evolved()
    outcome = then(
        scenario.when(epilog(J1, 1, "n1")),
        epilog_done(J1, 1, "n1"),
        requeued(J1, 1, "REQUEUE_EXIT", begin_time_ms=0),
    )
    job = outcome.evolved().jobs[J1]
    assert job.reason == "None" and not job.expediting


def test_a_configuration_applied_later_decides_the_runs_that_end_after_it() -> None:
    scenario = given(nodes("n", 1), running(J1, 1, ("n1",), spec()))
    apply = ApplyConfig(config_sluid=run_of(60), kind="cluster", text=CODES, source="c.yaml")
    scenario.when(apply).evolved()
    scenario.when(exited(J1, 1, "n1", 12)).evolved()
    assert scenario.state.jobs[J1].requeue_reason == "REQUEUE_EXIT"


# -- replay ----------------------------------------------------------------------------------


class Ledger:
    """A shard deciding requests and folding its facts, keeping the ledger for replay."""

    def __init__(self, config: str, *facts: Fact | list[Fact]) -> None:
        self.config = parse_config(config)
        self.state = initial_state(SHARD, CLUSTER, self.config)
        self.log: list[Fact] = []
        for item in facts:
            for fact in item if isinstance(item, list) else [item]:
                self.fold([restamp(self.state, fact)])

    def fold(self, facts: list[Fact]) -> list[Fact]:
        for fact in facts:
            self.state = evolve(self.state, fact)
            self.log.append(fact)
        return facts

    def request(self, request: Request, now_ms: int = T0) -> list[Fact]:
        return self.fold(decide(self.state, request, now_ms))

    def pass_at(self, now_ms: int) -> list[Fact]:
        return self.fold(schedule(self.state, now_ms))


def _replayed(ledger: Ledger) -> ShardState:
    state = initial_state(SHARD, CLUSTER, ledger.config)
    for fact in ledger.log:
        state = evolve(state, fact)
    return state


def _restored(state: ShardState) -> ShardState:
    meta = pickle.loads(pickle.dumps(state_meta(state)))
    return restore_state(meta, dict(state.jobs), dict(state.nodes))


def test_replay_and_restore_give_the_same_state_through_both_requeues() -> None:
    ledger = Ledger(CODES, nodes("n", 2), running(J1, 1, TWO, spec(nodes_min=2)))
    steps: list[tuple[Request | None, int]] = [
        (exited(J1, 1, "n1", 3), T0),  # RequeueExit: COMPLETING
        (epilog(J1, 1, "n1"), T0),
        (epilog(J1, 1, "n2"), T0),  # requeued
        (None, AFTER_DELAY),  # runs again
    ]
    for request, now in steps:
        facts = ledger.pass_at(now) if request is None else ledger.request(request, now)
        assert facts
        assert fingerprint(_replayed(ledger)) == fingerprint(ledger.state)
        assert fingerprint(_restored(ledger.state)) == fingerprint(ledger.state)
    run2 = ledger.state.jobs[J1].run_sluid
    assert run2 and run2 != run_of(1)
    later = AFTER_DELAY + 1000
    ledger.request(exit_now(ledger.state, 4), later)  # RequeueExitHold
    for report in epilogs_now(ledger.state):
        ledger.request(report, later)
    job = ledger.state.jobs[J1]
    assert (job.hold, job.reason, job.restart_count) == ("user", "JobHeldUser", 2)
    assert fingerprint(_replayed(ledger)) == fingerprint(ledger.state)
    assert fingerprint(_restored(ledger.state)) == fingerprint(ledger.state)
    ledger.request(ReleaseJob(job_sluid=J1), later)
    ledger.pass_at(later + AFTER_DELAY)
    assert ledger.state.jobs[J1].is_running
    assert fingerprint(_replayed(ledger)) == fingerprint(ledger.state)
    assert fingerprint(_restored(ledger.state)) == fingerprint(ledger.state)
