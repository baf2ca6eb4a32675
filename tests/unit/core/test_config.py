"""The cluster configuration: YAML with Slurm's keys, validated with file and line; ApplyConfig."""

from __future__ import annotations

import pytest

from scheduler import (
    DEFAULT_CONFIG,
    ApplyConfig,
    ConfigApplied,
    ConfigError,
    JobQueued,
    JobRejected,
    SubmitJob,
    decide,
    evolve,
    parse_config,
)
from scheduler.config.values import parse_time_s
from scheduler.nodes.hostlist import HostlistError, expand_hostlist
from tests.unit.core.gwt import T0, given, sluid, spec

FULL = """\
ClusterName: lab
SchedulerType: sched/backfill
SchedulerParameters: bf_window=60,bf_resolution=30,bf_max_job_test=100,bf_policy=easy
PriorityWeightAge: 1000
PriorityWeightFairshare: 5000
PriorityMaxAge: 7-0
PriorityDecayHalfLife: 1-12:00:00
MinJobAge: 600
EnforcePartLimits: YES
Operators: [root, ops]
Nodes:
  - NodeName: gpu[01-04]
    CPUs: 64
    RealMemory: 512G
    Gres: gpu:h100:8
    Features: [nvl, ib]
  - NodeName: cpu[1-8]
    CPUs: 32
    RealMemory: 131072
Partitions:
  - PartitionName: batch
    Nodes: cpu[1-8]
    Default: YES
    MaxTime: 1-00:00:00
    DefaultTime: 60
  - PartitionName: gpu
    Nodes: gpu[01-04]
    MaxNodes: 4
    PriorityTier: 10
    State: UP
QOS:
  - Name: normal
    Priority: 10
    MaxWall: 2-0
    MaxJobsPerUser: 20
    MaxSubmitJobsPerUser: 100
    GrpTRES: cpu=256,gres/gpu=16,node=8,mem=1T
Accounts:
  - Name: physics
    Fairshare: 3
    Users: [alice, bob]
  - Name: theory
    Parent: physics
    Fairshare: 1
    Users: [carol]
"""


def test_an_empty_text_is_the_embedded_default_cluster() -> None:
    config = parse_config("")
    assert config == DEFAULT_CONFIG
    [main] = config.partitions
    assert (main.name, main.default, main.nodes, main.state, main.max_time_s) == (
        "main",
        True,
        None,
        "UP",
        0,
    )


def test_a_full_file_parses_with_slurm_names_and_units() -> None:
    config = parse_config(FULL)
    assert [n.name for n in config.nodes][:5] == ["gpu01", "gpu02", "gpu03", "gpu04", "cpu1"]
    gpu01 = config.nodes[0]
    assert (gpu01.cpus, gpu01.mem_mb, gpu01.gpus, gpu01.gpu_type) == (64, 524288, 8, "h100")
    batch = config.partition("")
    assert batch is not None and (batch.name, batch.max_time_s, batch.default_time_s) == (
        "batch",
        86400,
        3600,
    )
    normal = config.qos_named("normal")
    assert normal is not None
    assert (normal.max_wall_s, normal.grp_gpus, normal.grp_mem_mb) == (172800, 16, 1048576)
    assert config.scheduler.policy == "easy" and config.scheduler.bf_window_s == 3600
    assert config.priority.decay_half_life_s == 36 * 3600
    assert config.account_of("carol") == "theory"


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("Nodes:\n  - NodeName: a1\n    CPUs: many\n", 3, "CPUs must be a whole number"),
        ("Partitions:\n  - PartitionName: p\n    MaxTime: soon\n", 3, "MaxTime"),
        ("Partitions:\n  - PartitionName: p\n    Nodes: x[1-2]\n", 2, "no NodeName defines"),
        ("Colour: blue\n", 1, "unknown key 'Colour'"),
        ("Nodes:\n  - NodeName: a1\n    Gres: gpu\n", 3, "gpu:COUNT"),
        ("Nodes: [\n", 2, "not valid YAML"),
        ("Partitions:\n  - PartitionName: p\n    State: SLEEPY\n", 3, "State must be one of"),
        ("SubmitFor: [bridge]\n", 1, "SubmitFor must map a submitter"),
        ("SubmitFor:\n  bridge: []\n", 2, "needs a submitter and a list of users"),
    ],
)
def test_errors_name_the_file_the_line_and_the_reason(text: str, line: int, words: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, "cluster.yaml")
    assert caught.value.line == line, caught.value
    assert words in caught.value.reason
    assert str(caught.value).startswith(f"cluster.yaml:{line}: ")


