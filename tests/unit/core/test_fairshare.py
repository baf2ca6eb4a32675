"""Fair share: usage charged per run, decayed, ranked with Fair Tree (accrual: its own tests)."""

from __future__ import annotations

from scheduler import Fact, JobEnded, JobStarted
from scheduler.scheduling.fair_tree import fair_tree
from scheduler.scheduling.fairshare import decayed
from tests.unit.core.gwt import T0, M, at, given, node_sluid, nodes, queued, sluid, spec

CONFIG = """\
PriorityWeightFairshare: 1000
PriorityDecayHalfLife: 0-1
Accounts:
  - Name: physics
    Fairshare: 3
    Users: [alice, bob]
  - Name: bio
    Fairshare: 1
    Users: [carol]
"""


def _ran(job: str, job_id: int, user: str, seconds: int, cpus: int = 4) -> list[Fact]:
    run = sluid(600 + job_id)
    return [
        queued(job, spec(user=user, ntasks=cpus)),
        JobStarted(
            **M,
            job_sluid=job,
            job_id=job_id,
            run_sluid=run,
            restart_count=0,
            nodes=("n1",),
            node_sluids=(node_sluid("n1"),),
            partition="main",
            user=user,
            time_limit_s=0,
            submit_ms=T0,
        ),
        JobEnded(
            **at(T0 + seconds * 1000),
            job_sluid=job,
            job_id=job_id,
            run_sluid=run,
            state="COMPLETED",
        ),
    ]


def test_usage_is_charged_to_the_user_and_every_account_up_to_root() -> None:
    state = given(
        nodes("n", 1, cpus=8),
        *_ran(sluid(1), 1, "alice", 100),
        config=CONFIG,
    ).state
    usage = state.meta.usage
    assert usage["user:physics:alice"] == usage["account:physics"] == usage["account:root"]
    assert usage["user:physics:alice"] > 0


def test_fair_tree_ranks_the_under_served_account_and_user_first() -> None:
    state = given(
        nodes("n", 1, cpus=8),
        *_ran(sluid(1), 1, "alice", 3600),
        *_ran(sluid(2), 2, "carol", 60),
        config=CONFIG,
    ).state
    factors = fair_tree(state, [("physics", "alice"), ("physics", "bob"), ("bio", "carol")])
    # physics used 60x bio with 3x the shares: bio's LF is higher, carol ranks first;
    # inside physics bob (no usage) ranks before alice.
    assert factors[("bio", "carol")] == 1.0
    assert factors[("physics", "bob")] == 2 / 3
    assert factors[("physics", "alice")] == 1 / 3


def test_decay_halves_usage_every_half_life() -> None:
    assert decayed(8.0, 3_600_000, 3600) == 4.0
    assert decayed(8.0, 0, 3600) == 8.0
