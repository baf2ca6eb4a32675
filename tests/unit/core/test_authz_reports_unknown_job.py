"""A run report about a job the shard does not have (a made-up SLUID, or a job purged since)
still needs a node credential when it names one of the shard's nodes: a failed ``ReportEpilog``
or ``ReportProlog`` drains the node it names (Slurm drains a node on any epilog or prolog
error). Found as a client in another language: alice's JWT, and with ``AuthRequired`` no
credential at all, drained any node by naming it in a failed epilog of a made-up job; the
authorization let every report about an unknown job through, as if it were another shard's.
A report naming neither a job nor a node of this shard is still left alone (another shard's)."""

from __future__ import annotations

from typing import Any

from scheduler import (
    Attributed,
    Identity,
    NodeStateChanged,
    ReportEpilog,
    ReportJobExit,
    ReportProlog,
    RequestDenied,
)
from tests.unit.core.gwt import given, nodes, sluid

UNKNOWN_JOB, UNKNOWN_RUN = sluid(41), sluid(42)
ALICE = Identity(user="alice", uid=1001, gid=1001, kind="jwt")
NODE_N1 = Identity(user="sluice", kind="jwt", node="n1")
REQUIRED = "AuthRequired: true\nAuthNodeNames: ['n*']\n"


def _failed(kind: type, node: str) -> Any:
    return kind(job_sluid=UNKNOWN_JOB, run_sluid=UNKNOWN_RUN, node_sluid="", node_name=node,
                ok=False, exit_code=1, detail="forged")


def _names(facts: list[Any]) -> list[str]:
    return [type(f).__name__ for f in facts]


def test_a_user_cannot_drain_a_node_with_a_failed_epilog_or_prolog_of_an_unknown_job() -> None:
    scenario = given(nodes("n", 2), config=REQUIRED)
    for kind in (ReportEpilog, ReportProlog):
        facts = scenario.when(Attributed(request=_failed(kind, "n1"), identity=ALICE)).facts
        assert _names(facts) == ["RequestDenied"], (kind, facts)
        assert isinstance(facts[0], RequestDenied)
        assert (facts[0].reason, facts[0].requester) == ("NotNodeCredential", "alice")


def test_without_a_credential_a_required_cluster_refuses_such_a_report() -> None:
    scenario = given(nodes("n", 2), config=REQUIRED)
    for kind in (ReportEpilog, ReportProlog):
        facts = scenario.when(_failed(kind, "n2")).facts
        assert _names(facts) == ["RequestDenied"], (kind, facts)
        assert isinstance(facts[0], RequestDenied) and facts[0].reason == "Unauthenticated"


def test_the_nodes_own_credential_still_drains_it_after_a_failed_epilog_of_a_purged_job() -> None:
    scenario = given(nodes("n", 2), config=REQUIRED)
    facts = scenario.when(Attributed(request=_failed(ReportEpilog, "n1"),
                                     identity=NODE_N1)).facts
    assert _names(facts) == ["NodeEpilogCompleted", "NodeStateChanged"], facts
    assert isinstance(facts[1], NodeStateChanged) and facts[1].state == "DRAIN"


def test_a_report_naming_neither_a_job_nor_a_node_of_this_shard_is_left_to_another() -> None:
    scenario = given(nodes("n", 2), config=REQUIRED)
    exit_report = ReportJobExit(job_sluid=UNKNOWN_JOB, run_sluid=UNKNOWN_RUN, node_sluid="",
                                node_name="other7", exit_code=0)
    assert scenario.when(exit_report).facts == []
    assert scenario.when(Attributed(request=exit_report, identity=ALICE)).facts == []
