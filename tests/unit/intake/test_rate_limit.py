"""The intake's per-user token buckets (Slurm's ``rl_enable``): properties and named cases."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.rate_limit import RateLimitConfig, RateLimiter, parse_rate_limits
from scheduler.access.identity import Identity

ALICE = Identity(user="alice", kind="jwt")
BOB = Identity(user="bob", kind="munge", uid=1006)


def _limiter(**changes: object) -> RateLimiter:
    return RateLimiter(RateLimitConfig(enabled=True, **changes))  # type: ignore[arg-type]


configs = st.builds(
    lambda size, rate, period, cost: RateLimitConfig(
        enabled=True, bucket_size=size, refill_rate=rate, refill_period_s=period,
        test_only_cost=cost),
    st.integers(1, 40), st.integers(1, 10), st.integers(1, 5), st.integers(1, 15))
requests = st.lists(
    st.tuples(st.integers(0, 3_000), st.sampled_from(["SubmitJob", "TestSubmitJob",
                                                      "PlanStarts", "CancelJob"])),
    min_size=1, max_size=300)


@settings(max_examples=300, deadline=None)
@given(configs, requests)
def test_a_user_is_never_granted_more_than_a_bucket_and_the_refills_of_any_window(
        config: RateLimitConfig, gaps: list[tuple[int, str]]) -> None:
    limiter = RateLimiter(config)
    now, granted = 1_000_000, []
    for gap, name in gaps:
        now += gap
        if limiter.admit(ALICE, name, now):
            granted.append((now, limiter.cost(name)))
    period_ms = config.refill_period_s * 1000
    for i, (start, _) in enumerate(granted):
        for j in range(i, len(granted)):
            end = granted[j][0]
            spent = sum(cost for _, cost in granted[i:j + 1])
            # refills happen at whole periods: a window of t ms crosses at most ceil(t / period)
            # of them (Slurm's rate_limit.c counts time in whole refill periods)
            crossed = math.ceil((end - start) / period_ms) if end > start else 0
            assert spent <= config.bucket_size + config.refill_rate * crossed


@settings(max_examples=200, deadline=None)
@given(configs, requests)
def test_the_same_records_in_the_same_order_get_the_same_verdicts(
        config: RateLimitConfig, gaps: list[tuple[int, str]]) -> None:
    def verdicts() -> list[bool]:
        limiter, now, out = RateLimiter(config), 5_000, []
        for gap, name in gaps:
            now += gap
            out.append(limiter.admit(ALICE if gap % 2 else BOB, name, now))
        return out
    assert verdicts() == verdicts()


@settings(max_examples=200, deadline=None)
@given(configs, st.integers(0, 100))
def test_a_user_who_waits_a_full_refill_gets_a_whole_bucket_again(
        config: RateLimitConfig, flood: int) -> None:
    limiter = RateLimiter(config)
    for k in range(flood):
        limiter.admit(ALICE, "SubmitJob", 10_000 + k)
    later = 10_000 + flood + 1000 * config.refill_period_s * (
        math.ceil(config.bucket_size / config.refill_rate) + 1)
    admitted = sum(limiter.admit(ALICE, "SubmitJob", later) for _ in range(config.bucket_size + 5))
    assert admitted == config.bucket_size


def test_slurms_defaults_admit_a_burst_of_30_then_2_a_second() -> None:
    limiter = RateLimiter(parse_rate_limits("rl_enable"))
    assert [limiter.admit(ALICE, "SubmitJob", 100_000) for _ in range(31)] == [True] * 30 + [False]
    assert [limiter.admit(ALICE, "SubmitJob", 101_000) for _ in range(3)] == [True, True, False]


def test_off_by_default_as_in_slurm() -> None:
    limiter = RateLimiter(parse_rate_limits(""))
    assert all(limiter.admit(ALICE, "TestSubmitJob", 0) for _ in range(1000))


def test_one_users_flood_leaves_another_users_bucket_full() -> None:
    limiter = _limiter(bucket_size=3)
    assert sum(limiter.admit(ALICE, "SubmitJob", 7_000) for _ in range(50)) == 3
    assert [limiter.admit(BOB, "SubmitJob", 7_000) for _ in range(3)] == [True] * 3


def test_a_test_only_takes_its_own_cost_and_never_more_than_a_bucket() -> None:
    limiter = _limiter(bucket_size=30, test_only_cost=10)
    assert [limiter.admit(ALICE, "TestSubmitJob", 0) for _ in range(4)] == [True] * 3 + [False]
    assert limiter.tokens("alice") == 0
    small = _limiter(bucket_size=4, test_only_cost=10)
    assert small.admit(ALICE, "TestSubmitJob", 0)  # costs the whole bucket, not more
    assert small.tokens("alice") == 0


@pytest.mark.parametrize("identity", [
    Identity(user="root", kind="munge", uid=0, service=True),
    Identity(user="sluice", kind="jwt", node="n01"),
    Identity(user="bridge", kind="jwt"),
    Identity(user="alice"),  # no credential: no proven user to charge
    Identity(user="alice", kind="jwt", denied="CredentialExpired"),
], ids=["service", "node-jwt", "listed-user", "no-credential", "refused-credential"])
def test_service_node_and_listed_identities_are_never_limited(identity: Identity) -> None:
    limiter = _limiter(bucket_size=1, exempt_users=frozenset({"bridge"}))
    assert all(limiter.admit(identity, "SubmitJob", 0) for _ in range(100))


def test_the_user_field_of_a_record_is_not_the_key_the_credential_is() -> None:
    limiter = _limiter(bucket_size=2)
    alice_as_jwt, alice_as_munge = ALICE, Identity(user="alice", kind="munge", uid=1001)
    assert limiter.admit(alice_as_jwt, "SubmitJob", 0)
    assert limiter.admit(alice_as_munge, "SubmitJob", 0)
    assert not limiter.admit(alice_as_jwt, "SubmitJob", 0)


def test_a_clock_set_back_refills_nothing() -> None:
    limiter = _limiter(bucket_size=2, refill_rate=2)
    assert limiter.admit(ALICE, "SubmitJob", 50_000)
    assert limiter.admit(ALICE, "SubmitJob", 50_000)
    assert not limiter.admit(ALICE, "SubmitJob", 10_000)
    assert not limiter.admit(ALICE, "SubmitJob", 50_500)
    assert limiter.admit(ALICE, "SubmitJob", 51_000)


def test_a_full_table_drops_refilled_buckets_and_leaves_new_users_unlimited_otherwise() -> None:
    limiter = _limiter(bucket_size=1, table_size=2)
    assert limiter.admit(Identity(user="u1", kind="jwt"), "SubmitJob", 0)
    assert limiter.admit(Identity(user="u2", kind="jwt"), "SubmitJob", 0)
    u3 = Identity(user="u3", kind="jwt")
    # both buckets are empty: no room, u3 is not limited (Slurm logs and lets it through)
    assert all(limiter.admit(u3, "SubmitJob", 0) for _ in range(5))
    assert limiter.tokens("u3") is None
    # a period later both buckets are full again: dropped, and u3 gets a bucket of its own
    assert limiter.admit(u3, "SubmitJob", 1_000)
    assert not limiter.admit(u3, "SubmitJob", 1_000)


@pytest.mark.parametrize(("text", "problem"), [
    ("rl_enable,rl_bucket_size=0", "rl_bucket_size"),
    ("rl_enable,rl_refill_rate=-2", "rl_refill_rate"),
    ("rl_enable,rl_refill_period=x", "rl_refill_period"),
    ("rl_enable,rl_bucket=5", "unknown rate-limit parameter"),
])
def test_a_bad_parameter_is_a_clear_error(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        parse_rate_limits(text)


def test_parameters_are_read_as_slurm_writes_them() -> None:
    config = parse_rate_limits("enable_configless, RL_ENABLE ,rl_bucket_size=50,rl_refill_rate=10,"
                               "rl_refill_period=2,rl_table_size=100,rl_log_freq=0,"
                               "rl_test_only_cost=5,rl_exempt_users=sluice-bridge:nodes")
    assert config == RateLimitConfig(enabled=True, bucket_size=50, refill_rate=10,
                                     refill_period_s=2, table_size=100, log_freq=0,
                                     test_only_cost=5,
                                     exempt_users=frozenset({"sluice-bridge", "nodes"}))
