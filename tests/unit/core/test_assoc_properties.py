"""Association limits over random histories (hypothesis): whatever is submitted, run and
ended, under any policy, what runs never exceeds an account's Grp limits over its subtree or a
user's MaxJobs in an account, what is queued never exceeds MaxSubmitJobs or GrpSubmitJobs, and
the same inputs give the same facts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from scheduler import (
    CloseCycle,
    JobSpec,
    RegisterNode,
    ReportJobExit,
    ShardState,
    SubmitJob,
    decide,
    evolve,
    initial_state,
    parse_config,
)
from scheduler.records import Fact
from scheduler.schedule import schedule_with_plan
from tests.unit.core.gwt import T0, node_sluid, sluid
from tests.unit.core.test_properties import history_settings

SETTINGS = history_settings(100)

# root → phys (u0, u1) → theo (u2); root → chem (u3); u4 is in no account (root's)
USERS = {"u0": "phys", "u1": "phys", "u2": "theo", "u3": "chem", "u4": ""}
SUBTREE = {"phys": {"phys", "theo"}, "theo": {"theo"}, "chem": {"chem"}}
PARENT = {"phys": "", "theo": "phys", "chem": ""}

count = st.one_of(st.none(), st.integers(0, 4))
limits = st.fixed_dictionaries(
    {
        account: st.fixed_dictionaries(
            {
                "cpu": st.one_of(st.none(), st.integers(1, 10)),
                "node": st.one_of(st.none(), st.integers(1, 3)),
                "GrpJobs": count,
                "MaxJobs": count,
                "GrpSubmitJobs": st.one_of(st.none(), st.integers(1, 8)),
                "MaxSubmitJobs": st.one_of(st.none(), st.integers(1, 5)),
            }
        )
        for account in ("phys", "theo", "chem")
    }
)
submit = st.tuples(
    st.just("submit"),
    st.sampled_from(sorted(USERS)),
    st.sampled_from((1, 1, 2)),
    st.integers(1, 4),
    st.integers(1, 300),
)
advance = st.tuples(st.just("advance"), st.integers(1, 200))
finish = st.tuples(st.just("exit"), st.integers(0, 50))
steps = st.lists(st.one_of(submit, submit, advance, finish), min_size=10, max_size=50)
shapes = st.lists(st.integers(1, 6), min_size=2, max_size=4)
policies = st.sampled_from(("fcfs", "easy", "conservative"))


def _config(policy: str, table: dict[str, dict[str, int | None]]) -> str:
    lines = [f"SchedulerParameters: {{bf_policy: {policy}, bf_resolution: 1}}", "Accounts:"]
    for account, values in table.items():
        users = [u for u, a in USERS.items() if a == account]
        lines += [f"  - Name: {account}", f"    Users: [{', '.join(users)}]"]
        if PARENT[account]:
            lines.append(f"    Parent: {PARENT[account]}")
        tres = [f"{k}={values[k]}" for k in ("cpu", "node") if values[k] is not None]
        if tres:
            lines.append(f"    GrpTRES: {','.join(tres)}")
        lines += [
            f"    {key}: {value}"
            for key, value in values.items()
            if key not in ("cpu", "node") and value is not None
        ]
    if policy == "fcfs":
        lines[0] = "SchedulerType: sched/builtin"
    return "\n".join(lines) + "\n"


def _effective(table: dict[str, dict[str, int | None]], account: str, key: str) -> int | None:
    """A Max limit as inherited: the account's own, else its parent's."""
    while account:
        if table[account][key] is not None:
            return table[account][key]
        account = PARENT[account]
    return None


def check_limits(state: ShardState, table: dict[str, dict[str, int | None]]) -> None:
    running = [state.jobs[s] for s in state.running]
    active = [j for j in state.jobs.values() if j.is_pending or j.is_running or j.is_completing]
    for account, members in SUBTREE.items():
        limit = table[account]
        mine = [j for j in running if j.account in members]
        if limit["cpu"] is not None:
            assert sum(c for j in mine for c, _, _ in j.alloc) <= limit["cpu"]
        if limit["node"] is not None:
            assert len({n for j in mine for n in j.nodes}) <= limit["node"]
        if limit["GrpJobs"] is not None:
            assert len(mine) <= limit["GrpJobs"]
        if limit["GrpSubmitJobs"] is not None:
            assert sum(1 for j in active if j.account in members) <= limit["GrpSubmitJobs"]
    for user, account in USERS.items():
        if not account:
            continue
        max_jobs = _effective(table, account, "MaxJobs")
        if max_jobs is not None:
            assert (
                sum(1 for j in running if (j.account, j.spec.user) == (account, user)) <= max_jobs
            )
        max_submit = _effective(table, account, "MaxSubmitJobs")
        if max_submit is not None:
            mine = [j for j in active if (j.account, j.spec.user) == (account, user)]
            assert len(mine) <= max_submit


@dataclass
class Driver:
    shapes: list[int]
    policy: str
    table: dict[str, dict[str, int | None]]
    now: int = T0
    log: list[Fact] = field(default_factory=list)
    submitted: int = 0

    def __post_init__(self) -> None:
        self.state = initial_state("prop", 5, parse_config(_config(self.policy, self.table)))
        for i, cpus in enumerate(self.shapes):
            self.request(
                RegisterNode(node_sluid=node_sluid(f"n{i}"), name=f"n{i}", cpus=cpus, mem_mb=1000)
            )

    def apply(self, facts: list[Fact]) -> None:
        for fact in facts:
            self.state = evolve(self.state, fact)
            self.log.append(fact)
        check_limits(self.state, self.table)

    def request(self, request: Any) -> None:
        self.apply(decide(self.state, request, self.now))

    def step(self, step: tuple[Any, ...]) -> None:
        if step[0] == "submit":
            _, user, nodes, tasks, limit = step
            self.submitted += 1
            spec = JobSpec(
                user=user, nodes_min=nodes, ntasks=tasks, time_limit_s=limit, command=("x",)
            )
            self.request(SubmitJob(job_sluid=sluid(self.submitted, self.now), spec=spec))
        elif step[0] == "advance":
            self.now += step[1] * 1000
            self.apply(schedule_with_plan(self.state, self.now).facts)
            self.request(CloseCycle(inbox_partition=0, inbox_from=0, inbox_to=len(self.log)))
        elif step[0] == "exit" and self.state.running:
            jobs = sorted((self.state.jobs[s] for s in self.state.running), key=lambda j: j.job_id)
            job = jobs[step[1] % len(jobs)]
            self.request(
                ReportJobExit(
                    job_sluid=job.job_sluid,
                    run_sluid=job.run_sluid,
                    node_sluid=job.node_sluids[0],
                    node_name=job.nodes[0],
                    exit_code=0,
                )
            )

    def run(self, history: list[tuple[Any, ...]]) -> Driver:
        for step in history:
            self.step(step)
        return self


@SETTINGS
@given(shapes, policies, limits, steps)
def test_running_and_queued_jobs_never_exceed_the_account_limits(
    node_cpus: list[int],
    policy: str,
    table: dict[str, dict[str, int | None]],
    history: list[tuple[Any, ...]],
) -> None:
    Driver(node_cpus, policy, table).run(history)


@SETTINGS
@given(shapes, policies, limits, steps)
def test_the_same_history_under_account_limits_gives_the_same_facts(
    node_cpus: list[int],
    policy: str,
    table: dict[str, dict[str, int | None]],
    history: list[tuple[Any, ...]],
) -> None:
    first = Driver(node_cpus, policy, table).run(history)
    second = Driver(node_cpus, policy, table).run(history)
    assert first.log == second.log
    replayed = initial_state("prop", 5, first.state.config)
    for fact in first.log:
        replayed = evolve(replayed, fact)
    assert dict(replayed.jobs) == dict(first.state.jobs)
