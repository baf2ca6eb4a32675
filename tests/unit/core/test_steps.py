"""Job steps in the core (issue 15, item 2): StartStep → StepStarted or a named refusal, node
reports → StepTasksExited / StepEnded, the run's end and a node failure end open steps, and
the node commands each fact implies."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from scheduler import CancelJob, RequestDenied, node_commands
from scheduler.access.identity import Attributed, Identity
from scheduler.records import (
    KillStep,
    LaunchStep,
    ReportStepExit,
    StartStep,
    StepEnded,
    StepStarted,
    StepTasksExited,
)
from tests.unit.core.gwt import M, given, node_sluid, nodes, spec
from tests.unit.core.requeue_fixtures import J1, exited, node_failed, run_of, running

TWO = ("n1", "n2")
STEP = "s00DJXT1ZWS001"


def start(**changes: Any) -> StartStep:
    values: dict[str, Any] = {
        "job_sluid": J1, "run_sluid": run_of(1), "step_sluid": STEP, "user": "",
        "nodes": TWO, "tasks_per_node": (2, 1), "cpus_per_task": 1,
        "command": ("hostname",), "workdir": "/w", "env": {}, "io_address": "n1:4000",
        "io_token": "t"}
    return StartStep(**{**values, **changes})


def report(name: str, code: int = 0, signal: int = 0) -> ReportStepExit:
    return ReportStepExit(job_sluid=J1, run_sluid=run_of(1), step_sluid=STEP,
                          node_sluid=node_sluid(name), node_name=name, exit_code=code,
                          signal=signal)


def started(step_id: int = 0, step: str = STEP, **changes: Any) -> StepStarted:
    # the job holds 2 CPUs on each node (4 tasks on 2 nodes); a step holds them all (--whole)
    values: dict[str, Any] = {
        "nodes": TWO, "tasks_per_node": (2, 1), "alloc_cpus": (2, 2), "alloc_mem_mb": (0, 0),
        "alloc_gpus": (0, 0)}
    return StepStarted(**M, job_sluid=J1, job_id=1, run_sluid=run_of(1), step_sluid=step,
                       step_id=step_id, user="alice", cpus_per_task=1, command=("hostname",),
                       workdir="/w", env={}, io_address="n1:4000", io_token="t",
                       **{**values, **changes})


def ended(state: str, code: int = 0, reason: str = "", left: tuple[str, ...] = (),
          signal: int = 0) -> StepEnded:
    return StepEnded(**M, job_sluid=J1, job_id=1, run_sluid=run_of(1), step_sluid=STEP,
                     step_id=0, state=state, exit_code=code, signal=signal, reason=reason,
                     unfinished_nodes=left)


def tasks_exited(name: str, code: int = 0) -> StepTasksExited:
    return StepTasksExited(**M, job_sluid=J1, job_id=1, run_sluid=run_of(1), step_sluid=STEP,
                           step_id=0, node_name=name, exit_code=code, signal=0)


def two_node_job() -> list[Any]:
    return [nodes("n", 3), running(J1, 1, TWO, spec(user="alice", nodes_min=2, ntasks=4))]


def test_a_step_in_a_running_allocation_starts_with_the_next_step_id() -> None:
    scenario = given(*two_node_job())
    scenario.when(start()).then(started(0)).evolved()
    [job] = [j for j in scenario.state.jobs.values() if j.job_sluid == J1]
    assert [s.step_id for s in job.steps] == [0] and job.next_step_id == 1
    assert scenario.when(start()).facts == []  # the same step SLUID again: nothing
    # a second step beside the first shares its CPUs only with --overlap (it waits without:
    # tests/unit/core/test_step_alloc.py); it used to share them always
    scenario.when(start(step_sluid="s00DJXT1ZWS002", overlap=True)).then(
        started(1, "s00DJXT1ZWS002", overlap=True))


def test_another_sruns_step_under_the_same_sluid_is_refused_by_name_and_changes_nothing(
) -> None:
    # Two sruns of a job (``srun a & srun b &``) can mint the same step SLUID in the same
    # millisecond; the second is not a repeat of the first (its io_token is its own).
    scenario = given(*two_node_job())
    scenario.when(start()).then(started(0)).evolved()
    outcome = scenario.when(start(io_token="other", command=("date",)))
    [denial] = outcome.facts
    assert isinstance(denial, RequestDenied)
    assert (denial.request, denial.reason) == ("StartStep", "StepSluidInUse")
    assert denial.detail.endswith(f"(step {STEP})")
    [job] = [j for j in outcome.state.jobs.values() if j.job_sluid == J1]
    assert [(s.step_id, s.io_token) for s in job.steps] == [(0, "t")]


def test_nodes_outside_the_allocation_are_refused_and_nothing_starts() -> None:
    outcome = given(*two_node_job()).when(start(nodes=("n1", "n3")))
    [denial] = outcome.facts
    assert isinstance(denial, RequestDenied)
    assert (denial.request, denial.reason) == ("StartStep", "NotInAllocation")
    assert "n3" in denial.detail and node_commands(outcome.state, denial) == []
    assert denial.detail.endswith(f"(step {STEP})")  # each srun of a job tells its own


def test_a_step_needs_the_current_run_and_a_sane_shape() -> None:
    scenario = given(*two_node_job())
    reasons = {
        "stale run": start(run_sluid=run_of(7)),
        "no nodes": start(nodes=(), tasks_per_node=()),
        "zero tasks": start(tasks_per_node=(0, 1)),
        "counts off": start(tasks_per_node=(1,)),
        "no command": start(command=()),
        "input of no task": start(input="3"),
        "input unknown": start(input="some"),
        "input huge": start(input="9" * 5000),
    }
    got = {why: [type(f).__name__ + ":" + f.reason for f in scenario.when(r).facts]
           for why, r in reasons.items()}
    assert got == {"stale run": ["RequestDenied:NoSuchRun"],
                   "no nodes": ["RequestDenied:InvalidStep"],
                   "zero tasks": ["RequestDenied:InvalidStep"],
                   "counts off": ["RequestDenied:InvalidStep"],
                   "no command": ["RequestDenied:InvalidStep"],
                   "input of no task": ["RequestDenied:InvalidStep"],
                   "input unknown": ["RequestDenied:InvalidStep"],
                   "input huge": ["RequestDenied:InvalidStep"]}


def test_a_step_needing_more_cpus_on_a_node_than_the_job_holds_there_is_refused() -> None:
    """Slurm's ``ESLURM_TOO_MANY_REQUESTED_CPUS``: the job holds 2 CPUs on each node (4 tasks
    on 2 nodes); ``srun -n 8`` or ``srun -c 4`` in it asked for more and ran (found
    2026-12-07)."""
    scenario = given(*two_node_job())
    for request in (start(tasks_per_node=(4, 4)), start(tasks_per_node=(1, 1), cpus_per_task=4),
                    start(tasks_per_node=(2, 3))):
        [fact] = scenario.when(request).facts
        assert isinstance(fact, RequestDenied) and fact.reason == "TooManyRequestedCpus", fact
        assert fact.detail.startswith("More processors requested than permitted: ")
    for request in (start(tasks_per_node=(2, 2)), start(tasks_per_node=(1, 1), cpus_per_task=2)):
        assert [type(f) for f in scenario.when(request).facts] == [StepStarted]


def test_only_the_jobs_owner_starts_steps() -> None:
    scenario = given(*two_node_job())
    mallory = Identity(kind="munge", user="mallory", uid=1001)
    [denial] = scenario.when(Attributed(request=start(), identity=mallory)).facts
    assert isinstance(denial, RequestDenied) and denial.reason == "NotOwner"
    alice = Identity(kind="munge", user="alice", uid=1000)
    [fact] = scenario.when(Attributed(request=start(), identity=alice)).facts
    assert isinstance(fact, StepStarted)


def test_the_step_ends_when_every_node_reported_success() -> None:
    scenario = given(*two_node_job(), started())
    scenario.when(report("n1")).then(tasks_exited("n1")).evolved()
    assert scenario.when(report("n1")).facts == []  # reported once
    scenario.when(report("n2")).then(tasks_exited("n2"), ended("COMPLETED")).evolved()
    assert [j.steps for j in scenario.state.jobs.values()] == [()]


def test_a_failed_task_ends_the_step_and_kills_it_on_the_other_nodes() -> None:
    scenario = given(*two_node_job(), started())
    outcome = scenario.when(report("n2", 3))
    outcome.then(tasks_exited("n2", 3),
                 ended("FAILED", 3, "a task on n2 ended with exit code 3", ("n1",)))
    state = outcome.evolved()
    [kill] = node_commands(state, outcome.facts[-1])
    assert isinstance(kill, KillStep)
    assert (kill.node_name, kill.node_sluid, kill.step_sluid) == ("n1", node_sluid("n1"), STEP)


FENCED_WHY = "killed: NodeFenced: no heartbeat of node n2 was delivered for 7 s"


def test_a_fenced_steps_end_is_node_fail_not_failed_and_kills_it_on_the_other_nodes() -> None:
    """Issue: a step killed by the fence of a cut-off daemon was recorded FAILED (a task
    ended by SIGKILL); its end now says the node failed, as for a step on a DOWN node."""
    scenario = given(*two_node_job(), started())
    fenced = replace(report("n2", 0, 9), fenced=True, detail=FENCED_WHY)
    outcome = scenario.when(fenced)
    outcome.then(tasks_exited_signal("n2", 9),
                 ended("NODE_FAIL", 0, f"node n2 was fenced: its tasks were killed (signal 9) "
                                       f"({FENCED_WHY})", ("n1",), signal=9))
    state = outcome.evolved()
    [kill] = node_commands(state, outcome.facts[-1])
    assert isinstance(kill, KillStep) and kill.node_name == "n1"
    # even a fenced task that had exited 0 (it ended as the fence came) is the node's failure
    again = given(*two_node_job(), started()).when(replace(report("n1"), fenced=True))
    assert [f.state for f in again.facts if isinstance(f, StepEnded)] == ["NODE_FAIL"]


def tasks_exited_signal(name: str, signal: int) -> StepTasksExited:
    return StepTasksExited(**M, job_sluid=J1, job_id=1, run_sluid=run_of(1), step_sluid=STEP,
                           step_id=0, node_name=name, exit_code=0, signal=signal)


def test_step_started_launches_on_each_node_of_the_step() -> None:
    scenario = given(*two_node_job())
    outcome = scenario.when(start())
    state = outcome.evolved()
    launches = node_commands(state, outcome.facts[0])
    assert [type(c) for c in launches] == [LaunchStep, LaunchStep]
    assert [(c.node_name, c.node_sluid) for c in launches] == [
        ("n1", node_sluid("n1")), ("n2", node_sluid("n2"))]
    assert all(c.tasks_per_node == (2, 1) and c.io_address == "n1:4000" for c in launches)


def test_srun_s_input_travels_from_the_request_to_each_node_s_launch() -> None:
    for mode in ("all", "none", "2", "pty"):
        outcome = given(*two_node_job()).when(start(input=mode))
        [fact] = outcome.facts
        assert isinstance(fact, StepStarted) and fact.input == mode
        assert [c.input for c in node_commands(outcome.evolved(), fact)] == [mode, mode]


def test_a_failed_node_ends_the_steps_running_on_it() -> None:
    scenario = given(*two_node_job(), started())
    facts = scenario.when(node_failed("n2")).facts
    [step_end] = [f for f in facts if isinstance(f, StepEnded)]
    assert (step_end.state, step_end.reason) == ("NODE_FAIL", "node n2 failed")
    assert step_end.unfinished_nodes == TWO


def test_the_end_of_the_run_ends_its_open_steps() -> None:
    scenario = given(*two_node_job(), started())
    facts = scenario.when(exited(J1, 1, "n1", 0)).facts
    assert [type(f).__name__ for f in facts][-1] == "StepEnded"
    assert facts[-1].state == "CANCELLED"  # type: ignore[attr-defined]
    cancelled = scenario.when(CancelJob(job_sluid=J1, user="")).facts
    assert not [f for f in cancelled if isinstance(f, StepEnded)]  # a kill is asked first


# -- scancel ID.STEP and srun passing signals on ---------------------------------------------


def cancel_step(user: str = "alice", sig: int = 0, step: str = STEP) -> CancelJob:
    return CancelJob(job_sluid=J1, user=user, signal=sig, step_sluid=step)


def test_cancelling_a_step_ends_it_kills_it_where_it_runs_and_the_job_runs_on() -> None:
    scenario = given(*two_node_job(), started())
    scenario.when(report("n1")).then(tasks_exited("n1")).evolved()
    outcome = scenario.when(cancel_step())
    outcome.then(ended("CANCELLED", reason="cancelled by alice", left=("n2",)))
    state = outcome.evolved()
    [kill] = node_commands(state, outcome.facts[0])
    assert isinstance(kill, KillStep) and (kill.node_name, kill.step_sluid) == ("n2", STEP)
    job = state.jobs[J1]
    assert job.is_running and not job.kill_reason and job.steps == ()
    assert scenario.when(report("n2", 0, 15)).facts == []  # the killed tasks' late report


def test_a_signal_for_a_step_reaches_its_tasks_alone_on_the_nodes_still_running_them() -> None:
    from scheduler.records import RunSignalled, SignalRun

    scenario = given(*two_node_job(), started())
    scenario.when(report("n1")).then(tasks_exited("n1")).evolved()
    outcome = scenario.when(cancel_step(sig=10))
    [fact] = outcome.facts
    assert isinstance(fact, RunSignalled)
    assert (fact.step_sluid, fact.nodes, fact.signal, fact.scope) == (STEP, ("n2",), 10, "STEPS")
    state = outcome.evolved()
    [command] = node_commands(state, fact)
    assert isinstance(command, SignalRun)
    assert (command.node_name, command.step_sluid, command.signal) == ("n2", STEP, 10)
    assert state.jobs[J1].steps != ()  # the step runs on


def test_a_step_that_does_not_run_or_someone_else_s_is_refused_by_name() -> None:
    scenario = given(*two_node_job(), started())

    def refused(request: CancelJob) -> str:
        [fact] = scenario.when(request).facts
        assert isinstance(fact, RequestDenied) and fact.request == "CancelJob", fact
        return fact.reason

    assert refused(cancel_step(step="s00DJXT1ZWS999")) == "NoSuchStep"
    assert refused(cancel_step(user="bob")) == "NotOwner"
    assert refused(cancel_step(sig=99)) == "InvalidSignal"
    assert refused(cancel_step(user="bob", sig=10)) == "NotOwner"
    scenario.when(report("n1")).evolved()
    scenario.when(report("n2")).evolved()  # the step ended
    assert refused(cancel_step()) == "NoSuchStep"
