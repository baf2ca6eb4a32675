"""``PlanShares`` (sshare): each shard's fair-share tree, usage and Fair Tree standing."""

from __future__ import annotations

import math

import pytest

from scheduler import Fact, JobEnded, JobStarted, evolve
from scheduler.records import PlanShares, SharesComputed
from scheduler.scheduling.shares import SHARES_MAX, share_rows
from tests.unit.core.gwt import T0, at, given, node_sluid, nodes, queued, sluid, spec
from tests.unit.core.test_fairshare import _ran

CONFIG = """\
PriorityWeightFairshare: 1000
PriorityDecayHalfLife: 0
Accounts:
  - Name: physics
    Fairshare: 3
    Users: [alice, bob]
  - Name: theory
    Parent: physics
    Fairshare: 1
    Users: [dave]
  - Name: bio
    Fairshare: 1
    Users: [carol]
"""


def _run(n: int, user: str, start_s: int, end_s: int, cpus: int) -> list[Fact]:
    """Job ``n`` of ``user`` on ``cpus`` CPUs from ``start_s`` to ``end_s`` (fact times rise:
    the shard's clock never goes back)."""
    job, run = sluid(n), sluid(600 + n)
    return [
        queued(job, spec(user=user, ntasks=cpus), time_ms=T0 + start_s * 1000),
        JobStarted(**at(T0 + start_s * 1000), job_sluid=job, job_id=n, run_sluid=run,
                   restart_count=0, nodes=("n1",), node_sluids=(node_sluid("n1"),),
                   partition="main", user=user, time_limit_s=0, submit_ms=T0),
        JobEnded(**at(T0 + end_s * 1000), job_sluid=job, job_id=n, run_sluid=run,
                 state="COMPLETED"),
    ]


def _ask(n: int = 90) -> PlanShares:
    return PlanShares(request_sluid=sluid(n), user="bob", nonce=7)


def _table(fact: SharesComputed) -> list[tuple[object, ...]]:
    return list(zip(fact.accounts, fact.users, fact.depths, fact.raw_shares, strict=True))


def test_the_tree_lists_root_then_each_accounts_users_then_its_sub_accounts() -> None:
    scenario = given(nodes("n", 1, cpus=8), config=CONFIG)
    [fact] = scenario.when(_ask(), T0).facts
    assert isinstance(fact, SharesComputed)
    assert (fact.request_sluid, fact.nonce, fact.user, fact.reuses) == (sluid(90), 7, "bob", "")
    assert _table(fact) == [
        ("root", "", 0, -1),
        ("bio", "", 1, 1), ("bio", "carol", 2, 1),
        ("physics", "", 1, 3), ("physics", "alice", 2, 1), ("physics", "bob", 2, 1),
        ("theory", "", 2, 1), ("theory", "dave", 3, 1),
    ]
    # shares over the siblings': bio 1 of 4, physics 3 of 4; under physics two users and theory
    assert fact.norm_shares == (1.0, 0.25, 1.0, 0.75, 1 / 3, 1 / 3, 1 / 3, 1.0)
    assert fact.raw_usage == (0.0,) * 8 and fact.effective_usage == (0.0,) * 8
    assert all(math.isinf(v) for v in fact.level_fs)  # nothing used: every LF infinite
    # every LF ties (infinite): tied accounts' children are merged, tied users share a rank and
    # an account tied with the user before it starts tied: every user ranks first, as in Slurm
    assert fact.fairshare == (-1.0, -1.0, 1.0, -1.0, 1.0, 1.0, -1.0, 1.0)


def test_usage_effective_usage_level_fs_and_rank_follow_fair_tree() -> None:
    scenario = given(
        nodes("n", 1, cpus=8),
        *_run(1, "alice", 0, 300, cpus=4),  # 1,200 CPU-seconds to physics
        *_run(2, "carol", 300, 400, cpus=4),  # 400 to bio
        *_run(3, "dave", 400, 500, cpus=2),  # 200 to theory, under physics
        config=CONFIG,
    )
    [fact] = scenario.when(_ask(), T0 + 10_000_000).facts
    rows = {(a, u): i for i, (a, u) in enumerate(zip(fact.accounts, fact.users, strict=True))}
    usage = dict(zip(rows, fact.raw_usage, strict=True))
    assert usage[("root", "")] == 1800.0
    assert usage[("physics", "")] == 1400.0 and usage[("physics", "alice")] == 1200.0
    assert usage[("theory", "")] == usage[("theory", "dave")] == 200.0
    assert usage[("bio", "")] == usage[("bio", "carol")] == 400.0
    i = rows[("physics", "alice")]
    assert fact.effective_usage[i] == 1200 / 1400 and fact.norm_usage[i] == 1200 / 1800
    assert fact.level_fs[i] == pytest.approx((1 / 3) / (1200 / 1400))
    bio, physics = rows[("bio", "")], rows[("physics", "")]
    assert fact.level_fs[bio] == pytest.approx(0.25 / (400 / 1800))  # 1.125: under-served
    assert fact.level_fs[physics] == pytest.approx(0.75 / (1400 / 1800))  # 0.964
    assert math.isinf(fact.level_fs[rows[("physics", "bob")]])
    # Fair Tree's walk: bio (LF 1.125) first → carol; then physics: bob (no usage), theory's
    # dave (LF 1/3 / (200/1400) = 2.33), alice (0.39) last: ranks 4/4, 3/4, 2/4, 1/4
    ranks = {u: fact.fairshare[rows[(a, u)]] for a, u in rows if u}
    assert ranks == {"carol": 1.0, "bob": 0.75, "dave": 0.5, "alice": 0.25}
    assert fact.fairshare[physics] == -1.0  # an account has no factor


def test_users_with_jobs_or_usage_but_no_configured_account_hang_under_root() -> None:
    scenario = given(nodes("n", 1, cpus=8), queued(sluid(5), spec(user="erin")))
    [fact] = scenario.when(_ask(), T0).facts
    assert _table(fact) == [("root", "", 0, -1), ("root", "erin", 1, 1)]
    assert fact.fairshare == (-1.0, 1.0)


def test_decayed_usage_is_shown_at_the_decision_time() -> None:
    config = CONFIG.replace("PriorityDecayHalfLife: 0", "PriorityDecayHalfLife: 0-1")
    scenario = given(nodes("n", 1, cpus=8), *_ran(sluid(1), 1, "alice", 300), config=config)
    ended = T0 + 300_000
    [fact] = scenario.when(_ask(), ended + 3_600_000).facts
    [now] = scenario.when(_ask(), ended).facts
    assert fact.half_life_s == 3600
    assert fact.raw_usage[0] == pytest.approx(now.raw_usage[0] / 2)  # one half-life later


def test_a_second_request_within_ten_seconds_reuses_the_answer() -> None:
    scenario = given(nodes("n", 1, cpus=8), config=CONFIG)
    [first] = scenario.when(_ask(90), T0).facts
    scenario.state = evolve(scenario.state, first)
    [again] = scenario.when(_ask(91), T0 + 9_000).facts
    assert again.reuses == first.event_sluid and again.accounts == ()
    [later] = scenario.when(_ask(92), T0 + 10_000).facts
    assert later.reuses == "" and later.accounts[0] == "root"


def test_the_answer_is_cut_at_its_limit() -> None:
    users = ", ".join(f"u{i}" for i in range(SHARES_MAX + 10))
    state = given(config=f"Accounts:\n  - Name: big\n    Users: [{users}]\n").state
    assert len(share_rows(state, T0)) == SHARES_MAX
