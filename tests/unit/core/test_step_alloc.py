"""Steps do not share their job's resources (Slurm 20.11+): the step allocator and waiting steps.

A step holds all the job's CPUs on its nodes (``--whole``, the default) or only what its tasks
ask (``--exact``); ``--mem`` and GPUs count against what the job's other steps leave;
``--overlap`` shares everything. A step that fits the job but not now waits (``StepPending``)
and starts (``StepStarted``, ``waited``) in the decision that ends the step holding its room;
one that never fits is refused with Slurm's error. Replaying the ledger gives the same steps."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler import CancelJob, RequestDenied, node_commands
from scheduler.jobs.step_alloc import BUSY, Never, Placement, StepAsk, place
from scheduler.records import (
    Fact,
    LaunchStep,
    ReportJobExit,
    ReportStepExit,
    StartStep,
    StepEnded,
    StepPending,
    StepStarted,
)
from tests.unit.core.gwt import Scenario, given, node_sluid, nodes, spec
from tests.unit.core.requeue_fixtures import J1, run_of, running

ONE = ("n1",)
TWO = ("n1", "n2")


def sid(n: int) -> str:
    return f"s00DJXT1ZWS{n:03d}"


def ask(n: int, tasks: tuple[int, ...] = (1,), names: tuple[str, ...] = ONE,
        **changes: Any) -> StartStep:
    """srun's request for step ``n``: one task on n1 unless told."""
    values: dict[str, Any] = {
        "job_sluid": J1, "run_sluid": run_of(1), "step_sluid": sid(n), "user": "",
        "nodes": names, "tasks_per_node": tasks, "cpus_per_task": 1,
        "command": ("sleep", "9"), "workdir": "/w", "env": {}, "io_address": "h:1",
        "io_token": f"t{n}"}
    return StartStep(**{**values, **changes})


def done(n: int, name: str = "n1", code: int = 0) -> ReportStepExit:
    return ReportStepExit(job_sluid=J1, run_sluid=run_of(1), step_sluid=sid(n),
                          node_sluid=node_sluid(name), node_name=name, exit_code=code,
                          signal=0)


def two_cpu_job(**job: Any) -> Scenario:
    """Job 1 holds 2 CPUs (and what ``job`` asks) of n1, a node of 4 CPUs, 4 GB and 2 GPUs."""
    return given(nodes("n", 1, cpus=4, mem_mb=4000, gpus=2),
                 running(J1, 1, ONE, spec(ntasks=2, **job)))


def decide_fold(scenario: Scenario, request: Any) -> list[Fact]:
    """Decide ``request`` and fold its facts; the facts."""
    outcome = scenario.when(request)
    outcome.evolved()
    return outcome.facts


def only(facts: list[Fact], kind: type) -> Any:
    [fact] = [f for f in facts if isinstance(f, kind)]
    return fact


def test_two_exact_one_task_steps_run_side_by_side_and_a_third_waits_for_one_to_end() -> None:
    scenario = two_cpu_job()
    first = only(decide_fold(scenario, ask(1, exact=True)), StepStarted)
    second = only(decide_fold(scenario, ask(2, exact=True)), StepStarted)
    assert (first.step_id, first.alloc_cpus, second.step_id, second.alloc_cpus) == (
        0, (1,), 1, (1,))
    waiting = decide_fold(scenario, ask(3, exact=True))
    assert [type(f) for f in waiting] == [StepPending]
    assert waiting[0].reason == BUSY and waiting[0].exact
    [job] = [j for j in scenario.state.jobs.values() if j.job_sluid == J1]
    assert [(s.step_id, s.waiting is not None) for s in job.steps] == [
        (0, False), (1, False), (-1, True)]

    overlap = only(decide_fold(scenario, ask(4, overlap=True)), StepStarted)
    assert overlap.step_id == 2 and overlap.overlap  # at once, beside the full job

    ended = decide_fold(scenario, done(2))  # the second ends: the third starts in its place
    assert [type(f).__name__ for f in ended] == ["StepTasksExited", "StepEnded", "StepStarted"]
    third = ended[2]
    assert (third.step_sluid, third.step_id, third.alloc_cpus, third.waited) == (
        sid(3), 3, (1,), True)
    commands = node_commands(scenario.state, third)
    assert [(type(c), c.node_name, c.cpus) for c in commands] == [(LaunchStep, "n1", 1)]


