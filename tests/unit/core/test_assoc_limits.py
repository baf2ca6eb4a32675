"""Association (account) limits: Slurm's GrpTRES, GrpJobs, GrpSubmitJobs, MaxJobs,
MaxSubmitJobs, MaxWall and MaxTRESPerJob on accounts, inherited down the account tree."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from scheduler import (
    ConfigError,
    Fact,
    JobEnded,
    JobPending,
    JobRejected,
    JobStarted,
    ShardState,
    SubmitJob,
    decide,
    evolve,
    parse_config,
    schedule,
)
from scheduler.schedule import schedule_with_plan
from tests.unit.core.gwt import (
    T0,
    M,
    given,
    node_sluid,
    nodes,
    queued,
    restamp,
    schedule_pass,
    sluid,
    spec,
)

J1, J2, J3, J4 = sluid(1), sluid(2), sluid(3), sluid(4)

TREE = """
Accounts:
  - Name: physics
    Users: [alice, bob]
{physics}
  - Name: theory
    Parent: physics
    Users: [carol]
{theory}
  - Name: chem
    Users: [dave]
"""


def tree(physics: str = "", theory: str = "") -> str:
    """The account tree root → physics → theory, root → chem, with limits (YAML lines)."""
    return TREE.format(physics=_indent(physics), theory=_indent(theory))


def _indent(lines: str) -> str:
    return "\n".join("    " + line for line in lines.strip().splitlines())


def _reasons(facts: Sequence[object]) -> dict[str, str]:
    return {f.job_sluid: f.reason for f in facts if isinstance(f, JobPending)}


def _started(facts: Sequence[object]) -> list[str]:
    return [f.job_sluid for f in facts if isinstance(f, JobStarted)]


def _apply(state: ShardState, facts: Sequence[Fact]) -> ShardState:
    for fact in facts:
        state = evolve(state, fact)
    return state


def _end(state: ShardState, job_sluid: str) -> ShardState:
    """The job's run ends (COMPLETED)."""
    job = state.jobs[job_sluid]
    fact = JobEnded(
        **M, job_sluid=job_sluid, job_id=job.job_id, run_sluid=job.run_sluid, state="COMPLETED"
    )
    return evolve(state, restamp(state, fact))


# -- configuration -------------------------------------------------------------------------


def test_account_limits_parse_with_slurm_names_and_units() -> None:
    config = parse_config(
        tree(
            physics="GrpTRES: cpu=64,mem=1T,node=4,gres/gpu=8\nGrpJobs: 10\nGrpSubmitJobs: 0\n"
            "MaxJobs: 3\nMaxSubmitJobs: UNLIMITED\nMaxWall: 1-00:00:00\n"
            "MaxTRESPerJob: cpu=16,node=-1",
        )
    )
    physics = config.accounts[0]
    assert (physics.grp_tres.cpu, physics.grp_tres.mem_mb) == (64, 1024 * 1024)
    assert (physics.grp_tres.node, physics.grp_tres.gpu) == (4, 8)
    assert (physics.grp_jobs, physics.grp_submit_jobs) == (10, 0)  # 0 is a limit, as in Slurm
    assert (physics.max_jobs, physics.max_submit_jobs, physics.max_wall_s) == (3, -1, 86400)
    assert (physics.max_tres_per_job.cpu, physics.max_tres_per_job.node) == (16, -1)
    assert not config.accounts[2].has_limits


