"""``TestSubmitJob`` (sbatch --test-only): the shard's answer, planned by the scheduling pass,
changes nothing and is the same when decided again."""

from __future__ import annotations

import pickle

import pytest

from scheduler.access.identity import Attributed, Identity
from scheduler.config.cluster import parse_config
from scheduler.decide import decide
from scheduler.evolve import evolve
from scheduler.records import (
    ApplyConfig,
    Fact,
    JobQueued,
    JobRejected,
    JobTestAnswered,
    NodeStateChanged,
    RequestDenied,
    SubmitJob,
)
from scheduler.records import (
    TestSubmitJob as WillRunRequest,
)
from scheduler.shard.state import ShardState, initial_state
from tests.unit.core.gwt import (
    CLUSTER,
    SHARD,
    T0,
    M,
    Scenario,
    given,
    node_sluid,
    nodes,
    queued,
    restamp,
    sluid,
    spec,
    started,
)

S = 1000
CONFIG = "SchedulerParameters: {{bf_policy: {policy}, bf_resolution: 1}}\n"
TEST = sluid(900, T0 + 5 * S)


def _test(**fields: object) -> WillRunRequest:
    return WillRunRequest(job_sluid=TEST, spec=spec(**fields), nonce=77)


def _answer(scenario: Scenario, request: WillRunRequest, now_ms: int = T0 + 10 * S
            ) -> JobTestAnswered:
    [fact] = scenario.when(request, now_ms).facts
    assert isinstance(fact, JobTestAnswered)
    return fact


def _busy(policy: str = "conservative") -> Scenario:
    """n1-n2 run a 100 s job, n3 a 300 s one, n4 is free."""
    return given(
        nodes("n", 4),
        queued(sluid(1), spec(nodes_min=2, time_limit_s=100)),
        started(sluid(1), ("n1", "n2"), 100, 1),
        queued(sluid(2), spec(time_limit_s=300)),
        started(sluid(2), ("n3",), 300, 2),
        config=CONFIG.format(policy=policy),
    )


def test_an_empty_cluster_answers_now() -> None:
    scenario = given(nodes("n", 2, cpus=4), config=CONFIG.format(policy="easy"))
    answer = _answer(scenario, _test(nodes_min=2, ntasks=2, time_limit_s=60))
    assert (answer.reason, answer.start_ms) == ("", T0 + 10 * S)
    assert (answer.nodes, answer.cpus, answer.partition) == ("n[1-2]", 2, "main")
    assert answer.job_id == scenario.state.meta.next_job_id
    assert (answer.job_sluid, answer.nonce, answer.user) == (TEST, 77, "alice")


def test_a_job_that_fits_on_the_free_node_starts_now() -> None:
    answer = _answer(_busy(), _test(time_limit_s=60))
    assert (answer.start_ms, answer.nodes) == (T0 + 10 * S, "n4")


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
def test_busy_nodes_answer_the_end_of_the_earliest_running_time_limit(policy: str) -> None:
    # two nodes: n1-n2, freed when the 100 s job's limit ends (n4 is free now)
    answer = _answer(_busy(policy), _test(nodes_min=2, time_limit_s=60))
    assert answer.start_ms == T0 + 100 * S
    assert answer.nodes == "n[1-2]"  # the planner takes the ready nodes in node order