def test_a_step_holds_all_the_jobs_cpus_by_default_so_steps_beside_it_wait() -> None:
    scenario = two_cpu_job()
    whole = only(decide_fold(scenario, ask(1)), StepStarted)
    assert whole.alloc_cpus == (2,)  # --whole: the job's CPUs on the node, for one task
    assert [type(f) for f in decide_fold(scenario, ask(2, exact=True))] == [StepPending]
    assert [type(f) for f in decide_fold(scenario, ask(3))] == [StepPending]
    ended = decide_fold(scenario, done(1))
    # the exact step starts; the whole one still waits (a CPU of the node is held)
    assert [(type(f).__name__, getattr(f, "step_sluid", "")) for f in ended][-1] == (
        "StepStarted", sid(2))
    assert sum(isinstance(f, StepStarted) for f in ended) == 1
    assert [type(f) for f in decide_fold(scenario, done(2))][-1] is StepStarted  # then it


def test_an_exact_step_beside_an_exact_one_takes_what_is_left_and_a_whole_one_waits() -> None:
    scenario = two_cpu_job()
    decide_fold(scenario, ask(1, exact=True))
    assert [type(f) for f in decide_fold(scenario, ask(2))] == [StepPending]
    assert only(decide_fold(scenario, ask(3, exact=True)), StepStarted).alloc_cpus == (1,)


@pytest.mark.parametrize(("request_", "reason", "words"), [
    (ask(1, tasks=(3,), exact=True), "TooManyRequestedCpus",
     "More processors requested than permitted"),
    (ask(1, cpus_per_task=3), "TooManyRequestedCpus", "More processors requested than permitted"),
    (ask(1, mem_per_node_mb=1500), "InvalidTaskMemory", "Memory required by task is not available"),
    (ask(1, gpus_per_node=3), "InvalidGres", "Invalid generic resource (gres) specification"),
])
def test_a_step_that_can_never_fit_the_job_is_refused_at_once_with_slurms_error(
    request_: StartStep, reason: str, words: str,
) -> None:
    scenario = two_cpu_job(mem_per_node_mb=1000, gpus_per_node=2)
    decide_fold(scenario, ask(9))  # a step holds the whole job: refusal, not a wait
    [refusal] = decide_fold(scenario, request_)
    assert isinstance(refusal, RequestDenied) and refusal.reason == reason
    assert refusal.detail.startswith(words) and refusal.detail.endswith(f"(step {sid(1)})")


def test_memory_asked_by_steps_counts_against_the_jobs_and_none_asked_holds_none() -> None:
    scenario = two_cpu_job(mem_per_node_mb=1000)
    first = only(decide_fold(scenario, ask(1, exact=True, mem_per_node_mb=600)), StepStarted)
    assert first.alloc_mem_mb == (600,)
    assert [type(f) for f in decide_fold(
        scenario, ask(2, exact=True, mem_per_node_mb=600))] == [StepPending]
    free = only(decide_fold(scenario, ask(3, exact=True, mem_per_node_mb=400)), StepStarted)
    assert free.alloc_mem_mb == (400,)


def test_gpus_default_to_the_jobs_all_and_count_against_the_other_steps() -> None:
    scenario = two_cpu_job(gpus_per_node=2)
    first = only(decide_fold(scenario, ask(1, exact=True)), StepStarted)
    assert first.alloc_gpus == (2,)  # no GPUs asked: the job's, as Slurm copies its GRES
    assert [type(f) for f in decide_fold(
        scenario, ask(2, exact=True, gpus_per_node=1))] == [StepPending]
    none = only(decide_fold(scenario, ask(3, exact=True, gpus_per_node=0)), StepStarted)
    assert none.alloc_gpus == (0,)  # --gres=none: no GPU, and no wait


def test_gpu_steps_split_the_jobs_gpus_and_the_node_command_says_how_many() -> None:
    scenario = two_cpu_job(gpus_per_node=2)
    one = only(decide_fold(scenario, ask(1, exact=True, gpus_per_node=1)), StepStarted)
    other = only(decide_fold(scenario, ask(2, exact=True, gpus_per_node=1)), StepStarted)
    assert one.alloc_gpus == other.alloc_gpus == (1,)
    [launch] = node_commands(scenario.state, other)
    assert isinstance(launch, LaunchStep) and (launch.cpus, launch.gpus) == (1, 1)