@pytest.mark.parametrize(
    ("text", "error"),
    [
        (
            "Accounts:\n  - Name: a\n    Parent: nope\n",
            "c.yaml:3: account a has unknown parent nope",
        ),
        (
            "Accounts:\n  - Name: a\n    GrpTRES: cpu=4,licenses=2\n",
            "c.yaml:3: GrpTRES: unknown TRES 'licenses'",
        ),
        ("Accounts:\n  - Name: a\n    GrpTRES: cpu=many\n", "c.yaml:3: GrpTRES cpu must be"),
        ("Accounts:\n  - Name: a\n    MaxTRESPerJob: node\n", "c.yaml:3: MaxTRESPerJob: 'node'"),
        ("Accounts:\n  - Name: a\n    GrpTRES: mem=1G,mem=2G\n", "c.yaml:3: GrpTRES: mem is"),
        ("Accounts:\n  - Name: a\n    GrpJobs: -2\n", "c.yaml:3: GrpJobs must not be negative"),
        ("Accounts:\n  - Name: a\n    MaxSubmitJobs: x\n", "c.yaml:3: MaxSubmitJobs must be"),
        ("Accounts:\n  - Name: a\n    MaxWall: soon\n", "c.yaml:3: MaxWall:"),
        ("Accounts:\n  - Name: a\n    MaxJob: 3\n", "c.yaml:3: unknown key 'MaxJob' in account a"),
        (
            "Accounts:\n  - Name: a\n    Parent: b\n  - Name: b\n    Parent: a\n",
            "c.yaml:3: account a: its parents form a cycle (a -> b -> a)",
        ),
        ("Accounts:\n  - Name: a\n  - Name: a\n", "c.yaml:3: account a is defined twice"),
        (
            "Accounts:\n  - Name: a\n  - Name: root\n    Parent: a\n",
            "c.yaml:4: account root cannot have a parent",
        ),
    ],
)
def test_bad_account_limits_are_errors_naming_the_file_and_line(text: str, error: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config(text, "c.yaml")
    assert str(raised.value).startswith(error)


# -- limits on what runs at once -----------------------------------------------------------


def test_group_cpu_limit_holds_a_job_then_it_starts_once_cpus_free() -> None:
    config = tree(physics="GrpTRES: cpu=4")
    outcome = given(
        nodes("n", 2, cpus=8),
        queued(J1, spec(ntasks=3)),
        queued(J2, spec(ntasks=2)),
        queued(J3, spec(ntasks=2, user="dave")),  # chem: not limited
        config=config,
    ).when(schedule_pass())
    assert _started(outcome.facts) == [J1, J3]
    assert _reasons(outcome.facts) == {J2: "AssocGrpCpuLimit"}
    state = _end(outcome.evolved(), J1)
    assert _started(schedule(state, T0 + 1000)) == [J2]


@pytest.mark.parametrize(
    ("limit", "first", "second", "reason"),
    [
        (
            "GrpTRES: mem=6G",
            {"mem_per_node_mb": 4096},
            {"mem_per_node_mb": 4096},
            "AssocGrpMemLimit",
        ),
        ("GrpTRES: gres/gpu=4", {"gpus_per_node": 3}, {"gpus_per_node": 2}, "AssocGrpGRES"),
        ("GrpTRES: node=2", {"nodes_min": 2}, {}, "AssocGrpNodeLimit"),
        ("GrpJobs: 1", {}, {}, "AssocGrpJobsLimit"),
        ("MaxJobs: 1", {}, {}, "AssocMaxJobsLimit"),
    ],
)
def test_each_running_limit_pends_with_its_slurm_reason_until_room_frees(
    limit: str, first: dict[str, int], second: dict[str, int], reason: str
) -> None:
    outcome = given(
        nodes("g", 4, cpus=8, mem_mb=8192, gpus=4),
        queued(J1, spec(**first)),
        queued(J2, spec(**second)),
        config=tree(physics=limit),
    ).when(schedule_pass())
    assert _started(outcome.facts) == [J1]
    assert _reasons(outcome.facts) == {J2: reason}
    state = outcome.evolved()
    assert schedule(state, T0 + 1000) == []  # still held, reason unchanged
    assert _started(schedule(_end(state, J1), T0 + 2000)) == [J2]


def test_a_job_asking_for_none_of_a_tres_is_not_held_by_its_limit() -> None:
    outcome = given(
        nodes("g", 2, cpus=8, gpus=4),
        queued(J1, spec(gpus_per_node=4)),
        queued(J2, spec()),  # no GPU: gres/gpu=4 is full, but it asks for none
        config=tree(physics="GrpTRES: gres/gpu=4"),
    ).when(schedule_pass())
    assert _started(outcome.facts) == [J1, J2]


def test_group_node_limit_counts_distinct_nodes_and_a_new_job_at_its_minimum() -> None:
    """Running jobs (and those started in the pass) count the distinct nodes they use; a job
    about to start counts all its nodes as new (the check comes before nodes are chosen)."""
    config = tree(physics="GrpTRES: node=2")
    state = given(nodes("n", 3, cpus=4), queued(J1), config=config).when(schedule_pass()).evolved()
    assert state.jobs[J1].nodes == ("n1",)
    j5 = sluid(5)
    later = [queued(J2), queued(J3), queued(J4, spec(nodes_min=2)), queued(j5)]
    for fact in later:
        state = evolve(state, restamp(state, fact))
    facts = schedule(state, T0 + 1000)
    assert _started(facts) == [J2, J3, j5]  # all on n1: one node in use, 1 + 1 <= 2 each time
    assert _reasons(facts) == {J4: "AssocGrpNodeLimit"}  # 1 + 2 new nodes > 2
    assert {n for f in facts if isinstance(f, JobStarted) for n in f.nodes} == {"n1"}
    state = _end(_apply(state, facts), J1)
    assert _started(schedule(state, T0 + 2000)) == []  # n1 still in use by J2, J3, J5


def test_max_jobs_is_per_user_of_the_account() -> None:
    outcome = given(
        nodes("n", 4),
        queued(J1),
        queued(J2),
        queued(J3, spec(user="bob")),
        config=tree(physics="MaxJobs: 1"),
    ).when(schedule_pass())
    assert _started(outcome.facts) == [J1, J3]
    assert _reasons(outcome.facts) == {J2: "AssocMaxJobsLimit"}


def test_jobs_started_earlier_in_the_pass_count() -> None:
    outcome = given(
        nodes("n", 4),
        queued(J1),
        queued(J2, spec(user="carol")),
        queued(J3, spec(user="bob")),
        config=tree(physics="GrpJobs: 2"),
    ).when(schedule_pass())
    assert _started(outcome.facts) == [J1, J2]
    assert _reasons(outcome.facts) == {J3: "AssocGrpJobsLimit"}


# -- the tree: inheritance and subtree totals --------------------------------------------


def test_a_parent_group_limit_caps_its_whole_subtree() -> None:
    outcome = given(
        nodes("n", 4, cpus=4),
        queued(J1, spec(user="carol", ntasks=2)),  # theory, under physics
        queued(J2, spec(user="alice", ntasks=2)),  # physics
        queued(J3, spec(user="carol", ntasks=1)),
        queued(J4, spec(user="dave", ntasks=4)),  # chem: another subtree
        config=tree(physics="GrpTRES: cpu=4"),
    ).when(schedule_pass())
    assert _started(outcome.facts) == [J1, J2, J4]
    assert _reasons(outcome.facts) == {J3: "AssocGrpCpuLimit"}


def test_a_child_group_limit_applies_below_a_looser_parent_one() -> None:
    outcome = given(
        nodes("n", 4),
        queued(J1, spec(user="carol")),
        queued(J2, spec(user="carol")),
        queued(J3, spec(user="alice")),
        config=tree(physics="GrpJobs: 5", theory="GrpJobs: 1"),
    ).when(schedule_pass())
    assert _started(outcome.facts) == [J1, J3]
    assert _reasons(outcome.facts) == {J2: "AssocGrpJobsLimit"}


def test_max_limits_are_inherited_by_a_child_that_sets_none() -> None:
    config = parse_config(tree(physics="MaxJobs: 1\nMaxWall: 60\nMaxTRESPerJob: node=2"))
    outcome = given(
        nodes("n", 4),
        queued(J1, spec(user="carol")),
        queued(J2, spec(user="carol")),
        queued(J3, spec(user="carol", account="theory", nodes_min=3)),
        config=config,
    ).when(schedule_pass())
    assert _started(outcome.facts) == [J1]
    assert _reasons(outcome.facts) == {J2: "AssocMaxJobsLimit", J3: "AssocMaxNodePerJobLimit"}


def test_a_child_setting_its_own_max_limit_overrides_the_parents() -> None:
    outcome = given(
        nodes("n", 4),
        queued(J1, spec(user="carol")),
        queued(J2, spec(user="carol")),
        queued(J3, spec(user="carol")),
        config=tree(physics="MaxJobs: 1", theory="MaxJobs: 2"),
    ).when(schedule_pass())
    assert _started(outcome.facts) == [J1, J2]
    assert _reasons(outcome.facts) == {J3: "AssocMaxJobsLimit"}


def test_limits_on_a_root_entry_apply_to_every_account() -> None:
    config = tree() + "  - Name: root\n    GrpJobs: 2\n"
    outcome = given(
        nodes("n", 4),
        queued(J1, spec(user="dave")),
        queued(J2, spec(user="carol")),
        queued(J3, spec(user="nobody")),  # in no account: root's
        config=config,
    ).when(schedule_pass())
    assert _started(outcome.facts) == [J1, J2]
    assert _reasons(outcome.facts) == {J3: "AssocGrpJobsLimit"}


def test_a_qos_limit_of_the_same_kind_comes_first_and_the_accounts_is_not_used() -> None:
    config = (
        tree(physics="MaxJobs: 1\nGrpTRES: cpu=1")
        + "QOS:\n  - Name: big\n    MaxJobsPerUser: 3\n    GrpTRES: cpu=3\n"
    )
    outcome = given(
        nodes("n", 4),
        queued(J1, spec(qos="big")),
        queued(J2, spec(qos="big")),
        queued(J3, spec(qos="big")),
        queued(J4),  # no QOS: the account's limits
        config=config,
    ).when(schedule_pass())
    assert _started(outcome.facts) == [J1, J2, J3]
    assert _reasons(outcome.facts) == {J4: "AssocMaxJobsLimit"}


# -- per-job limits --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("limit", "job", "reason"),
    [
        ("MaxWall: 30", {"time_limit_s": 3600}, "AssocMaxWallDurationPerJobLimit"),
        ("MaxTRESPerJob: cpu=4", {"ntasks": 5, "nodes_min": 2}, "AssocMaxCpuPerJobLimit"),
        ("MaxTRESPerJob: mem=1G", {"mem_per_node_mb": 2048}, "AssocMaxMemPerJob"),
        ("MaxTRESPerJob: node=1", {"nodes_min": 2}, "AssocMaxNodePerJobLimit"),
        ("MaxTRESPerJob: gres/gpu=1", {"gpus_per_node": 2}, "AssocMaxGRESPerJob"),
    ],
)
def test_a_job_over_a_per_job_limit_is_queued_and_pends(
    limit: str, job: dict[str, int], reason: str
) -> None:
    scenario = given(nodes("g", 2, cpus=4, mem_mb=4096, gpus=2), config=tree(physics=limit))
    [queued_fact] = scenario.when(SubmitJob(job_sluid=J1, spec=spec(**job))).facts
    assert type(queued_fact).__name__ == "JobQueued"  # Slurm without DenyOnLimit: it pends
    state = evolve(scenario.state, queued_fact)
    assert _reasons(schedule(state, T0)) == {J1: reason}


