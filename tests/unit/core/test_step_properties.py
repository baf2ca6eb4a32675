"""Random histories of job steps (hypothesis): srun's asks, steps' ends, srun's cancels of a
waiting step. After every decision no node holds more of the job than it has, a whole step
shares no node with another step holding CPUs (it holds them all), a step waits only while
another holds room, and replaying the ledger folds the same steps."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler import CancelJob
from scheduler.jobs.step_alloc import held_by_steps
from scheduler.records import Fact, ReportStepExit, StartStep
from tests.unit.core import gwt
from tests.unit.core.requeue_fixtures import J1, run_of, running

TWO = ("n1", "n2")
SHARE = (2, 1000, 2)  # the job's CPUs, MB and GPUs on each node

asks = st.fixed_dictionaries({
    "names": st.sampled_from([("n1",), ("n2",), TWO]),
    "tasks": st.integers(1, 2), "exact": st.booleans(), "overlap": st.booleans(),
    "pick": st.booleans(), "mem": st.sampled_from([0, 400, 800]),
    "gpus": st.sampled_from([-1, 0, 1]),
})
actions = st.lists(st.one_of(st.tuples(st.just("start"), asks),
                             st.tuples(st.just("end"), st.integers(0, 20)),
                             st.tuples(st.just("cancel"), st.integers(0, 20))),
                   max_size=25)


def _setup() -> list[Any]:
    return [gwt.nodes("n", 2, cpus=4, mem_mb=4000, gpus=2),
            running(J1, 1, TWO, gwt.spec(nodes_min=2, ntasks=4, mem_per_node_mb=1000,
                                         gpus_per_node=2))]


def _job(scenario: gwt.Scenario) -> Any:
    return next(j for j in scenario.state.jobs.values() if j.job_sluid == J1)


def _request(kind: str, arg: Any, n: int, scenario: gwt.Scenario) -> Any:
    job = _job(scenario)
    if kind == "start":
        names = arg["names"]
        return StartStep(job_sluid=J1, run_sluid=run_of(1), step_sluid=f"s00DJXT1ZW{n:04d}",
                         user="", nodes=names, tasks_per_node=(arg["tasks"],) * len(names),
                         cpus_per_task=1, command=("x",), workdir="/w", env={},
                         io_address="h:1", io_token=f"t{n}", exact=arg["exact"],
                         overlap=arg["overlap"], pick_nodes=arg["pick"],
                         mem_per_node_mb=arg["mem"], gpus_per_node=arg["gpus"])
    running_ = [s for s in job.steps if s.waiting is None]
    waiting = [s for s in job.steps if s.waiting is not None]
    if kind == "end" and running_:
        step = running_[arg % len(running_)]
        name = next(n for n in step.nodes if n not in step.exited)
        return ReportStepExit(job_sluid=J1, run_sluid=run_of(1), step_sluid=step.step_sluid,
                              node_sluid=gwt.node_sluid(name), node_name=name, exit_code=0,
                              signal=0)
    if kind == "cancel" and waiting:
        return CancelJob(job_sluid=J1, step_sluid=waiting[arg % len(waiting)].step_sluid)
    return None


def _check(scenario: gwt.Scenario) -> None:
    job = _job(scenario)
    steps = job.steps
    for name, held in held_by_steps(steps).items():
        assert all(h <= s for h, s in zip(held, SHARE, strict=True)), (name, held, steps)
    if any(s.waiting is not None for s in steps):  # it waits only for room another holds
        assert any(s.waiting is None and not s.overlap for s in steps), steps
    ids = [s.step_id for s in steps if s.waiting is None]
    assert len(set(ids)) == len(ids) and all(i < job.next_step_id for i in ids)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(actions)
def test_steps_never_overcommit_their_job_and_a_replay_folds_the_same_steps(
    history: list[tuple[str, Any]],
) -> None:
    scenario = gwt.given(*_setup())
    ledger: list[Fact] = []
    for n, (kind, arg) in enumerate(history):
        request = _request(kind, arg, n, scenario)
        if request is None:
            continue
        outcome = scenario.when(request)
        outcome.evolved()
        ledger += outcome.facts
        _check(scenario)
    replayed = gwt.given(*_setup(), ledger)
    mine, theirs = _job(scenario), _job(replayed)
    assert [(s.step_sluid, s.step_id, s.nodes, s.cpus, s.waiting is None) for s in mine.steps] \
        == [(s.step_sluid, s.step_id, s.nodes, s.cpus, s.waiting is None) for s in theirs.steps]
    assert mine.next_step_id == theirs.next_step_id