def test_the_shard_picks_free_nodes_for_an_srun_that_named_none() -> None:
    scenario = given(nodes("n", 2, cpus=1), running(J1, 1, TWO, spec(nodes_min=2, ntasks=2)))
    picked = [only(decide_fold(scenario, ask(n, exact=True, pick_nodes=True)), StepStarted)
              for n in (1, 2)]
    assert [s.nodes for s in picked] == [("n1",), ("n2",)]  # srun guessed n1 both times
    assert [type(f) for f in decide_fold(
        scenario, ask(3, exact=True, pick_nodes=True))] == [StepPending]
    freed = decide_fold(scenario, done(2, "n2"))
    assert only(freed, StepStarted).nodes == ("n2",)


def test_a_whole_step_on_named_nodes_waits_only_for_steps_on_those_nodes() -> None:
    scenario = given(nodes("n", 2, cpus=1), running(J1, 1, TWO, spec(nodes_min=2, ntasks=2)))
    decide_fold(scenario, ask(1))
    assert only(decide_fold(scenario, ask(2, names=("n2",))), StepStarted).nodes == ("n2",)
    assert [type(f) for f in decide_fold(scenario, ask(3, names=TWO, tasks=(1, 1)))] == [
        StepPending]


def test_srun_cancelling_its_waiting_step_ends_it_without_any_kill_and_a_signal_is_refused(
) -> None:
    scenario = two_cpu_job()
    decide_fold(scenario, ask(1))
    decide_fold(scenario, ask(2))
    refused = decide_fold(scenario, CancelJob(job_sluid=J1, step_sluid=sid(2), signal=10))
    assert isinstance(refused[0], RequestDenied) and refused[0].reason == "NoSuchStep"
    [ended] = decide_fold(scenario, CancelJob(job_sluid=J1, step_sluid=sid(2)))
    assert isinstance(ended, StepEnded) and (ended.state, ended.step_id) == ("CANCELLED", -1)
    assert node_commands(scenario.state, ended) == []
    assert [type(f).__name__ for f in decide_fold(scenario, done(1))] == [
        "StepTasksExited", "StepEnded"]  # nothing left to start


def test_the_end_of_the_run_ends_its_waiting_steps_cancelled() -> None:
    scenario = two_cpu_job()
    decide_fold(scenario, ask(1))
    decide_fold(scenario, ask(2))
    facts = decide_fold(scenario, ReportJobExit(
        job_sluid=J1, run_sluid=run_of(1), node_sluid=node_sluid("n1"), node_name="n1",
        exit_code=0))
    ends = {f.step_sluid: (f.state, f.step_id) for f in facts if isinstance(f, StepEnded)}
    assert ends == {sid(1): ("CANCELLED", 0), sid(2): ("CANCELLED", -1)}
    assert not any(isinstance(f, StepStarted) for f in facts)


def test_a_replay_of_the_ledger_folds_the_same_steps_and_re_deciding_gives_the_same_facts(
) -> None:
    def play() -> tuple[list[Fact], Any]:
        scenario = two_cpu_job()
        ledger: list[Fact] = []
        for request in (ask(1, exact=True), ask(2, exact=True), ask(3, exact=True),
                        ask(4), done(1), done(3), done(2)):
            ledger += decide_fold(scenario, request)
        return ledger, scenario.state

    ledger, state = play()
    again, _ = play()
    assert again == ledger  # the same decisions, ids and SLUIDs
    replayed = given(nodes("n", 1, cpus=4, mem_mb=4000, gpus=2),
                     running(J1, 1, ONE, spec(ntasks=2)), ledger)
    started_ids = [(f.step_sluid, f.step_id, f.waited) for f in ledger
                   if isinstance(f, StepStarted)]
    assert started_ids == [(sid(1), 0, False), (sid(2), 1, False), (sid(3), 2, True),
                           (sid(4), 3, True)]
    [job] = [j for j in state.jobs.values() if j.job_sluid == J1]
    assert [(s.step_sluid, s.step_id) for s in job.steps] == [(sid(4), 3)]  # whole, last
    [folded] = [j for j in replayed.state.jobs.values() if j.job_sluid == J1]
    assert folded.steps == job.steps and folded.next_step_id == job.next_step_id == 4


