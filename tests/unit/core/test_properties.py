"""Properties over random histories (hypothesis): the rules that must hold whatever happens.

A history is a random cluster (1-6 nodes of 1-8 CPUs, some with GPUs) and a random sequence
of steps: submissions, time passing (then a scheduling pass), exits, cancels, holds and
releases, node failures and re-registrations, under FCFS, EASY or conservative backfill (the
backfill properties also on a block topology, with topo-exclusive and segmented jobs).
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler import (
    ApplyConfig,
    CancelJob,
    CloseCycle,
    ClusterConfig,
    HoldJob,
    JobSpec,
    JobStarted,
    NodeFailed,
    RegisterNode,
    ReleaseJob,
    ReportJobExit,
    RunKillRequested,
    SchedulerConfig,
    ShardState,
    SubmitJob,
    as_record,
    decide,
    evolve,
    initial_state,
    restore_state,
    state_meta,
)
from scheduler.records import Fact
from scheduler.schedule import PassResult, schedule_with_plan
from scheduler.shard.model import held_view
from tests.unit.core.gwt import T0, node_sluid, sluid


def history_settings(max_examples: int = 150) -> settings:
    """Hypothesis settings for the suites that drive the core through random histories."""
    return settings(
        max_examples=max_examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


SETTINGS = history_settings()

node_shapes = st.lists(
    st.tuples(st.integers(1, 8), st.sampled_from((0, 0, 2, 4))), min_size=2, max_size=6
)
submit = st.tuples(
    st.just("submit"),
    st.sampled_from((1, 1, 1, 2, 2, 3)),
    st.integers(1, 8),
    st.sampled_from((0, 0, 0, 1, 2)),
    st.integers(1, 300),
    st.booleans(),
    st.integers(-5, 5),
    st.sampled_from(("", "", "", "topo", "segment")),  # with a topology only
)
advance = st.tuples(st.just("advance"), st.integers(1, 400))
finish = st.tuples(st.just("exit"), st.integers(0, 50), st.integers(0, 2))
rare = st.one_of(
    st.tuples(st.just("cancel"), st.integers(0, 50)),
    st.tuples(st.just("hold"), st.integers(0, 50)),
    st.tuples(st.just("release"), st.integers(0, 50)),
    st.tuples(st.just("fail"), st.integers(0, 5)),
    st.tuples(st.just("register"), st.integers(0, 5)),
)
WEIGHTED = [submit] * 6 + [advance] * 4 + [finish] * 2 + [rare]
steps = st.lists(
    st.integers(0, len(WEIGHTED) - 1).flatmap(WEIGHTED.__getitem__), min_size=12, max_size=60
)
policies = st.sampled_from(("fcfs", "easy", "conservative"))
BLOCKS = "BlockName=b1 Nodes=n[0-1]\nBlockName=b2 Nodes=n[2-3]\nBlockName=b3 Nodes=n[4-5]\n"
TOPOLOGY = BLOCKS + "BlockSizes=2,4\n"
BLOCK_OF = {f"n{i}": i // 2 for i in range(6)}


@dataclass
class Driver:
    """Feeds a history through decide/evolve/schedule, checking invariants as it goes."""

    shapes: list[tuple[int, int]]
    policy: str
    check: Callable[[ShardState], None] | None = None
    topology: str = ""  # topology.conf text applied before the nodes register
    now: int = T0
    log: list[Fact] = field(default_factory=list)
    passes: list[tuple[ShardState | None, PassResult]] = field(default_factory=list)
    submitted: int = 0

    def __post_init__(self) -> None:
        config = ClusterConfig(scheduler=SchedulerConfig(policy=self.policy, bf_resolution_s=1))
        self.state = initial_state("prop", 5, config)
        if self.topology:
            self.request(ApplyConfig(config_sluid=sluid(999), kind="topology", text=self.topology))
        for i, _ in enumerate(self.shapes):
            self.request(self._register(i))

    def _register(self, i: int) -> RegisterNode:
        cpus, gpus = self.shapes[i]
        return RegisterNode(
            node_sluid=node_sluid(f"n{i}"),
            name=f"n{i}",
            cpus=cpus,
            mem_mb=1000,
            gpus=gpus,
            gpu_type="a100" if gpus else "",
        )

    def apply(self, facts: list[Fact]) -> None:
        kills = []
        for fact in facts:
            self.state = evolve(self.state, fact)
            self.log.append(fact)
            if isinstance(fact, RunKillRequested):
                kills.append(fact)
        if self.check is not None:
            self.check(self.state)
        for kill in kills:  # the batch host obeys at once
            job = self.state.jobs[kill.job_sluid]
            if job.is_running and job.run_sluid == kill.run_sluid:
                self.request(
                    ReportJobExit(
                        job_sluid=job.job_sluid,
                        run_sluid=job.run_sluid,
                        node_sluid=job.node_sluids[0],
                        node_name=job.nodes[0],
                        exit_code=0,
                        signal=9,
                    )
                )

    def request(self, request: Any) -> None:
        self.apply(decide(self.state, request, self.now))

    def pick(self, k: int, pool: dict[str, None]) -> Any:
        jobs = sorted((self.state.jobs[s] for s in pool), key=lambda j: j.job_id)
        return jobs[k % len(jobs)] if jobs else None

    def step(self, step: tuple[Any, ...]) -> None:
        kind = step[0]
        if kind == "submit":
            _, nodes, tasks, gpus, limit, exclusive, nice, topo = step
            self.submitted += 1
            topo = topo if self.topology else ""
            spec = JobSpec(
                user=f"u{self.submitted % 3}",
                nodes_min=nodes,
                ntasks=tasks,
                gpus_per_node=gpus,
                time_limit_s=limit,
                exclusive=exclusive,
                nice=nice,
                exclusive_topo=topo == "topo",
                segment=(1 if nodes % 2 else 2) if topo == "segment" else 0,
                command=("x",),
            )
            self.request(SubmitJob(job_sluid=sluid(self.submitted, self.now), spec=spec))
        elif kind == "advance":
            self.now += step[1] * 1000
            self.run_pass()
        elif kind == "exit" and (job := self.pick(step[1], self.state.running)):
            self.request(
                ReportJobExit(
                    job_sluid=job.job_sluid,
                    run_sluid=job.run_sluid,
                    node_sluid=job.node_sluids[0],
                    node_name=job.nodes[0],
                    exit_code=step[2],
                )
            )
        elif kind == "cancel" and (
            job := self.pick(step[1], {**self.state.pending, **self.state.running})
        ):
            self.request(CancelJob(job_sluid=job.job_sluid))
        elif kind == "hold" and (job := self.pick(step[1], self.state.pending)):
            self.request(HoldJob(job_sluid=job.job_sluid))
        elif kind == "release" and (job := self.pick(step[1], self.state.pending)):
            self.request(ReleaseJob(job_sluid=job.job_sluid))
        elif kind == "fail" and step[1] < len(self.shapes):
            self.request(
                NodeFailed(
                    node_sluid=node_sluid(f"n{step[1]}"),
                    name=f"n{step[1]}",
                    reason="test",
                    time_ms=self.now,
                )
            )
        elif kind == "register" and step[1] < len(self.shapes):
            self.request(self._register(step[1]))

    def run_pass(self) -> None:
        before = _snapshot(self.state) if self.check is not None else None
        result = schedule_with_plan(self.state, self.now)
        self.passes.append((before, result))
        self.apply(result.facts)
        self.request(CloseCycle(inbox_partition=0, inbox_from=0, inbox_to=len(self.log)))

    def run(self, history: list[tuple[Any, ...]]) -> Driver:
        for step in history:
            self.step(step)
        self.now += 1000
        self.run_pass()
        return self


def _snapshot(state: ShardState) -> ShardState:
    meta = pickle.loads(pickle.dumps(state_meta(state)))
    return restore_state(meta, dict(state.jobs), dict(state.nodes))


def fingerprint(state: ShardState) -> tuple[Any, ...]:
    index = state.index
    return (
        state_meta(state),
        dict(state.jobs),
        dict(state.nodes),
        index.names,
        index.free_cpus.tolist(),
        index.free_mem.tolist(),
        index.free_gpus.tolist(),
        index.njobs.tolist(),
        index.usable.tolist(),
    )


def no_node_over_allocated(state: ShardState) -> None:
    used: dict[str, list[int]] = {}
    exclusive: dict[str, bool] = {}
    holders = [state.jobs[s] for s in state.running]
    holders += [held_view(j, j.held) for j in (state.jobs[s] for s in state.completing)]
    for job in holders:
        for name, alloc in zip(job.nodes, job.alloc, strict=True):
            totals = used.setdefault(name, [0, 0, 0, 0])
            for i in range(3):
                totals[i] += alloc[i]
            totals[3] += 1
            exclusive.setdefault(name, job.demand.exclusive)
            exclusive[name] = exclusive[name] or job.demand.exclusive
    for name, (cpus, mem, gpus, count) in used.items():
        node = state.nodes[state.node_sluid_by_name(name)]
        assert cpus <= node.cpus and mem <= node.mem_mb and gpus <= node.gpus, name
        assert count == 1 or not exclusive[name], f"{name} shares an exclusive job"
    index = state.index
    assert (index.free_cpus >= 0).all() and (index.free_gpus >= 0).all()
    assert (index.free_mem >= 0).all()
    for name, i in index.pos.items():
        cpus, _, gpus, count = used.get(name, [0, 0, 0, 0])
        assert index.free_cpus[i] == index.cap_cpus[i] - cpus, name
        assert index.free_gpus[i] == index.cap_gpus[i] - gpus, name
        assert index.njobs[i] == count, name


def kept_views_agree(state: ShardState) -> None:
    """What the state keeps alongside its jobs equals a recomputation from the jobs."""
    pending = [state.jobs[s] for s in state.pending]
    assert state.fifo() == sorted((j.submit_ms, j.job_id, j.job_sluid) for j in pending)
    assert state.asking_licenses == {
        j.job_sluid for j in pending if j.spec.licenses or j.spec.resources
    }
    assert state.out_of_order == {
        j.job_sluid for j in pending if j.hold or j.spec.nice or j.expediting
    }
    assert state.conditional == {
        j.job_sluid
        for j in pending
        if j.hold or j.spec.begin_time_ms or j.spec.dependency or j.array_job_sluid
    }
    ends = [state.jobs[s].end_ms for s in state.ended]
    assert ends == sorted(ends)  # end order: a cycle's purge reads a prefix
    index = state.index
    for running in state.running:
        job = state.jobs[running]
        limit = job.start_ms + job.time_limit_s * 1000 if job.time_limit_s > 0 else 1 << 62
        assert index.run_end[running] == (0 if job.kill_reason else limit)


@SETTINGS
@given(node_shapes, policies, steps)
def test_what_the_state_keeps_beside_its_jobs_stays_true(
    shapes: list[tuple[int, int]], policy: str, history: list[tuple[Any, ...]]
) -> None:
    Driver(shapes, policy, check=kept_views_agree).run(history)


@SETTINGS
@given(node_shapes, policies, steps)
def test_no_node_is_ever_over_allocated(
    shapes: list[tuple[int, int]], policy: str, history: list[tuple[Any, ...]]
) -> None:
    Driver(shapes, policy, check=no_node_over_allocated).run(history)


@SETTINGS
@given(node_shapes, policies, steps)
def test_replaying_the_facts_gives_the_same_state(
    shapes: list[tuple[int, int]], policy: str, history: list[tuple[Any, ...]]
) -> None:
    driver = Driver(shapes, policy).run(history)
    replayed = initial_state("prop", 5, driver.state.config)
    for fact in driver.log:
        replayed = evolve(replayed, fact)
    assert fingerprint(replayed) == fingerprint(driver.state)
    restored = _snapshot(driver.state)
    assert fingerprint(restored) == fingerprint(driver.state)
    later = driver.now + 500_000
    assert (
        schedule_with_plan(restored, later).facts == schedule_with_plan(driver.state, later).facts
    )


@SETTINGS
@given(node_shapes, policies, steps, st.booleans())
def test_the_same_inputs_give_the_same_decisions(
    shapes: list[tuple[int, int]], policy: str, history: list[tuple[Any, ...]], blocks: bool
) -> None:
    topology = TOPOLOGY if blocks else ""
    first = Driver(shapes, policy, topology=topology).run(history)
    second = Driver(shapes, policy, topology=topology).run(history)
    assert [as_record(f) for f in first.log] == [as_record(f) for f in second.log]
    plans = [(r.reservations, r.backfilled) for _, r in first.passes]
    assert plans == [(r.reservations, r.backfilled) for _, r in second.passes]
    assert [f.shard_seq for f in first.log] == list(range(1, len(first.log) + 1))


def _backfill_respects(before: ShardState, result: PassResult) -> None:
    """No job started by backfill holds a node reserved before it past the reservation's start
    (a topo-exclusive job's reservation holds its blocked nodes too).

    (Reservations made after a start already account for it, so they may share its nodes.)
    """
    starts = {f.job_sluid: f for f in result.facts if isinstance(f, JobStarted)}
    reservations = list(result.reservations.items())
    for job_sluid, made_before in result.backfilled:
        start = starts[job_sluid]
        limit_ms = start.time_limit_s * 1000 if start.time_limit_s else 1 << 62
        for reserved_job, reservation in reservations[:made_before]:
            if not set(start.nodes) & set(reservation.nodes + reservation.blocked):
                continue
            assert start.time_ms + limit_ms <= reservation.start_ms, (job_sluid, reserved_job)
    del before


def _reservations_are_placements(before: ShardState, result: PassResult) -> None:
    """On the block topology, a reservation is a placement the plugin could make: a job that
    fits one base block is reserved inside one; a topo-exclusive job's held nodes are whole
    blocks; a segmented job's segments each lie inside one block (its segments may lie in
    several when smaller than the job: an explicit ``-N 2 --segment 1`` job among nodes of
    which only two in different blocks fit it is reserved over both)."""
    for job_sluid, reservation in result.reservations.items():
        job = before.jobs[job_sluid]
        blocks = {BLOCK_OF[n] for n in reservation.nodes}
        assert len(reservation.nodes) >= job.demand.nodes_min
        if job.demand.nodes_min <= min(2, job.spec.segment or 2):  # (segments: below)
            assert len(blocks) == 1, (job_sluid, reservation)
        if job.spec.exclusive_topo:
            held = set(reservation.nodes + reservation.blocked)
            assert held == {n for n, b in BLOCK_OF.items() if b in blocks and n in before.index.pos}
        elif job.spec.segment:
            size = job.spec.segment
            for k in range(0, len(reservation.nodes), size):
                assert len({BLOCK_OF[n] for n in reservation.nodes[k : k + size]}) == 1


@SETTINGS
@given(node_shapes, st.sampled_from(("easy", "conservative")), steps, st.booleans())
def test_a_backfilled_job_never_delays_a_reservation(
    shapes: list[tuple[int, int]], policy: str, history: list[tuple[Any, ...]], blocks: bool
) -> None:
    """Also on a block topology (base blocks of 2 nodes, aggregates of 4), where jobs may be
    topo-exclusive or segmented and reservations are the plugin's placements."""
    topology = TOPOLOGY if blocks else ""
    driver = Driver(shapes, policy, check=lambda _: None, topology=topology).run(history)
    for before, result in driver.passes:
        assert before is not None
        _backfill_respects(before, result)
        if blocks:
            _reservations_are_placements(before, result)


