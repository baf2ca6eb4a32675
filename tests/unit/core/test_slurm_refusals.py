"""Refusing the impossible at submission, in Slurm's words, and the job options that restrict
or size a job (``-w``, ``-x``, ``--constraint``, ``--gpus``, ``--ntasks-per-node``,
``--mem-per-cpu``), driven through the real core (``decide``/``schedule``/``evolve``)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler import (
    ApplyConfig,
    JobQueued,
    JobRejected,
    JobStarted,
    RegisterNode,
    SubmitJob,
    UpdateJob,
    decide,
    evolve,
    initial_state,
    schedule,
)
from scheduler.jobs.node_filter import NodeFilterError, node_filter
from scheduler.shard.reasons import RejectionReason
from tests.unit.core.gwt import CLUSTER, SHARD, T0, node_sluid, sluid, spec

NODE_CONFIG = "Requested node configuration is not available"


class Shard:
    """One shard with registered nodes n1..n4 (n1, n2 with the ``ssd`` feature)."""

    def __init__(self, config: str = "", registered: int = 4) -> None:
        self.state = initial_state(SHARD, CLUSTER)
        self.now, self.count = T0, 0
        if config:
            self.do(ApplyConfig(config_sluid=sluid(900), kind="cluster", text=config))
        for i in range(1, registered + 1):
            self.do(RegisterNode(node_sluid=node_sluid(f"n{i}"), name=f"n{i}", cpus=4,
                                 mem_mb=8_192, gpus=2 if i <= 2 else 0,
                                 features=("ssd",) if i <= 2 else ()))

    def do(self, request: Any = None, user: str = "") -> list[Any]:
        self.now += 1_000
        facts = (schedule(self.state, self.now) if request is None
                 else decide(self.state, request, self.now))
        for fact in facts:
            self.state = evolve(self.state, fact)
        return facts

    def submit(self, **fields: Any) -> tuple[str, list[Any]]:
        self.count += 1
        job = sluid(self.count, self.now)
        return job, self.do(SubmitJob(job_sluid=job, spec=spec(**fields)))

    def refusal(self, **fields: Any) -> JobRejected:
        _, facts = self.submit(**fields)
        assert len(facts) == 1 and isinstance(facts[0], JobRejected), facts
        return facts[0]

    def started_on(self, **fields: Any) -> tuple[str, ...]:
        job, facts = self.submit(**fields)
        assert isinstance(facts[0], JobQueued), facts
        started = [f for f in self.do() if isinstance(f, JobStarted) and f.job_sluid == job]
        assert started, f"job {fields} did not start"
        return tuple(started[0].nodes)


@pytest.mark.parametrize(
    ("fields", "reason", "words"),
    [
        ({"nodes_min": 9}, "NodeCountTooLarge", NODE_CONFIG),
        ({"cpus_per_task": 64}, "RequestedNodeConfigUnavailable", NODE_CONFIG),
        ({"mem_per_node_mb": 9_000}, "RequestedNodeConfigUnavailable", NODE_CONFIG),
        ({"gpus_per_node": 3}, "RequestedNodeConfigUnavailable", NODE_CONFIG),
        ({"gpus": 6}, "RequestedNodeConfigUnavailable", NODE_CONFIG),  # all on 1 node
        ({"ntasks_per_node": 5}, "RequestedNodeConfigUnavailable", NODE_CONFIG),
        ({"mem_per_cpu_mb": 4_096, "cpus_per_task": 3}, "RequestedNodeConfigUnavailable",
         NODE_CONFIG),
        ({"constraint": "ssd", "nodes_min": 3}, "NodeCountTooLarge", NODE_CONFIG),
        ({"constraint": "nvme"}, "InvalidFeature", "Invalid feature specification"),
        ({"constraint": "ssd&[x*2]"}, "InvalidFeature", "Invalid feature specification"),
        ({"nodelist": "n9"}, "InvalidNodeName", "Invalid node name specified"),
        ({"nodelist": "n[1-"}, "InvalidNodeName", "Invalid node name specified"),
        ({"exclude": "n[1-3]", "nodes_min": 2}, "NodeCountTooLarge", NODE_CONFIG),
        ({"qos": "nosuch"}, "InvalidQOS", "Invalid qos specification"),
        ({"dependency": "afterok:4242"}, "InvalidDependency", "Job dependency problem"),
    ],
)
def test_an_impossible_request_is_rejected_with_slurms_words(
    fields: dict[str, Any], reason: str, words: str
) -> None:
    fact = Shard().refusal(**fields)
    assert fact.reason == reason and not fact.retryable
    assert fact.detail.startswith(words), fact.detail


def test_every_refusal_slurm_has_a_message_for_carries_it() -> None:
    named = {r.name: r.slurm for r in vars(RejectionReason).values() if hasattr(r, "slurm")}
    assert named["InvalidAccount"] == "Invalid account or account/partition combination specified"
    assert named["NodeCountTooLarge"] == named["RequestedNodeConfigUnavailable"] == (
        "Requested node configuration is not available")


def test_unknown_accounts_and_accounts_without_the_user_are_refused() -> None:
    config = ("Accounts:\n  - Name: physics\n    Users: [alice]\n"
              "  - Name: chemistry\n    Users: [bob]\n")
    shard = Shard(config)
    for account in ("nosuch", "chemistry"):
        fact = shard.refusal(account=account, user="alice")
        assert (fact.reason, fact.detail.split(":")[0]) == (
            "InvalidAccount", "Invalid account or account/partition combination specified")
    _, facts = shard.submit(account="physics", user="alice")
    assert isinstance(facts[0], JobQueued)


def test_with_no_node_registered_or_configured_a_job_waits_for_nodes_to_join() -> None:
    _, facts = Shard(registered=0).submit(nodes_min=64)
    assert isinstance(facts[0], JobQueued)


def test_configured_nodes_decide_even_before_they_register() -> None:
    config = "Nodes:\n  - NodeName: c[1-2]\n    CPUs: 8\n    RealMemory: 1000\n"
    shard = Shard(config, registered=0)
    assert shard.refusal(nodes_min=3).reason == "NodeCountTooLarge"
    assert shard.refusal(nodelist="n1").reason == "InvalidNodeName"


def test_the_options_restrict_where_a_job_runs() -> None:
    shard = Shard()
    assert shard.started_on(nodelist="n3", command=("sleep",)) == ("n3",)
    assert shard.started_on(nodelist="n[1-2]", command=("sleep",)) == ("n1", "n2")
    assert set(shard.started_on(exclude="n[1-3]", cpus_per_task=4)) == {"n4"}


def test_a_constraint_picks_nodes_with_the_features() -> None:
    shard = Shard()
    assert shard.started_on(constraint="ssd", exclude="n1") == ("n2",)
    assert shard.started_on(constraint="nvme|ssd", cpus_per_task=3) == ("n1",)


def test_total_gpus_are_spread_over_the_nodes() -> None:
    shard = Shard()
    job, facts = shard.submit(gpus=4, nodes_min=2)
    assert isinstance(facts[0], JobQueued)
    assert shard.state.jobs[job].demand.gpus == 2
    job, _ = shard.submit(ntasks_per_node=2, cpus_per_task=2, mem_per_cpu_mb=1_000)
    demand = shard.state.jobs[job].demand
    assert (demand.cpus, demand.mem_mb) == (4, 4_000)


def test_a_user_may_lower_a_time_limit_and_only_an_operator_raise_it() -> None:
    shard = Shard("Operators: [ops]\n")
    job, _ = shard.submit(user="alice", time_limit_s=3600, hold=True)

    def update(user: str, limit: int) -> list[Any]:
        return shard.do(UpdateJob(job_sluid=job, user=user,
                                  changes={"time_limit_s": str(limit)}))

    assert isinstance(update("alice", 1800)[0], JobQueued)
    refused = update("alice", 7200)
    assert isinstance(refused[0], JobRejected) and refused[0].reason == "AccessDenied"
    assert refused[0].detail.startswith("Access/permission denied")
    assert isinstance(update("alice", 0)[0], JobRejected)  # 0 is UNLIMITED: higher still
    assert isinstance(update("ops", 7200)[0], JobQueued)
    assert shard.state.jobs[job].time_limit_s == 7200


@pytest.mark.parametrize("text", ["a&b|c", "a,b", "gpu.h100"])
def test_constraints_parse(text: str) -> None:
    assert node_filter(text, "", "").any_of


@pytest.mark.parametrize("text", ["a&&b", "[a|b]", "a*2", ""])
def test_malformed_constraints_are_refused(text: str) -> None:
    if not text:
        assert not node_filter(text, "", "").restricts
        return
    with pytest.raises(NodeFilterError):
        node_filter(text, "", "")


def test_a_node_filter_allows_what_its_options_say() -> None:
    wanted = node_filter("a&b|c", "n[1-3]", "n2")
    assert wanted.allows("n1", ["a", "b"]) and wanted.allows("n3", ["c"])
    assert not wanted.allows("n1", ["a"]) and not wanted.allows("n2", ["c"])
    assert not wanted.allows("n4", ["c"])
