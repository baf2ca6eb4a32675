"""Slurm's Fair Tree ranks (``fair_tree.c``'s ``_calc_tree_fs``): among every user association of
the tree, users before accounts on equal Level Fairshare, tied users sharing a rank, tied
accounts' children merged, an account tied with the user before it starting tied."""

from __future__ import annotations

import math

from scheduler import JobEnded, JobStarted
from scheduler.scheduling.fair_tree import (
    AssociationTree,
    association_tree,
    fair_tree,
    rank_users,
)
from scheduler.shard.state import ShardState
from tests.unit.core.gwt import T0, at, given, node_sluid, nodes, queued, sluid, spec

TWO_ACCOUNTS = """\
PriorityWeightFairshare: 1000
Accounts:
  - Name: a
    Users: [a1, a2]
  - Name: b
    Users: [b1, b2]
"""


def _tree(config: str, usage: dict[str, float]) -> tuple[ShardState, AssociationTree]:
    state = given(config=config).state
    state.meta.usage.update(usage)
    return state, association_tree(state)


def test_a_user_ranks_before_an_account_of_equal_level_fs_and_the_account_starts_tied() -> None:
    config = "Accounts:\n  - Name: a\n    Users: [a1, a2]\n"
    # root: user u (no account) and account a, each 100 of 200 with one share: LF 1 both
    state, tree = _tree(config, {"account:root": 200.0, "user::u": 100.0, "account:a": 100.0,
                                 "user:a:a1": 100.0})
    assert tree.level_fs["user::u"] == tree.level_fs["account:a"] == 1.0
    assert math.isinf(tree.level_fs["user:a:a2"])
    ranks = rank_users(tree)
    # u first (3/3); a is tied with u, so its first user (a2, unused) shares u's rank; a1 after
    assert ranks == {"user::u": 1.0, "user:a:a2": 1.0, "user:a:a1": 1 / 3}
    assert fair_tree(state, [("a", "a1"), ("", "u")]) == {("a", "a1"): 1 / 3, ("", "u"): 1.0}


def test_tied_accounts_have_their_children_merged_and_sorted_together() -> None:
    # a and b each used 100 of 200: tied. a's users used 50 each (LF 1), b's b1 all of b's
    # (LF 0.5) and b2 nothing (infinite): merged, b2 comes first, then a1 and a2 (tied), b1
    _, tree = _tree(TWO_ACCOUNTS, {
        "account:root": 200.0, "account:a": 100.0, "account:b": 100.0,
        "user:a:a1": 50.0, "user:a:a2": 50.0, "user:b:b1": 100.0})
    assert rank_users(tree) == {"user:b:b2": 1.0, "user:a:a1": 0.75, "user:a:a2": 0.75,
                                "user:b:b1": 0.25}


def test_ranks_count_every_user_of_the_tree_not_only_those_asked_about() -> None:
    # a used nothing (infinite), b everything: a's users rank first, then b's unused b2, b1 last
    state, _ = _tree(TWO_ACCOUNTS, {"account:root": 100.0, "account:b": 100.0,
                                    "user:b:b1": 100.0})
    assert fair_tree(state, [("b", "b1")]) == {("b", "b1"): 0.25}  # 1 of the tree's 4 users
    assert fair_tree(state, [("a", "a1"), ("b", "b2")]) == {("a", "a1"): 1.0, ("b", "b2"): 0.5}


def test_without_accounts_a_user_is_one_association_whatever_account_it_names() -> None:
    """No account tree: ``-A`` names nothing checked, so a job's account must not make a fresh
    association (alice, charged under ``a1``, would rank first again under ``a2``)."""

    job, run = sluid(1), sluid(601)
    state = given(
        nodes("n", 1, cpus=8),
        queued(job, spec(user="alice", account="a1", ntasks=4)),
        JobStarted(**at(T0), job_sluid=job, job_id=1, run_sluid=run, restart_count=0,
                   nodes=("n1",), node_sluids=(node_sluid("n1"),), partition="main",
                   user="alice", time_limit_s=0, submit_ms=T0),
        JobEnded(**at(T0 + 100_000), job_sluid=job, job_id=1, run_sluid=run,
                 state="COMPLETED"),
        queued(sluid(2), spec(user="bob"), time_ms=T0 + 100_000),
        config="PriorityWeightFairshare: 1000\nPriorityDecayHalfLife: 0\n",
    ).state
    assert state.meta.usage["user::alice"] == 400.0 and "user:a1:alice" not in state.meta.usage
    ranks = fair_tree(state, [("a2", "alice"), ("", "bob")])
    assert ranks == {("a2", "alice"): 0.5, ("", "bob"): 1.0}  # bob (unused) first
