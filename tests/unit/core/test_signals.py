"""Signals to running jobs in the core: ``scancel -s`` (a ``CancelJob`` with a signal) →
``RunSignalled`` or a named ``RequestDenied``; the ``--signal`` warning decided by the
scheduling pass from its time, once per run (also after a replay); ``SignalRun`` per node
derived from the fact."""

from __future__ import annotations

from typing import Any

from scheduler import (
    CancelJob,
    ClusterConfig,
    JobRejected,
    JobSpec,
    JobStarted,
    RegisterNode,
    RequestDenied,
    RunKillRequested,
    RunSignalled,
    SchedulerConfig,
    SubmitJob,
    decide,
    evolve,
    initial_state,
    node_commands,
    schedule,
    schedule_with_plan,
)
from scheduler.access.identity import Identity
from scheduler.records import SignalRun
from tests.unit.core.gwt import T0, M, at, given, node_sluid, nodes, schedule_pass, sluid, spec
from tests.unit.core.requeue_fixtures import J1, J2, epilog, exited, kill, run_of, running
from tests.unit.core.test_authz import ALICE, BOB, as_, running_job
from tests.unit.core.test_foundation import started

TWO = ("n1", "n2")
OPERATORS = "Operators: [root]\n"
LIMIT_S = 300


def signal(sig: int = 10, scope: str = "BATCH", user: str = "alice", job: str = J1) -> CancelJob:
    return CancelJob(job_sluid=job, user=user, signal=sig, signal_scope=scope)


def signalled(sig: int = 10, scope: str = "BATCH", reason: str = "REQUESTED",
              requester: str = "alice", time_ms: int = T0) -> RunSignalled:
    return RunSignalled(**at(time_ms), job_sluid=J1, run_sluid=run_of(1), nodes=TWO, signal=sig,
                        scope=scope, reason=reason, requester=requester)


def two_node_job(**fields: Any) -> list[Any]:
    return [nodes("n", 2), running(J1, 1, TWO, spec(user="alice", nodes_min=2, **fields))]


def limited_job(signal_spec: str) -> list[Any]:
    """A two-node job with a 300 s limit and ``--signal``, started at T0."""
    job_spec = spec(user="alice", nodes_min=2, time_limit_s=LIMIT_S, signal=signal_spec)
    [queued, _started, *announced] = running(J1, 1, TWO, job_spec)
    return [nodes("n", 2), queued, started(J1, 1, TWO, time_limit_s=LIMIT_S), *announced]


def denial(outcome: Any) -> tuple[str, str]:
    [fact] = outcome.facts
    assert isinstance(fact, RequestDenied), fact
    return fact.request, fact.reason


# -- scancel -s ---------------------------------------------------------------------------


def test_the_owner_signals_a_running_job_which_keeps_running() -> None:
    outcome = given(*two_node_job()).when(signal(10, "BATCH")).then(signalled(10, "BATCH"))
    state = outcome.evolved()
    job = state.jobs[J1]
    assert job.is_running and not job.kill_reason and not job.limit_signalled


def test_each_node_of_the_run_gets_one_signal_run_naming_the_fact() -> None:
    outcome = given(*two_node_job()).when(signal(12, "FULL"))
    [fact] = outcome.facts
    state = outcome.evolved()
    commands = node_commands(state, fact)
    assert [type(c) for c in commands] == [SignalRun, SignalRun]
    assert [(c.node_name, c.signal, c.scope, c.signal_sluid, c.run_sluid) for c in commands] == [
        (n, 12, "FULL", fact.event_sluid, run_of(1)) for n in TWO]


def test_the_default_scope_is_the_steps() -> None:
    given(*two_node_job()).when(signal(15, "")).then(signalled(15, "STEPS"))


def test_another_user_may_not_signal_but_an_operator_may() -> None:
    scenario = given(*two_node_job(), config=OPERATORS)
    assert denial(scenario.when(signal(user="bob"))) == ("CancelJob", "NotOwner")
    scenario.when(signal(user="root")).then(signalled(requester="root"))


def test_a_pending_job_is_refused_as_slurm_does() -> None:
    outcome = given(nodes("n", 1), running(J1, 1, ("n1",), spec())[0]).when(signal())
    assert denial(outcome) == ("CancelJob", "JobPending")
    assert "Job is pending execution" in outcome.facts[0].detail


def test_a_job_being_killed_or_ended_is_not_running() -> None:
    killing = given(*two_node_job(), kill(J1, 1, "CANCELLED", TWO))
    assert denial(killing.when(signal())) == ("CancelJob", "JobNotRunning")
    assert "already completing or completed" in killing.when(signal()).facts[0].detail