@SETTINGS
@given(
    st.lists(
        st.tuples(st.integers(0, 600), st.integers(1, 4), st.integers(1, 300)),
        min_size=1,
        max_size=25,
    ),
    st.booleans(),
)
def test_under_easy_the_head_job_starts_no_later_than_its_first_reservation(
    jobs: list[tuple[int, int, int]], blocks: bool
) -> None:
    """Runs last exactly their limits; every job's start ≤ the first start reserved for it.

    Also on a block topology (two base blocks of 2 nodes): the reservation is where the plugin
    would place the job, so it can start there when the time comes."""
    driver = Driver([(1, 0)] * 4, "easy", topology=TOPOLOGY if blocks else "")
    arrivals = sorted((at, i, width, limit) for i, (at, width, limit) in enumerate(jobs))
    events: list[tuple[int, int, str]] = [(T0 + at * 1000, 0, f"s{i}") for at, i, _, _ in arrivals]
    spec_of = {f"s{i}": (width, limit) for _, i, width, limit in arrivals}
    first_reserved: dict[str, int] = {}
    started: dict[str, int] = {}
    by_sluid: dict[str, str] = {}
    while events:
        events.sort()
        driver.now = events[0][0]
        batch = [e for e in events if e[0] == driver.now]
        events = [e for e in events if e[0] != driver.now]
        for _, _, what in batch:
            if what.startswith("s"):
                width, limit = spec_of[what]
                job_sluid = sluid(int(what[1:]) + 1, driver.now)
                by_sluid[job_sluid] = what
                driver.request(
                    SubmitJob(
                        job_sluid=job_sluid,
                        spec=JobSpec(user="u", nodes_min=width, time_limit_s=limit, command=("x",)),
                    )
                )
            else:
                job = driver.state.jobs[what[1:]]
                driver.request(
                    ReportJobExit(
                        job_sluid=job.job_sluid,
                        run_sluid=job.run_sluid,
                        node_sluid=job.node_sluids[0],
                        node_name=job.nodes[0],
                        exit_code=0,
                    )
                )
        result = schedule_with_plan(driver.state, driver.now)
        driver.apply(result.facts)
        for job_sluid, reservation in result.reservations.items():
            first_reserved.setdefault(job_sluid, reservation.start_ms)
        for fact in result.facts:
            if isinstance(fact, JobStarted):
                started[fact.job_sluid] = fact.time_ms
                limit = driver.state.jobs[fact.job_sluid].time_limit_s
                events.append((fact.time_ms + limit * 1000, 1, "e" + fact.job_sluid))
    for job_sluid, reserved in first_reserved.items():
        assert started[job_sluid] <= reserved, by_sluid[job_sluid]