def test_a_job_without_a_time_limit_gets_the_max_wall_that_applies() -> None:
    config = tree(physics="MaxWall: 30")
    outcome = given(nodes("n", 1), queued(J1), config=config).when(schedule_pass())
    [start] = outcome.matching(JobStarted)
    assert start.time_limit_s == 1800
    capped = tree(physics="MaxWall: 30") + (
        "Partitions:\n  - PartitionName: main\n    Default: YES\n    MaxTime: 10\n"
    )
    state = given(nodes("n", 1), queued(J1), config=capped).state
    assert state.jobs[J1].time_limit_s == 600  # never past the partition's MaxTime


# -- limits at submission -------------------------------------------------------------------


def test_max_submit_jobs_rejects_the_users_next_job_with_a_retryable_reason() -> None:
    state = given(
        queued(J1), queued(J2, spec(user="bob")), config=tree(physics="MaxSubmitJobs: 1")
    ).state
    [fact] = decide(state, SubmitJob(job_sluid=J3, spec=spec()), T0)
    assert isinstance(fact, JobRejected)
    assert (fact.reason, fact.retryable) == ("AssocMaxSubmitJobLimit", True)
    [other] = decide(state, SubmitJob(job_sluid=J3, spec=spec(user="carol")), T0)
    assert not isinstance(other, JobRejected)  # theory inherits 1, but carol has none there
    state = evolve(
        state,
        restamp(state, JobEnded(**M, job_sluid=J1, job_id=1, run_sluid="", state="CANCELLED")),
    )
    [again] = decide(state, SubmitJob(job_sluid=J3, spec=spec()), T0)
    assert not isinstance(again, JobRejected)