def test_place_answers_busy_never_or_a_placement_from_the_job_and_its_other_steps() -> None:
    scenario = two_cpu_job()
    [job] = [j for j in scenario.state.jobs.values() if j.job_sluid == J1]
    exact = StepAsk(nodes=ONE, tasks_per_node=(2,), cpus_per_task=1, exact=True)
    assert place(job, exact, ()) == Placement(ONE, (2,), (2,), (0,), (0,))
    assert isinstance(place(job, StepAsk(ONE, (3,), 1, exact=True), ()), Never)
    decide_fold(scenario, ask(1, exact=True))
    [job] = [j for j in scenario.state.jobs.values() if j.job_sluid == J1]
    assert place(job, exact, job.steps) == BUSY
    assert place(job, StepAsk(ONE, (2,), 1, exact=True, overlap=True), job.steps) == Placement(
        ONE, (2,), (2,), (0,), (0,))


def test_an_exclusive_jobs_step_gets_the_gpus_the_job_asked_not_the_nodes_others() -> None:
    scenario = given(nodes("n", 1, cpus=4, gpus=2), running(J1, 1, ONE, spec(exclusive=True)))
    plain = only(decide_fold(scenario, ask(1, overlap=True)), StepStarted)
    assert (plain.alloc_cpus, plain.alloc_gpus) == ((4,), (0,))  # the job asked no GPU
    asked = only(decide_fold(scenario, ask(2, exact=True, gpus_per_node=2)), StepStarted)
    assert asked.alloc_gpus == (2,)  # but they are the job's: a step may ask for them