def test_slurm_time_formats() -> None:
    cases = {
        "30": 1800,
        "5:30": 330,
        "1:00:00": 3600,
        "2-0": 172800,
        "1-12": 129600,
        "1-00:30": 88200,
        "1-00:00:10": 86410,
        "UNLIMITED": 0,
        "infinite": 0,
    }
    assert {text: parse_time_s(text) for text in cases} == cases


def test_host_lists_expand_in_order_with_padding() -> None:
    assert expand_hostlist("n[8-10],gpu[01-02,5],login") == (
        "n8",
        "n9",
        "n10",
        "gpu01",
        "gpu02",
        "gpu5",
        "login",
    )
    with pytest.raises(HostlistError):
        expand_hostlist("n[3-1]")


def test_apply_config_records_the_text_and_replay_uses_it() -> None:
    request = ApplyConfig(config_sluid=sluid(50), kind="cluster", text=FULL, source="lab.yaml")
    outcome = given().when(request)
    [fact] = outcome.facts
    assert isinstance(fact, ConfigApplied) and fact.text == FULL and len(fact.digest) == 64
    state = outcome.evolved()
    assert state.config.cluster_name == "lab"
    assert decide(state, request, T0) == []  # the same text again changes nothing


def test_a_bad_file_is_rejected_and_the_running_configuration_stays() -> None:
    state = given(config=FULL).state
    bad = ApplyConfig(config_sluid=sluid(51), kind="cluster", text="Nodes: 3\n", source="x.yaml")
    [fact] = decide(state, bad, T0)
    assert isinstance(fact, JobRejected) and fact.reason == "InvalidConfig"
    assert fact.detail.startswith("x.yaml:1: ")
    state = evolve(state, fact)
    assert state.config.cluster_name == "lab"


def test_enforce_part_limits_rejects_at_submission() -> None:
    state = given(config=FULL).state
    too_long = SubmitJob(job_sluid=sluid(1), spec=spec(time_limit_s=2 * 86400))
    [fact] = decide(state, too_long, T0)
    assert isinstance(fact, JobRejected) and fact.reason == "PartitionTimeLimit"


def test_max_submit_jobs_per_user_rejects_with_a_retryable_reason() -> None:
    config = "QOS:\n  - Name: q\n    MaxSubmitJobsPerUser: 1\n"
    from tests.unit.core.gwt import queued

    state = given(queued(sluid(1), spec(qos="q")), config=config).state
    [fact] = decide(state, SubmitJob(job_sluid=sluid(2), spec=spec(qos="q")), T0)
    assert isinstance(fact, JobRejected)
    assert (fact.reason, fact.retryable) == ("QOSMaxSubmitJobPerUserLimit", True)


def test_a_job_wanting_resources_no_configured_node_has_is_rejected() -> None:
    state = given(config=FULL).state
    [fact] = decide(
        state,
        SubmitJob(job_sluid=sluid(1), spec=spec(partition="gpu", gpus_per_node=8, gpu_type="a100")),
        T0,
    )
    assert isinstance(fact, JobRejected) and fact.reason == "RequestedNodeConfigUnavailable"


def test_a_drained_partition_refuses_new_jobs_and_allow_qos_is_enforced() -> None:
    config = (
        "QOS:\n  - Name: a\n  - Name: b\nPartitions:\n  - PartitionName: p\n"
        "    Default: YES\n    AllowQos: [a]\n  - PartitionName: d\n    State: DRAIN\n"
    )
    state = given(config=config).state
    for bad, reason in (
        (spec(partition="d"), "PartitionNotAvailable"),
        (spec(qos="b"), "InvalidQOS"),
        (spec(), "InvalidQOS"),
    ):
        [fact] = decide(state, SubmitJob(job_sluid=sluid(1), spec=bad), T0)
        assert isinstance(fact, JobRejected) and fact.reason == reason, (bad, fact)
    [ok] = decide(state, SubmitJob(job_sluid=sluid(1), spec=spec(qos="a")), T0)
    assert not isinstance(ok, JobRejected)