def test_an_invalid_signal_or_scope_is_refused_by_the_core() -> None:
    scenario = given(*two_node_job())
    for request in (signal(65), signal(-3), signal(10, "SOME")):
        assert denial(scenario.when(request)) == ("CancelJob", "InvalidSignal")


def test_sigkill_is_a_cancel_as_in_slurm() -> None:
    given(*two_node_job()).when(signal(9)).then_kinds(RunKillRequested)


def test_a_signal_refusal_or_an_unknown_job_sends_no_command() -> None:
    outcome = given(*two_node_job()).when(signal(user="bob"))
    assert node_commands(outcome.evolved(), outcome.facts[0]) == []
    given(*two_node_job()).when(signal(job=J2)).then_nothing()


# -- sbatch --signal ----------------------------------------------------------------------


def passes(scenario: Any, *times_ms: int) -> list[list[Any]]:
    """A scheduling pass at each time, its facts folded before the next."""
    out = []
    for now in times_ms:
        outcome = scenario.when(schedule_pass(), now)
        scenario.state = outcome.evolved()
        out.append([f for f in outcome.facts if isinstance(f, RunSignalled | RunKillRequested)])
    return out


def test_the_warning_comes_at_the_first_pass_seconds_before_the_limit_and_once() -> None:
    scenario = given(*limited_job("B:USR1@90"))
    due = T0 + (LIMIT_S - 90) * 1000
    before, at_due, after = passes(scenario, due - 1, due, due + 5_000)
    assert before == [] and after == []
    [warning] = at_due
    assert (warning.signal, warning.scope, warning.reason, warning.requester) == (
        10, "BATCH", "TIME_LIMIT", "")
    assert scenario.state.jobs[J1].limit_signalled
    [[timeout]] = passes(scenario, T0 + LIMIT_S * 1000)
    assert isinstance(timeout, RunKillRequested) and timeout.reason == "TIMEOUT"


def test_after_a_replay_of_the_ledger_the_warning_is_not_sent_again() -> None:
    scenario = given(*limited_job("USR2@60"))
    due = T0 + (LIMIT_S - 60) * 1000
    [[warning]] = passes(scenario, due)
    assert (warning.signal, warning.scope) == (12, "STEPS")
    replayed = given(*limited_job("USR2@60"), warning)  # the ledger folded again
    assert replayed.state.jobs[J1].limit_signalled
    assert passes(replayed, due + 1_000) == [[]]


def test_a_replay_without_the_fact_still_sends_it_the_warning_is_not_lost() -> None:
    scenario = given(*limited_job("USR1"))  # the shard restarted before deciding it
    [[warning]] = passes(scenario, T0 + LIMIT_S * 1000 - 30_000)  # late: still sent
    assert warning.signal == 10 and warning.scope == "STEPS"  # default @60


def test_no_warning_without_a_time_limit_or_for_a_run_being_killed() -> None:
    unlimited = given(*two_node_job(signal="B:USR1@90"))
    assert passes(unlimited, T0 + 10**9) == [[]]
    killed = given(*limited_job("B:USR1@90"), kill(J1, 1, "CANCELLED", TWO))
    assert passes(killed, T0 + (LIMIT_S - 10) * 1000) == [[]]


def test_a_requeued_run_gets_its_own_warning() -> None:
    scenario = given(*limited_job("B:USR1@90"), config="RequeueExit: 11\n")
    [[first]] = passes(scenario, T0 + 210_000)
    scenario.state = scenario.when(exited(J1, 1, "n1", 11), T0 + 211_000).evolved()
    for name in TWO:
        scenario.state = scenario.when(epilog(J1, 1, name), T0 + 212_000).evolved()
    start = scenario.when(schedule_pass(), T0 + 400_000)
    [restart] = start.matching(JobStarted)
    scenario.state = start.evolved()
    assert not scenario.state.jobs[J1].limit_signalled
    [[again]] = passes(scenario, restart.time_ms + (LIMIT_S - 90) * 1000)
    assert again.run_sluid == restart.run_sluid != first.run_sluid == run_of(1)


def test_an_invalid_signal_spec_is_refused_at_submission() -> None:
    outcome = given(nodes("n", 1)).when(
        SubmitJob(job_sluid=sluid(5), spec=spec(signal="B:NOPE@90")))
    [fact] = outcome.facts
    assert isinstance(fact, JobRejected) and fact.reason == "InvalidSignal"


def test_meta_is_the_passes_own() -> None:
    scenario = given(*limited_job("B:USR1@90"))
    outcome = scenario.when(schedule_pass(), T0 + 250_000)
    [warning] = outcome.matching(RunSignalled)
    assert warning.time_ms == T0 + 250_000 and warning.shard_seq == scenario.state.shard_seq + 1
    assert M["shard"] == warning.shard


