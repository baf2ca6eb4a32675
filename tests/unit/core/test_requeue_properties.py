"""Properties of random histories with node failures and requeues (hypothesis).

A history: a random cluster (2-6 nodes, some in a block topology), jobs that ask for requeue
``yes``, ``no`` or ``expedite`` (with or without hot swap), and random steps — time passing (a
pass), exits (zero or not, some in ``RequeueExit`` or ``RequeueExitHold``), node failures,
re-registrations, drains and resumes, failed prologs, operator requeues, releases, cancels;
some exits of single-node runs are one-report ends (``epilog_done``: the exit is also the
node's epilog, as a daemon without an epilog sends it).
Simulated node daemons obey every command: a ``KillRun`` makes the batch host report the exit
and every live node report its epilog (some epilogs fail); a DOWN node answers nothing.
Checked after every decision:

- no node is over-allocated, counting what COMPLETING jobs still hold, and the node index equals
  capacity minus the running and held allocations;
- a job never runs twice at once: a run starts only after its previous run's requeue, and every
  node of the previous run then had reported its epilog or was DOWN;
- replaying the ledger, and restoring from the persisted rows, give the same state; the same
  inputs give the same facts.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from scheduler import (
    ApplyConfig,
    CancelJob,
    CloseCycle,
    DrainNode,
    JobEnded,
    JobRequeued,
    JobSpec,
    JobStarted,
    KillRun,
    NodeFailed,
    RegisterNode,
    ReleaseJob,
    ReportEpilog,
    ReportJobExit,
    ReportProlog,
    RequeueJob,
    ResumeNode,
    ShardState,
    SubmitJob,
    as_record,
    decide,
    evolve,
    initial_state,
    node_commands,
    parse_config,
    restore_state,
    schedule,
    state_meta,
)
from scheduler.records import Fact
from scheduler.shard.model import held_view
from tests.unit.core.gwt import T0, node_sluid, sluid
from tests.unit.core.test_properties import fingerprint, history_settings, no_node_over_allocated

SETTINGS = history_settings(150)
CONFIG = (
    "SlurmctldParameters: enable_expedited_requeue\n"
    "SchedulerParameters: {{bf_policy: {policy}, bf_resolution: 1, requeue_delay: 5}}\n"
    "MaxBatchRequeue: 3\nHotSwap: {hot}\nHotSwapWait: 30\n"
    "RequeueExit: 3\nRequeueExitHold: 4\n"
)
TOPOLOGY = "BlockName=b1 Nodes=n[0-2]\nBlockName=b2 Nodes=n[3-5]\nBlockSizes=3,6\n"

submit = st.tuples(
    st.just("submit"),
    st.sampled_from((1, 1, 2, 2, 3)),
    st.sampled_from(("yes", "no", "expedite", "expedite", "")),
    st.integers(1, 300),
    st.booleans(),
)
advance = st.tuples(st.just("advance"), st.integers(1, 90))
finish = st.tuples(st.just("exit"), st.integers(0, 50), st.sampled_from((0, 0, 1, 3, 4)),
                   st.booleans())  # True: the daemon's one-report end where it may send one
fail = st.tuples(st.just("fail"), st.integers(0, 5))
rare = st.one_of(
    st.tuples(st.just("register"), st.integers(0, 5)),
    st.tuples(st.just("prolog"), st.integers(0, 50)),
    st.tuples(st.just("requeue"), st.integers(0, 50), st.booleans()),
    st.tuples(st.just("cancel"), st.integers(0, 50)),
    st.tuples(st.just("release"), st.integers(0, 50)),
    st.tuples(st.just("drain"), st.integers(0, 5), st.booleans()),
    st.tuples(st.just("resume"), st.integers(0, 5)),
    st.tuples(st.just("deliver"), st.integers(0, 3)),
)
WEIGHTED = [submit] * 4 + [advance] * 4 + [finish] * 2 + [fail] * 2 + [rare] * 3
steps = st.lists(
    st.integers(0, len(WEIGHTED) - 1).flatmap(WEIGHTED.__getitem__), min_size=15, max_size=70
)
clusters = st.tuples(
    st.integers(2, 6),  # nodes
    st.sampled_from(("fcfs", "easy", "conservative")),
    st.sampled_from(("yes", "no")),  # HotSwap
    st.booleans(),  # a block topology
    st.integers(0, 7),  # which epilogs fail (bit mask over node numbers)
)


@dataclass
class Daemons:
    """Simulated node daemons: reports waiting to be delivered, in order."""

    reports: list[Any] = field(default_factory=list)


@dataclass
class Driver:
    """Feeds a history through decide/evolve/schedule and the simulated daemons."""

    size: int
    policy: str
    hot: str
    topology: bool
    bad_epilogs: int
    check: Callable[[ShardState], None] | None = None
    now: int = T0
    log: list[Fact] = field(default_factory=list)
    inputs: list[Any] = field(default_factory=list)
    submitted: int = 0
    daemons: Daemons = field(default_factory=Daemons)
    live: dict[str, str] = field(default_factory=dict)  # job → its run that has not ended
    requeued: set[str] = field(default_factory=set)  # runs whose requeue completed
    epilogs: dict[str, set[str]] = field(default_factory=dict)  # run → nodes that reported
    lives: dict[str, int] = field(default_factory=dict)  # node → daemon restarts and deaths
    started_lives: dict[str, dict[str, int]] = field(default_factory=dict)  # run → node lives

    def __post_init__(self) -> None:
        text = CONFIG.format(policy=self.policy, hot=self.hot)
        self.state = initial_state("prop", 5, parse_config(text))
        if self.topology:
            self.request(ApplyConfig(config_sluid=sluid(999), kind="topology", text=TOPOLOGY))
        for i in range(self.size):
            self.request(self._register(i))

    def _register(self, i: int) -> RegisterNode:
        return RegisterNode(node_sluid=node_sluid(f"n{i}"), name=f"n{i}", cpus=4, mem_mb=1000)

    # -- the core ---------------------------------------------------------------------------

    def request(self, request: Any) -> None:
        self.inputs.append((self.now, request))
        self.apply(decide(self.state, request, self.now))

    def apply(self, facts: list[Fact]) -> None:
        for fact in facts:
            self._watch(fact)
            self.state = evolve(self.state, fact)
            self.log.append(fact)
            for command in node_commands(self.state, fact):
                if isinstance(command, KillRun):
                    self._obey(command)
        if self.check is not None:
            self.check(self.state)

    def _watch(self, fact: Fact) -> None:
        """A job never runs twice at once (checked on the facts, before folding them)."""
        if isinstance(fact, JobStarted):
            assert fact.job_sluid not in self.live, f"{fact.job_sluid} started twice"
            job = self.state.jobs[fact.job_sluid]
            previous = job.previous_run_sluid or job.run_sluid
            if previous:
                assert previous in self.requeued, "a run started before its requeue"
            self.live[fact.job_sluid] = fact.run_sluid
            self.started_lives[fact.run_sluid] = {n: self.lives.get(n, 0) for n in fact.nodes}
        elif isinstance(fact, JobEnded) and self.live.get(fact.job_sluid) == fact.run_sluid:
            del self.live[fact.job_sluid]
        elif isinstance(fact, JobRequeued):
            job = self.state.jobs[fact.job_sluid]
            reported = self.epilogs.get(fact.run_sluid, set())
            lives = self.started_lives[fact.run_sluid]
            for name in job.nodes:  # each node reported its epilog, or its daemon died since
                assert name in reported or self.lives.get(name, 0) != lives[name], (
                    f"{fact.job_sluid} requeued while {name} may still run {fact.run_sluid}"
                )
            self.requeued.add(fact.run_sluid)

    def _obey(self, command: KillRun) -> None:
        node = self.state.nodes.get(command.node_sluid)
        if node is None or node.state == "DOWN":
            return  # a dead node answers nothing
        job = self.state.jobs.get(command.job_sluid)
        if (
            job is not None
            and job.is_running
            and job.run_sluid == command.run_sluid
            and command.node_name == job.nodes[0]
        ):
            self.daemons.reports.append(
                ReportJobExit(
                    job_sluid=job.job_sluid,
                    run_sluid=job.run_sluid,
                    node_sluid=command.node_sluid,
                    node_name=command.node_name,
                    exit_code=0,
                    signal=15,
                )
            )
        number = int(command.node_name[1:])
        ok = not (self.bad_epilogs >> number) & 1
        self.daemons.reports.append(
            ReportEpilog(
                job_sluid=command.job_sluid,
                run_sluid=command.run_sluid,
                node_sluid=command.node_sluid,
                node_name=command.node_name,
                ok=ok,
            )
        )

    def deliver(self, count: int) -> None:
        """The oldest ``count`` reports reach the shard (all of them with count 0)."""
        todo = self.daemons.reports if count == 0 else self.daemons.reports[:count]
        self.daemons.reports = [] if count == 0 else self.daemons.reports[count:]
        for report in todo:
            if isinstance(report, ReportEpilog):
                self.epilogs.setdefault(report.run_sluid, set()).add(report.node_name)
            self.request(report)

    def pick(self, k: int, pool: dict[str, None]) -> Any:
        jobs = sorted((self.state.jobs[s] for s in pool), key=lambda j: j.job_id)
        return jobs[k % len(jobs)] if jobs else None

    # -- steps ------------------------------------------------------------------------------

    def step(self, step: tuple[Any, ...]) -> None:
        handler = getattr(self, f"_step_{step[0]}")
        handler(*step[1:])

    def _step_submit(self, width: int, requeue: str, limit: int, exclusive: bool) -> None:
        self.submitted += 1
        spec = JobSpec(
            user=f"u{self.submitted % 2}",
            nodes_min=width,
            ntasks=width,
            cpus_per_task=2,
            time_limit_s=limit,
            exclusive=exclusive,
            requeue=requeue,
            command=("x",),
        )
        self.request(SubmitJob(job_sluid=sluid(self.submitted, self.now), spec=spec))

    def _step_advance(self, seconds: int) -> None:
        self.deliver(0)
        self.now += seconds * 1000
        self.run_pass()

    def _step_exit(self, k: int, code: int, one_report: bool) -> None:
        job = self.pick(k, self.state.running)
        if job is not None and not job.kill_reason:
            # a daemon reports its epilog with the exit only for a single-node run on a node
            # without an epilog (here: one whose epilog cannot fail); it counts as that epilog
            done = one_report and len(job.nodes) == 1 and not (
                self.bad_epilogs >> int(job.nodes[0][1:])) & 1
            if done:
                self.epilogs.setdefault(job.run_sluid, set()).add(job.nodes[0])
            self.request(
                ReportJobExit(
                    job_sluid=job.job_sluid,
                    run_sluid=job.run_sluid,
                    node_sluid=job.node_sluids[0],
                    node_name=job.nodes[0],
                    exit_code=code,
                    epilog_done=done,
                )
            )

    def _step_fail(self, i: int) -> None:
        if i < self.size:
            name = f"n{i}"
            self.lives[name] = self.lives.get(name, 0) + 1  # its daemon died
            self.request(NodeFailed(node_sluid=node_sluid(name), name=name, reason="", time_ms=0))

    def _step_register(self, i: int) -> None:
        if i < self.size:
            self.lives[f"n{i}"] = self.lives.get(f"n{i}", 0) + 1  # a restarted daemon
            self.request(self._register(i))

    def _step_prolog(self, k: int) -> None:
        job = self.pick(k, self.state.running)
        if job is not None:
            self.request(
                ReportProlog(
                    job_sluid=job.job_sluid,
                    run_sluid=job.run_sluid,
                    node_sluid=job.node_sluids[-1],
                    node_name=job.nodes[-1],
                    ok=False,
                    exit_code=1,
                )
            )

    def _step_requeue(self, k: int, hold: bool) -> None:
        job = self.pick(k, self.state.running)
        if job is not None:
            self.request(RequeueJob(job_sluid=job.job_sluid, hold=hold))

    def _step_cancel(self, k: int) -> None:
        pool = {**self.state.pending, **self.state.running, **self.state.completing}
        job = self.pick(k, pool)
        if job is not None:
            self.request(CancelJob(job_sluid=job.job_sluid))

    def _step_release(self, k: int) -> None:
        held = {s: None for s in self.state.pending if self.state.jobs[s].hold}
        job = self.pick(k, held)
        if job is not None:
            self.request(ReleaseJob(job_sluid=job.job_sluid))

    def _step_drain(self, i: int, down: bool) -> None:
        if i < self.size:
            if down:
                self.lives[f"n{i}"] = self.lives.get(f"n{i}", 0) + 1  # simulated as dead
            self.request(DrainNode(name=f"n{i}", reason="test", down=down))

    def _step_resume(self, i: int) -> None:
        if i < self.size:
            self.request(ResumeNode(name=f"n{i}"))

    def _step_deliver(self, count: int) -> None:
        self.deliver(count)

    def run_pass(self) -> None:
        self.inputs.append((self.now, "pass"))
        self.apply(schedule(self.state, self.now))
        self.request(CloseCycle(inbox_partition=0, inbox_from=0, inbox_to=len(self.log)))

    def run(self, history: list[tuple[Any, ...]]) -> Driver:
        for step in history:
            self.step(step)
        for _ in range(3):
            self._step_advance(60)
        return self


def _held_ok(state: ShardState) -> None:
    no_node_over_allocated(state)
    for sluid_ in state.completing:
        job = state.jobs[sluid_]
        assert set(job.completing) <= set(job.held) <= set(job.nodes)
        held_view(job, job.held)


def _snapshot(state: ShardState) -> ShardState:
    meta = pickle.loads(pickle.dumps(state_meta(state)))
    return restore_state(meta, dict(state.jobs), dict(state.nodes))


@SETTINGS
@given(clusters, steps)
def test_no_node_is_over_allocated_across_failures_and_requeues(
    cluster: tuple[int, str, str, bool, int], history: list[tuple[Any, ...]]
) -> None:
    Driver(*cluster, check=_held_ok).run(history)


@SETTINGS
@given(clusters, steps)
def test_replay_and_restore_give_the_same_state_across_requeues(
    cluster: tuple[int, str, str, bool, int], history: list[tuple[Any, ...]]
) -> None:
    driver = Driver(*cluster).run(history)
    replayed = initial_state("prop", 5, driver.state.config)
    for fact in driver.log:
        replayed = evolve(replayed, fact)
    assert fingerprint(replayed) == fingerprint(driver.state)
    restored = _snapshot(driver.state)
    assert fingerprint(restored) == fingerprint(driver.state)
    later = driver.now + 100_000
    assert schedule(restored, later) == schedule(driver.state, later)


@SETTINGS
@given(clusters, steps)
def test_the_same_history_gives_the_same_facts(
    cluster: tuple[int, str, str, bool, int], history: list[tuple[Any, ...]]
) -> None:
    first = Driver(*cluster).run(history)
    second = Driver(*cluster).run(history)
    assert [as_record(f) for f in first.log] == [as_record(f) for f in second.log]
    assert [f.shard_seq for f in first.log] == list(range(1, len(first.log) + 1))