def test_a_qos_usage_factor_is_a_decimal_of_at_least_zero() -> None:
    config = parse_config("QOS:\n  - Name: cheap\n    UsageFactor: 0.5\n  - Name: plain\n")
    assert [q.usage_factor for q in config.qos] == [0.5, 1.0]
    for bad in ("-1", "lots", "inf"):
        with pytest.raises(ConfigError) as caught:
            parse_config(f"QOS:\n  - Name: q\n    UsageFactor: {bad}\n", "cluster.yaml")
        assert caught.value.line == 3 and "UsageFactor" in caught.value.reason


def test_submit_for_names_whom_a_user_may_submit_for_and_never_root() -> None:
    auth = parse_config("SubmitFor:\n  bridge: [alice, 'ml-*']\n  portal: bob\n").auth
    assert auth.submit_for == (("bridge", ("alice", "ml-*")), ("portal", ("bob",)))
    assert auth.may_submit_for("bridge", "alice") and auth.may_submit_for("bridge", "ml-7")
    assert not auth.may_submit_for("bridge", "bob") and auth.may_submit_for("portal", "bob")
    assert not auth.may_submit_for("alice", "bob")
    assert not parse_config("SubmitFor: {bridge: ['*']}\n").auth.may_submit_for("bridge", "root")


def test_a_job_without_a_qos_is_charged_under_normal_as_slurms_default_qos() -> None:
    """Slurm gives a job without ``--qos`` its association's default QOS, ``normal`` unless an
    administrator set another: a partition's ``AllowQos: [normal, …]`` admits it and
    ``normal``'s limits hold it. Sluice once charged it under no QOS: every job without
    ``-q`` was refused by such a partition, and ``normal``'s limits never applied."""
    config = (
        "QOS:\n  - Name: normal\n    MaxSubmitJobsPerUser: 1\n  - Name: high\n"
        "Partitions:\n  - PartitionName: p\n    Default: YES\n    AllowQos: [normal, high]\n"
    )
    state = given(config=config).state
    [fact] = decide(state, SubmitJob(job_sluid=sluid(1), spec=spec()), T0)
    assert isinstance(fact, JobQueued) and fact.qos == "normal", fact
    state = given(fact, config=config).state
    [over] = decide(state, SubmitJob(job_sluid=sluid(2), spec=spec()), T0)
    assert isinstance(over, JobRejected) and over.reason == "QOSMaxSubmitJobPerUserLimit", over
    [high] = decide(state, SubmitJob(job_sluid=sluid(2), spec=spec(qos="high")), T0)
    assert isinstance(high, JobQueued) and high.qos == "high", high


def test_an_accounts_qos_list_bounds_the_qos_its_jobs_may_name_inherited_by_its_children(
) -> None:
    """Red team, 2026-12-07: any user could name any QOS, its priority and its ``UsageFactor``
    (a ``UsageFactor: 0`` QOS runs jobs whose usage never counts against the user's Fair Tree
    standing, ahead of everyone who pays). An account's ``QOS`` list (Slurm's association QOS)
    now bounds it: a child without one has its parent's; without any list on the path,
    ``normal`` alone (Slurm's default association list: before, any QOS)."""
    config = (
        "QOS:\n  - Name: normal\n  - Name: free\n    UsageFactor: 0\n    Priority: 1000\n"
        "Accounts:\n  - Name: root\n    QOS: [normal]\n"
        "  - Name: phys\n    Users: [alice]\n"
        "  - Name: vip\n    Users: [bob]\n    QOS: [normal, free]\n"
        "  - Name: lab\n    Parent: vip\n    Users: [alice]\n"
    )
    state = given(config=config).state

    def outcome(**fields: object) -> JobQueued | JobRejected:
        [fact] = decide(state, SubmitJob(job_sluid=sluid(1), spec=spec(**fields)), T0)
        assert isinstance(fact, JobQueued | JobRejected)
        return fact

    refused = outcome(user="alice", qos="free")  # her default account, phys: root's list
    assert isinstance(refused, JobRejected) and refused.reason == "InvalidQOS", refused
    assert "QOS free is not in account phys's QOS list" in refused.detail
    assert isinstance(outcome(user="alice", account="phys", qos="free"), JobRejected)
    assert isinstance(outcome(user="carol", qos="free"), JobRejected)  # no account: root's
    assert isinstance(outcome(user="alice", qos="normal"), JobQueued)
    assert isinstance(outcome(user="alice"), JobQueued)  # normal, the default
    assert isinstance(outcome(user="bob", qos="free"), JobQueued)
    assert isinstance(outcome(user="alice", account="lab", qos="free"), JobQueued)  # vip's list
    open_config = "QOS:\n  - Name: free\nAccounts:\n  - Name: phys\n    Users: [alice]\n"
    [fact] = decide(given(config=open_config).state,
                    SubmitJob(job_sluid=sluid(1), spec=spec(user="alice", qos="free")), T0)
    assert isinstance(fact, JobRejected) and fact.reason == "InvalidQOS"  # normal alone
    assert "phys's QOS list (normal)" in fact.detail
    [fact] = decide(given(config=open_config).state,
                    SubmitJob(job_sluid=sluid(1), spec=spec(user="alice")), T0)
    assert isinstance(fact, JobQueued)  # no QOS named, none defined as normal: nothing to check
    with pytest.raises(ConfigError) as caught:
        parse_config("QOS:\n  - Name: normal\nAccounts:\n  - Name: a\n    QOS: [gold]\n")
    assert "account a lists unknown QOS gold" in caught.value.reason