def test_pending_higher_priority_jobs_ahead_are_planned_first_under_conservative() -> None:
    scenario = _busy("conservative")
    # a 2-node job queued first takes n1-n2 (or n4) at 100 s for 500 s: the test waits for it
    ahead = queued(sluid(3), spec(nodes_min=3, time_limit_s=500), time_ms=T0 + 2 * S)
    evolve(scenario.state, _restamped(scenario, ahead))
    answer = _answer(scenario, _test(nodes_min=3, time_limit_s=60))
    assert answer.start_ms == T0 + 600 * S  # after the job ahead's reservation [100 s, 600 s)


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
def test_every_blocked_job_ahead_is_planned_first_under_each_policy(policy: str) -> None:
    # n1-n3 busy until 100 s; A (4 nodes, 100 s) then B (4 nodes, 300 s) wait: EASY reserves
    # only A, FCFS nothing, yet the test (4 nodes) can start only after both: at 500 s
    scenario = given(
        nodes("n", 4),
        queued(sluid(1), spec(nodes_min=3, time_limit_s=100)),
        started(sluid(1), ("n1", "n2", "n3"), 100, 1),
        queued(sluid(2), spec(nodes_min=4, time_limit_s=100), time_ms=T0 + 1),
        queued(sluid(3), spec(nodes_min=4, time_limit_s=300), time_ms=T0 + 2),
        config=CONFIG.format(policy=policy),
    )
    answer = _answer(scenario, _test(nodes_min=4, time_limit_s=60), T0)
    assert (answer.start_ms, answer.nodes) == (T0 + 500 * S, "n[1-4]")


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
def test_on_a_block_topology_the_plugin_places_the_test(policy: str) -> None:
    # n3, n4, n7, n8 are free now (four nodes, two blocks); block b1 is whole at 100 s
    scenario = given(
        nodes("n", 8),
        queued(sluid(1), spec(nodes_min=2, time_limit_s=100)),
        started(sluid(1), ("n1", "n2"), 100, 1),
        queued(sluid(2), spec(nodes_min=2, time_limit_s=300)),
        started(sluid(2), ("n5", "n6"), 300, 2),
        config=CONFIG.format(policy=policy),
    )
    flat = _answer(scenario, _test(nodes_min=4, time_limit_s=60), T0)
    assert (flat.start_ms, flat.nodes) == (T0, "n[3-4,7-8]")
    topology = "BlockName=b1 Nodes=n[1-4]\nBlockName=b2 Nodes=n[5-8]\nBlockSizes=4\n"
    [applied] = decide(scenario.state, ApplyConfig(config_sluid=sluid(90), kind="topology",
                                                   text=topology), T0)
    evolve(scenario.state, applied)
    block = _answer(scenario, _test(nodes_min=4, time_limit_s=60), T0)
    assert (block.start_ms, block.nodes) == (T0 + 100 * S, "n[1-4]")


def test_a_higher_priority_test_goes_before_the_queue() -> None:
    config = "SchedulerParameters: {bf_policy: conservative, bf_resolution: 1}\n" \
             "PriorityWeightQOS: 1000\nQOS:\n  - {Name: normal}\n  - {Name: high, Priority: 10}\n"
    scenario = given(
        nodes("n", 4),
        queued(sluid(1), spec(nodes_min=2, time_limit_s=100)),
        started(sluid(1), ("n1", "n2"), 100, 1),
        queued(sluid(2), spec(time_limit_s=300)),
        started(sluid(2), ("n3",), 300, 2),
        queued(sluid(3), spec(nodes_min=3, time_limit_s=500), time_ms=T0 + 2 * S),
        config=config,
    )
    answer = _answer(scenario, _test(nodes_min=3, time_limit_s=60, qos="high"))
    assert answer.start_ms == T0 + 100 * S  # ahead of the 500 s job: its reservation is later


def test_down_and_drained_nodes_are_not_planned() -> None:
    scenario = given(nodes("n", 3, cpus=4), config=CONFIG.format(policy="conservative"))
    for name, state in (("n1", "DOWN"), ("n2", "DRAIN")):
        fact = NodeStateChanged(**M, node_sluid=node_sluid(name), name=name, state=state)
        evolve(scenario.state, _restamped(scenario, fact))
    answer = _answer(scenario, _test(time_limit_s=60))
    assert (answer.reason, answer.nodes) == ("", "n3")
    never = _answer(scenario, _test(nodes_min=2, time_limit_s=60))
    assert never.reason == "NeverRuns"
    assert never.detail.startswith("Requested node configuration is not available")


def test_too_big_gets_the_refusal_a_submission_gets() -> None:
    scenario = given(nodes("n", 2, cpus=4), config=CONFIG.format(policy="easy"))
    answer = _answer(scenario, _test(nodes_min=3))
    [rejected] = scenario.when(SubmitJob(job_sluid=TEST, spec=spec(nodes_min=3)), T0).facts
    assert isinstance(rejected, JobRejected)
    assert answer.reason == rejected.reason != ""
    assert answer.detail == rejected.detail
    assert (answer.start_ms, answer.nodes, answer.job_id) == (0, "", 0)


def test_an_unknown_partition_is_refused_as_a_submission() -> None:
    scenario = given(nodes("n", 2), config=CONFIG.format(policy="easy"))
    assert _answer(scenario, _test(partition="nope")).reason == "InvalidPartition"