# -- with credentials (AuthRequired): authorized exactly as a cancel -------------------------


def test_with_credentials_the_owner_and_an_operator_signal_and_another_user_may_not() -> None:
    request = CancelJob(job_sluid=J1, signal=10, signal_scope="BATCH")
    refused = running_job().when(as_(BOB, request)).facts
    assert [(f.reason, f.requester) for f in refused] == [("NotOwner", "bob")]
    assert "bob may not signal job" in refused[0].detail
    forged = running_job().when(as_(BOB, CancelJob(job_sluid=J1, user="alice", signal=10)))
    assert [f.reason for f in forged.facts] == ["UserMismatch"]
    [owner] = running_job().when(as_(ALICE, request)).facts
    assert isinstance(owner, RunSignalled) and owner.requester == "alice"
    [operator] = running_job().when(as_(Identity(user="olga", kind="jwt"), request)).facts
    assert isinstance(operator, RunSignalled) and operator.requester == ""  # an operator acts
    # as the system (the authorization passes its request on without a user)


def test_a_carried_pass_still_sends_the_warning_and_keeps_carrying() -> None:
    """The pass carried on (only new jobs walked) decides the warning as a whole pass does."""
    def apply(facts: list[Any]) -> None:
        nonlocal state
        for fact in facts:
            state = evolve(state, fact)

    config = ClusterConfig(scheduler=SchedulerConfig(policy="easy", bf_resolution_s=1))
    state = initial_state("carry", 5, config)
    for i in range(2):
        apply(decide(state, RegisterNode(node_sluid=node_sluid(f"n{i}"), name=f"n{i}", cpus=1,
                                         mem_mb=1000), T0))

    def submit(n: int, nodes: int, at: int, **fields: Any) -> None:
        spec = JobSpec(user="u", nodes_min=nodes, ntasks=nodes, time_limit_s=3600,
                       command=("x",), **fields)
        apply(decide(state, SubmitJob(job_sluid=sluid(n, at), spec=spec), at))

    def run_pass(at: int) -> list[Any]:
        whole = schedule_with_plan(state, at).facts
        facts = schedule(state, at)
        assert facts == whole
        apply(facts)
        return facts

    submit(1, 1, T0, signal="B:USR1@600")  # warned 3000 s after its start
    run_pass(T0)
    submit(2, 2, T0 + 1_000)  # blocked behind job 1: the pass is kept
    run_pass(T0 + 1_000)
    kept = state.carried
    assert kept is not None
    due = T0 + 3_000_000
    submit(3, 2, due)  # a new job only: the next pass is carried on
    facts = run_pass(due)
    assert [(f.signal, f.scope, f.reason) for f in facts if isinstance(f, RunSignalled)] == [
        (10, "BATCH", "TIME_LIMIT")]
    assert state.carried is kept  # carried on, not replaced


def test_a_shard_rebuilt_from_its_stored_rows_neither_loses_nor_repeats_the_warning() -> None:
    """A restarted worker loads the jobs (pickled rows) and files them again."""
    from scheduler.shard.state import ShardState

    scenario = given(*limited_job("B:USR1@90"))
    assert scenario.state.signalling == {J1}
    reloaded = ShardState(scenario.state.meta, dict(scenario.state.jobs),
                          dict(scenario.state.nodes))
    assert reloaded.signalling == {J1}  # not lost
    [[warning]] = passes(scenario, T0 + 250_000)
    assert scenario.state.signalling == set()
    reloaded = ShardState(scenario.state.meta, dict(scenario.state.jobs),
                          dict(scenario.state.nodes))
    assert reloaded.signalling == set() and reloaded.jobs[J1].limit_signalled  # not repeated
    assert warning.run_sluid == run_of(1)


def test_a_job_on_the_kubernetes_bridge_s_nodes_cannot_be_signalled() -> None:
    import dataclasses

    from scheduler.records import NodeRegistered
    from scheduler.shard.model import KUBERNETES_FEATURE

    kube_nodes = [dataclasses.replace(f, features=(KUBERNETES_FEATURE,))
                  if isinstance(f, NodeRegistered) else f for f in nodes("n", 2)]
    job = running(J1, 1, TWO, spec(user="alice", nodes_min=2))
    outcome = given(*kube_nodes, *job).when(signal(10, "BATCH"))
    assert denial(outcome) == ("CancelJob", "SignalUnsupported")
    assert node_commands(outcome.evolved(), outcome.facts[0]) == []
    given(*two_node_job()).when(signal(10, "BATCH")).then(signalled(10, "BATCH"))  # elsewhere