def test_an_account_admits_only_the_users_it_lists_and_the_others_run_under_root_unnamed(
) -> None:
    """An account whose entry listed no ``Users`` was open to every user (Slurm admits no one
    without an association): a user moving between such accounts started each with no usage
    and ranked first in each Fair Tree. Now it admits no one (root neither, as in Slurm); the
    users no account lists run under root by naming no account."""
    config = ("Accounts:\n  - Name: root\n  - Name: phys\n    Users: [alice]\n"
              "  - Name: spare\n    Parent: phys\n")
    state = given(config=config).state

    def outcome(**fields: object) -> JobQueued | JobRejected:
        [fact] = decide(state, SubmitJob(job_sluid=sluid(1), spec=spec(**fields)), T0)
        assert isinstance(fact, JobQueued | JobRejected)
        return fact

    refused = outcome(user="alice", account="spare")
    assert isinstance(refused, JobRejected) and refused.reason == "InvalidAccount", refused
    assert "user alice has no association with account spare" in refused.detail
    assert isinstance(outcome(user="bob", account="spare"), JobRejected)
    assert isinstance(outcome(user="bob", account="phys"), JobRejected)
    assert isinstance(outcome(user="alice", account="root"), JobRejected)  # phys is hers
    assert isinstance(outcome(user="alice", account="phys"), JobQueued)
    assert isinstance(outcome(user="bob", account="root"), JobRejected)  # a second association
    assert isinstance(outcome(user="bob"), JobQueued)  # no account lists bob: root's
    assert isinstance(outcome(user="root", account="spare"), JobRejected)  # root: as Slurm's


def test_an_account_tree_deeper_than_max_depth_is_refused_and_one_at_it_is_ranked() -> None:
    """Red team, 2026-12-07: a file with a chain of 1,200 accounts was taken, and every Fair
    Tree ranking (each scheduling pass with fair share weighted, every ``sshare``) then raised
    ``RecursionError``. A tree deeper than ``MAX_DEPTH`` is now refused with its line."""
    from scheduler.config.accounts import MAX_DEPTH
    from scheduler.records import PlanShares
    from scheduler.scheduling.fair_tree import association_tree, rank_users
    from tests.unit.core.gwt import nodes

    def chain(depth: int) -> str:
        return "PriorityWeightFairshare: 1000\nAccounts:\n" + "".join(
            f"  - Name: a{i}\n" + (f"    Parent: a{i - 1}\n" if i else "") +
            ("    Users: [alice]\n" if i == depth - 1 else "") for i in range(depth))

    with pytest.raises(ConfigError) as caught:
        parse_config(chain(MAX_DEPTH + 1), "cluster.yaml")
    assert f"is more than {MAX_DEPTH} levels below root" in caught.value.reason
    scenario = given(nodes("n", 1), config=chain(MAX_DEPTH))
    assert list(rank_users(association_tree(scenario.state)).values()) == [1.0]
    [answer] = decide(scenario.state, PlanShares(request_sluid=sluid(9)), T0)
    assert len(answer.accounts) == MAX_DEPTH + 2  # root, every account, alice