def test_group_submit_jobs_counts_the_subtree_and_each_array_task() -> None:
    state = given(queued(J1, spec(user="carol")), config=tree(physics="GrpSubmitJobs: 3")).state
    [fact] = decide(state, SubmitJob(job_sluid=J2, spec=spec(array="0-2")), T0)
    assert isinstance(fact, JobRejected) and fact.reason == "AssocGrpSubmitJobsLimit"
    facts = decide(state, SubmitJob(job_sluid=J2, spec=spec(array="0-1")), T0)
    assert [type(f).__name__ for f in facts] == ["JobQueued", "JobQueued"]
    [chem] = decide(_apply(state, facts), SubmitJob(job_sluid=J3, spec=spec(user="dave")), T0)
    assert not isinstance(chem, JobRejected)


def test_group_submit_jobs_zero_refuses_every_submission() -> None:
    state = given(config=tree(theory="GrpSubmitJobs: 0")).state
    [fact] = decide(state, SubmitJob(job_sluid=J1, spec=spec(user="carol")), T0)
    assert isinstance(fact, JobRejected) and fact.reason == "AssocGrpSubmitJobsLimit"


# -- backfill ----------------------------------------------------------------------------------


BACKFILL = "SchedulerParameters: {bf_policy: easy, bf_resolution: 1}\n"