def test_a_step_end_walks_the_jobs_steps_once_however_many_sruns_wait(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A loop of ``srun ... &`` leaves thousands of steps waiting in one job. The step end that
    frees room counted what the running steps hold once per waiting step (a walk of every
    step each time: 0.7 s of the shard's time per step end with 8,000 waiting, for every job
    of the shard); it counts it once and keeps it as the waiting steps start."""
    from scheduler.jobs import step_alloc, step_waits

    scenario = two_cpu_job()
    only(decide_fold(scenario, ask(1)), StepStarted)  # holds the job's 2 CPUs
    for n in range(2, 202):
        assert [type(f) for f in decide_fold(scenario, ask(n, exact=True))] == [StepPending]
    walks = 0
    real = step_alloc.held_by_steps

    def counted(steps: Any) -> Any:
        nonlocal walks
        walks += 1
        return real(steps)

    monkeypatch.setattr(step_alloc, "held_by_steps", counted)
    monkeypatch.setattr(step_waits, "held_by_steps", counted, raising=False)
    ended = decide_fold(scenario, done(1))
    started = [f for f in ended if isinstance(f, StepStarted)]
    assert [(f.step_sluid, f.step_id) for f in started] == [(sid(2), 1), (sid(3), 2)]
    assert walks <= 1


def test_at_most_max_waiting_steps_wait_in_one_job_and_the_next_is_refused() -> None:
    """A loop of ``srun ... &`` must not grow the job's state without end: each waiting step is
    kept whole (srun's environment among it) and the job's row is written again each batch."""
    from scheduler.jobs.steps import MAX_WAITING_STEPS

    scenario = two_cpu_job()
    only(decide_fold(scenario, ask(1)), StepStarted)  # holds the job's CPUs: the others wait
    for n in range(2, MAX_WAITING_STEPS + 2):
        assert [type(f) for f in decide_fold(scenario, ask(n))] == [StepPending]
    refused = only(decide_fold(scenario, ask(MAX_WAITING_STEPS + 2)), RequestDenied)
    assert refused.reason == "StepLimit"
    assert refused.detail.startswith(f"Step limit reached for this job: {MAX_WAITING_STEPS} "
                                     "steps of job 1 already wait")
    [job] = [j for j in scenario.state.jobs.values() if j.job_sluid == J1]
    assert sum(s.waiting is not None for s in job.steps) == MAX_WAITING_STEPS
    ended = decide_fold(scenario, done(1))  # room again: the first waiting one starts
    assert only(ended, StepStarted).step_sluid == sid(2)
    assert [type(f) for f in decide_fold(scenario, ask(MAX_WAITING_STEPS + 3))] == [StepPending]


def test_the_waiting_steps_of_a_job_keep_at_most_max_waiting_bytes_and_the_next_is_refused(
) -> None:
    """Red team, 2026-12-07: each waiting step keeps srun's request whole (its environment up to
    the 1 MB request limit), and the job's row is pickled and written again by every batch that
    touches the job. 120 sruns of 900 kB each grew a live worker by 470 MB, a job row to 108 MB
    (0.8 s of the worker's CPU for each further srun, growing), and delayed another user's
    ``sbatch --test-only`` to 5.7 s. Now the waiting steps of a job keep at most
    ``MAX_WAITING_BYTES``; the first to wait may be as large as a request."""
    from scheduler.jobs.steps import MAX_WAITING_BYTES, kept_bytes

    scenario = two_cpu_job()
    only(decide_fold(scenario, ask(1)), StepStarted)  # holds the job's CPUs: the others wait
    big = {f"V{k}": f"{k}" * 300_000 for k in range(3)}  # 900 kB
    n = 2
    while True:  # big ones wait while they fit
        facts = decide_fold(scenario, ask(n, env=big))
        n += 1
        if isinstance(facts[0], RequestDenied):
            break
        assert [type(f) for f in facts] == [StepPending]
    waiting = MAX_WAITING_BYTES // 900_000
    assert n - 3 == waiting and facts[0].reason == "StepLimit"
    assert facts[0].detail.startswith(f"Step limit reached for this job: the {waiting} steps of "
                                      "job 1 that wait for its resources keep")
    small = {"V": "x" * 16_000}  # a large login environment: they wait while they fit beside
    first_small = n
    while True:
        facts = decide_fold(scenario, ask(n, env=small))
        if isinstance(facts[0], RequestDenied):
            break
        assert [type(f) for f in facts] == [StepPending]
        n += 1
    assert facts[0].reason == "StepLimit" and n > first_small
    [job] = [j for j in scenario.state.jobs.values() if j.job_sluid == J1]
    kept = sum(kept_bytes(s.waiting) for s in job.steps if s.waiting is not None)
    assert MAX_WAITING_BYTES - 16_100 < kept <= MAX_WAITING_BYTES
    decide_fold(scenario, done(1))  # room again: the big one starts, small ones may wait again
    assert [type(f) for f in decide_fold(scenario, ask(n + 1, env=small))] in (
        [StepPending], [StepStarted])


def test_an_srun_over_a_thousand_node_job_is_placed_in_linear_time() -> None:
    """Red team, 2026-12-07: a step whose nodes the shard picks (srun without ``-w``) walked the
    nodes already taken for every node it placed, and the busy nodes' list for every node of
    the job: cubic in the job's nodes. ``srun -N 400`` in a 400-node job took 0.67 s of the
    shard's CPU, 1,000 nodes ~45 s, 2,000 minutes, during which no one's request was decided
    (and again for a waiting one at every step end)."""
    import time

    names = tuple(f"n{i}" for i in range(1, 1001))
    scenario = given(nodes("n", 1000, cpus=4, mem_mb=4000), running(J1, 1, names,
                                                                      spec(ntasks=1000)))
    every = ask(1, tasks=(1,) * 1000, names=names, pick_nodes=True, exact=True)
    began = time.process_time()
    first = only(decide_fold(scenario, every), StepStarted)
    second = only(decide_fold(scenario, ask(2, tasks=(1,) * 1000, names=names,
                                            pick_nodes=True, exact=True)), StepStarted)
    assert time.process_time() - began < 1.0  # was tens of seconds
    assert first.nodes == second.nodes == names and first.alloc_cpus == (1,) * 1000


def test_choose_takes_the_first_free_node_that_fits_each_count_as_a_full_scan_would() -> None:
    """The resumed scan of ``_choose`` picks what a scan from the start for each count picks."""
    import random

    from scheduler.jobs.step_alloc import _choose

    def reference(order: list[str], counts: tuple[int, ...], fits: Any) -> Any:
        taken: list[tuple[str, int]] = []
        for tasks in counts:
            name = next((n for n in order if all(n != t for t, _ in taken) and fits(n, tasks)),
                        None)
            if name is None:
                return None
            taken.append((name, tasks))
        return taken

    rng = random.Random(7)
    for _ in range(2000):
        order = [f"n{i}" for i in rng.sample(range(12), rng.randint(0, 12))]
        counts = tuple(rng.randint(1, 3) for _ in range(rng.randint(1, 8)))
        table = {(n, c): rng.random() < 0.6 for n in order for c in (1, 2, 3)}

        def fits(name: str, tasks: int, table: Any = table) -> bool:
            return bool(table[name, tasks])

        assert _choose(order, counts, fits) == reference(order, counts, fits)


def test_a_step_naming_a_hundred_thousand_nodes_is_refused_without_a_scan_per_name() -> None:
    """Red team, 2026-12-07: each node a ``StartStep`` names was looked for in the job's node
    tuple: 100,000 names (a 1 MB request) in a 1,000-node job cost the shard ~2 s."""
    import time

    names = tuple(f"n{i}" for i in range(1, 1001))
    scenario = given(nodes("n", 1000, cpus=4, mem_mb=4000), running(J1, 1, names,
                                                                      spec(ntasks=1000)))
    many = ask(1, tasks=(1,) * 100_000, names=("n1000",) * 100_000)
    began = time.process_time()
    refused = only(decide_fold(scenario, many), RequestDenied)
    assert time.process_time() - began < 0.5
    assert refused.reason == "InvalidStep"


def test_a_job_that_started_max_step_count_steps_starts_no_more_as_slurms_max_step_count(
) -> None:
    """Red team, 2026-12-07: ``--overlap`` steps hold nothing, so any number ran at once, each
    kept in the job's state (copied by every step start, written by every batch touching the
    job: 20,000 cost 2 ms a start and a 1.2 MB row, growing). Slurm's ``MaxStepCount`` (40,000
    by default) now bounds the steps a job starts."""
    from scheduler.jobs.steps import MAX_STEP_COUNT
    from scheduler.shard.model import job_with

    scenario = two_cpu_job()
    job = scenario.state.jobs[J1]
    scenario.state.jobs[J1] = job_with(job, next_step_id=MAX_STEP_COUNT - 1)
    last = only(decide_fold(scenario, ask(1, overlap=True)), StepStarted)
    assert last.step_id == MAX_STEP_COUNT - 1
    refused = only(decide_fold(scenario, ask(2, overlap=True)), RequestDenied)
    assert refused.reason == "StepLimit"
    assert refused.detail.startswith(f"Step limit reached for this job: job 1 started "
                                     f"{MAX_STEP_COUNT} steps")


def test_a_step_whose_launches_would_carry_more_than_max_launch_bytes_is_refused_step_too_large(
) -> None:
    """Red team, 2026-12-07: each node of a step gets its own ``LaunchStep`` with srun's whole
    environment, in the shard's one transaction: a 1 MB srun on 256 nodes wrote 256 MB of node
    commands. Past ``MAX_LAUNCH_BYTES`` in all the step is refused ``StepTooLarge`` and sends
    nothing; a large login's environment still reaches a thousand nodes."""
    from scheduler.jobs.steps import MAX_LAUNCH_BYTES

    names = tuple(f"n{i}" for i in range(1, 1001))
    scenario = given(nodes("n", 1000, cpus=4, mem_mb=4000), running(J1, 1, names,
                                                                      spec(ntasks=1000)))
    big = {f"V{k}": f"{k}" * 300_000 for k in range(3)}  # 900 kB, srun's largest
    too_wide = names[:128]
    refused = decide_fold(scenario, ask(1, tasks=(1,) * 128, names=too_wide, env=big,
                                        overlap=True))
    assert [type(f) for f in refused] == [RequestDenied]
    assert refused[0].reason == "StepTooLarge"
    assert "each of its 128 nodes make" in refused[0].detail
    assert str(MAX_LAUNCH_BYTES) in refused[0].detail
    wide_enough = names[:64]
    started = only(decide_fold(scenario, ask(2, tasks=(1,) * 64, names=wide_enough, env=big,
                                             overlap=True)), StepStarted)
    launches = node_commands(scenario.state, started)
    assert len(launches) == 64
    assert sum(len(str(sorted(c.env.items()))) for c in launches) <= MAX_LAUNCH_BYTES
    login = {"V": "x" * 16_000}
    assert isinstance(only(decide_fold(scenario, ask(3, tasks=(1,) * 1000, names=names,
                                                     env=login, overlap=True)), StepStarted),
                      StepStarted)