def test_a_test_under_a_jobs_sluid_is_refused_without_a_pass() -> None:
    """A test must have a SLUID of its own: one under a job's (anyone's: squeue shows them) is
    refused as a submission under it would be, and plans nothing."""
    job = sluid(901, T0)
    scenario = given(nodes("n", 2), queued(job, spec(user="bob")),
                     config=CONFIG.format(policy="easy"))
    answer = _answer(scenario, WillRunRequest(job_sluid=job, spec=spec(), nonce=77))
    assert (answer.reason, answer.user, answer.nonce) == ("SluidInUse", "alice", 77)
    assert (answer.start_ms, answer.nodes, answer.job_id) == (0, "", 0)
    assert "bob" not in answer.detail


def test_another_users_test_is_denied_as_a_submission_would_be() -> None:
    scenario = given(nodes("n", 2), config=CONFIG.format(policy="easy"))
    bob = Identity(kind="munge", user="bob")
    [fact] = decide(scenario.state, Attributed(request=_test(), identity=bob), T0)
    assert isinstance(fact, RequestDenied)
    assert (fact.request, fact.reason, fact.subject_sluid) == (
        "TestSubmitJob", "UserMismatch", TEST)


def test_the_verified_user_is_answered() -> None:
    scenario = given(nodes("n", 2), config=CONFIG.format(policy="easy"))
    carol = Identity(kind="munge", user="carol")
    request = WillRunRequest(job_sluid=TEST, spec=spec(user=""), nonce=1)
    [fact] = decide(scenario.state, Attributed(request=request, identity=carol), T0)
    assert isinstance(fact, JobTestAnswered)
    assert (fact.user, fact.reason) == ("carol", "")


def test_deciding_changes_nothing_and_deciding_again_gives_the_same_answer() -> None:
    scenario = _busy("conservative")
    before = _snapshot(scenario.state)
    first = scenario.when(_test(nodes_min=2, time_limit_s=60), T0 + 10 * S).facts
    assert _snapshot(scenario.state) == before  # deciding wrote nothing
    assert scenario.state.carried is None or scenario.state.carried is not first
    again = scenario.when(_test(nodes_min=2, time_limit_s=60), T0 + 10 * S).facts
    assert again == first


def test_folding_an_answer_advances_only_the_fact_counters() -> None:
    scenario = _busy("conservative")
    [fact] = scenario.when(_test(nodes_min=2, time_limit_s=60), T0 + 10 * S).facts
    jobs, next_id, seq = dict(scenario.state.jobs), scenario.state.meta.next_job_id, \
        scenario.state.meta.shard_seq
    evolve(scenario.state, fact)
    assert scenario.state.meta.shard_seq == seq + 1
    assert scenario.state.meta.next_job_id == next_id
    assert scenario.state.jobs == jobs
    assert TEST not in scenario.state.meta.known


def test_a_replayed_ledger_with_answers_gives_the_same_state() -> None:
    config = parse_config(CONFIG.format(policy="conservative"))
    live = initial_state(SHARD, CLUSTER, config)
    ledger: list[Fact] = []
    for item in (nodes("n", 4), [queued(sluid(1), spec(nodes_min=2, time_limit_s=100))],
                 [started(sluid(1), ("n1", "n2"), 100, 1)]):
        for given_fact in item:
            ledger.append(restamp(live, given_fact))
            evolve(live, ledger[-1])
    answers = []
    for request, now in ((_test(time_limit_s=60), T0 + 10 * S),
                         (SubmitJob(job_sluid=sluid(901, T0 + 11 * S), spec=spec(time_limit_s=60)),
                          T0 + 11 * S),
                         (_test(nodes_min=4, time_limit_s=60), T0 + 12 * S)):
        for fact in decide(live, request, now):
            ledger.append(fact)
            evolve(live, fact)
            answers.append(fact)
    test, submitted, later = answers
    assert isinstance(test, JobTestAnswered) and isinstance(later, JobTestAnswered)
    assert isinstance(submitted, JobQueued)
    assert submitted.job_id == test.job_id  # the test took no job id: the submission gets it
    assert later.start_ms == T0 + 100 * S  # n1-n2 free at the 100 s limit
    replayed = initial_state(SHARD, CLUSTER, config)
    for fact in ledger:
        evolve(replayed, fact)
    assert _snapshot(replayed) == _snapshot(live)


def _restamped(scenario: Scenario, fact: Fact) -> Fact:
    return restamp(scenario.state, fact)


def _snapshot(state: ShardState) -> bytes:
    """The state's contents (jobs, queue, nodes, counters), not its caches."""
    return pickle.dumps((sorted(state.jobs.items()), list(state.pending), sorted(state.running),
                         sorted(state.nodes.items()), state.meta))