def _backfill_history() -> list[Fact | list[Fact]]:
    """n1 busy until T0+100 s; a 2-node job waits for it; two short one-node jobs of physics
    (alice, then carol in theory) could both backfill on n2 before the reservation."""
    running = JobStarted(
        **M,
        job_sluid=J1,
        job_id=1,
        run_sluid=sluid(500),
        restart_count=0,
        nodes=("n1",),
        node_sluids=(node_sluid("n1"),),
        partition="main",
        user="dave",
        time_limit_s=100,
        submit_ms=T0,
    )
    return [
        nodes("n", 2, cpus=2),
        queued(J1, spec(user="dave", ntasks=2, time_limit_s=100)),
        running,
        queued(J2, spec(user="dave", nodes_min=2, ntasks=4, time_limit_s=100), time_ms=T0 + 1),
        queued(J3, spec(time_limit_s=50), time_ms=T0 + 2),
        queued(J4, spec(user="carol", time_limit_s=50), time_ms=T0 + 3),
    ]


def test_backfill_respects_account_limits_counting_its_own_starts() -> None:
    unlimited = given(*_backfill_history(), config=BACKFILL + tree())
    assert _started(schedule(unlimited.state, T0 + 10_000)) == [J3, J4]
    limited = given(*_backfill_history(), config=BACKFILL + tree(physics="GrpJobs: 1"))
    result = schedule_with_plan(limited.state, T0 + 10_000)
    assert _started(result.facts) == [J3]
    assert result.reserved_starts == {J2: T0 + 100_000}
    # the main pass gave J4 Priority; backfill, having started J3, names the limit
    assert _reasons(result.facts) == {J2: "Resources", J4: "AssocGrpJobsLimit"}
