"""Per-user request rate limits at the intake: Slurm's ``SlurmctldParameters=rl_enable``.

A token bucket per authenticated user, as slurmctld's ``rate_limit.c``: a user's first request
finds a full bucket of ``rl_bucket_size`` tokens; every whole ``rl_refill_period`` seconds adds
``rl_refill_rate`` tokens, up to the bucket's size; a request takes its cost in tokens (1, or
``rl_test_only_cost`` for an ``sbatch --test-only``), and a request that finds fewer is refused
``RateLimited``. Off unless ``rl_enable`` is given, with Slurm's defaults (30 tokens, 2 per
second, 8,192 users).

:class:`RateLimiter` reads no clock: the intake hands it each request's record time (the stamp
it seals into the forward, the time the shard decides the request at), so the same records in
the same order give the same verdicts. Its verdict travels in the sealed identity
(``Identity.denied``), so the shard records a refused request as a ``RequestDenied`` like any
credential refusal, and a replay of the inbox decides it the same way.

Who is never limited, by credential (``Identity``), never by a record field:

- root and the Sluice service user (``Identity.service``: munge uid 0 or the worker's uid),
  as slurmctld exempts root and ``SlurmUser``: node daemons started by ``sluice up`` or as
  root, the operator, ``sluice up`` itself;
- node JWTs (``Identity.node``: a token naming its node, what a node daemon holds);
- the users ``rl_exempt_users`` names (colon-separated; a Sluice addition: the Kubernetes
  bridge's user, ``NodeUsers`` that run daemons under munge).

Requests without a credential (only possible while ``AuthRequired`` is off) and requests
whose credential was refused are not counted: there is no proven user to charge, and the
latter are refused anyway. Heartbeats never pass the intake (their own topic).

Buckets live in the intake's memory: a worker restart or a move of a requests partition to
another worker starts them full again, and with several workers each intake holds its own
buckets (a user's requests spread over the requests partitions by SLUID), so a user gets up to
one budget per worker owning a partition. Slurm's controller likewise keeps them in memory.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Final, Generic, TypeVar

from scheduler.access.authz import DenialReason
from scheduler.access.identity import Identity

__all__ = ["RATE_LIMITED", "RATE_LIMITED_DETAIL", "RateLimitConfig", "RateLimiter",
           "parse_rate_limits"]

log = logging.getLogger(__name__)

RATE_LIMITED: Final = DenialReason.RATE_LIMITED
"""The named reason of a refused request (``RequestDenied.reason``)."""
RATE_LIMITED_DETAIL: Final = "Rate limit exceeded, please retry momentarily"
"""Slurm's words for it (``SLURMCTLD_COMMUNICATIONS_BACKOFF``)."""

_TEST_ONLY: Final = "TestSubmitJob"


@dataclass(frozen=True, slots=True)
class RateLimitConfig:
    """The ``rl_*`` values of ``SlurmctldParameters`` (Slurm's defaults)."""

    enabled: bool = False
    bucket_size: int = 30
    refill_rate: int = 2
    refill_period_s: int = 1
    table_size: int = 8192
    log_freq: int = 0
    """Refusals logged per user and refill period at most (0: every one)."""
    test_only_cost: int = 10
    """Tokens an ``sbatch --test-only`` takes (a scheduling pass on the shard; Sluice's)."""
    exempt_users: frozenset[str] = field(default_factory=frozenset)


_INTS = {"rl_bucket_size": "bucket_size", "rl_refill_rate": "refill_rate",
         "rl_refill_period": "refill_period_s", "rl_table_size": "table_size",
         "rl_log_freq": "log_freq", "rl_test_only_cost": "test_only_cost"}


def parse_rate_limits(text: str) -> RateLimitConfig:
    """The rate limits of a ``SlurmctldParameters`` value (comma-separated; parameters that
    are not ``rl_*`` are Slurm's others and ignored here). Raises ValueError naming the bad
    parameter: a value that is not a positive integer (``rl_log_freq`` may be 0; Slurm ends
    slurmctld for a value ≤ 0 since 23.11.5), an unknown ``rl_`` parameter."""
    values: dict[str, object] = {}
    for item in (part.strip() for part in text.split(",")):
        key, sep, value = item.partition("=")
        key = key.strip().lower()
        if not key.startswith("rl_"):
            continue
        if key == "rl_enable" and not sep:
            values["enabled"] = True
        elif key == "rl_exempt_users" and sep:
            values["exempt_users"] = frozenset(u.strip() for u in value.split(":") if u.strip())
        elif key in _INTS and sep:
            number = value.strip()
            least = 0 if key == "rl_log_freq" else 1
            if not number.isdigit() or int(number) < least:
                raise ValueError(f"SlurmctldParameters: {key}={value!r} must be an integer "
                                 f"of at least {least}")
            values[_INTS[key]] = int(number)
        else:
            raise ValueError(f"SlurmctldParameters: unknown rate-limit parameter {item!r}; "
                             f"known: rl_enable, {', '.join(sorted(_INTS))}, rl_exempt_users")
    return RateLimitConfig(**values)  # type: ignore[arg-type]  # keys are the fields above


@dataclass(slots=True)
class _Bucket:
    period: int
    """The refill period (record time // rl_refill_period) of the last update."""
    tokens: int
    logged: int = 0
    """Refusals logged in ``period``."""


K = TypeVar("K", bound=Hashable)


class Buckets(Generic[K]):
    """Slurm's ``rl_*`` token buckets by key, over whole refill periods: the intake's per-user
    limiter (:class:`RateLimiter`, record time) and the views' relay budget per peer
    (``projections.relay_gate.PeerBudgets``, a monotonic clock) share them."""

    def __init__(self, config: RateLimitConfig) -> None:
        self.config = config
        self._buckets: dict[K, _Bucket] = {}
        self._full_at = -1  # a period in which a sweep of a full table found nothing to drop

    def take(self, key: K, period: int, cost: int = 1) -> tuple[bool, _Bucket | None]:
        """Take ``cost`` tokens of ``key``'s bucket refilled up to ``period``: (taken, its
        bucket); the bucket is ``None`` when the table is full and none could be dropped."""
        config = self.config
        bucket = self._buckets.get(key)
        if bucket is None:
            if len(self._buckets) >= config.table_size and not self._sweep(period):
                return False, None
            bucket = self._buckets[key] = _Bucket(period, config.bucket_size)
        elif period > bucket.period:  # a clock set back refills nothing and takes nothing back
            refill = (period - bucket.period) * config.refill_rate
            bucket.tokens = min(config.bucket_size, bucket.tokens + refill)
            bucket.period, bucket.logged = period, 0
        if bucket.tokens >= cost:
            bucket.tokens -= cost
            return True, bucket
        return False, bucket

    def get(self, key: K) -> _Bucket | None:
        return self._buckets.get(key)

    def _sweep(self, period: int) -> bool:
        """Drop the buckets that are full again by ``period`` (a new bucket is full: the same
        verdicts); True when room was made. A sweep that finds none is not repeated within the
        same refill period (nothing refills within one)."""
        if period == self._full_at:
            return False
        config = self.config
        full = [key for key, b in self._buckets.items()
                if b.tokens + (period - b.period) * config.refill_rate >= config.bucket_size]
        for key in full:
            del self._buckets[key]
        if not full:
            self._full_at = period
        return bool(full)


class RateLimiter:
    """The intake's buckets (see the module docstring); one per intake thread."""

    def __init__(self, config: RateLimitConfig) -> None:
        self.config = config
        self._table: Buckets[str] = Buckets(config)

    def exempt(self, identity: Identity) -> bool:
        """True for identities never limited (and for those with no proven user)."""
        return (not identity.authenticated or identity.service or bool(identity.node)
                or identity.user in self.config.exempt_users)

    def cost(self, request: str) -> int:
        """Tokens the request ``request`` (its record name) takes."""
        if request == _TEST_ONLY:  # never more than a full bucket: a test must be possible
            return min(self.config.test_only_cost, self.config.bucket_size)
        return 1

    def admit(self, identity: Identity, request: str, now_ms: int) -> bool:
        """Take the request's tokens from its user's bucket at record time ``now_ms``: True
        when it may go on, False when it is refused ``RateLimited``."""
        if not self.config.enabled or self.exempt(identity):
            return True
        config = self.config
        period = max(now_ms, 0) // 1000 // config.refill_period_s
        cost = self.cost(request)
        taken, bucket = self._table.take(identity.user, period, cost)
        if bucket is None:
            log.error("rate limit: the table of %d users is full; %s is not limited",
                      config.table_size, identity.user)
            return True
        if taken:
            return True
        if not config.log_freq or bucket.logged < config.log_freq:
            bucket.logged += 1
            log.warning("rate limit exceeded by %s with %s (%d tokens left, %d needed): "
                        "refused RateLimited", identity.user, request, bucket.tokens, cost)
        return False

    def tokens(self, user: str) -> int | None:
        """The tokens ``user`` had left after the last update (None: no bucket; tests)."""
        bucket = self._table.get(user)
        return None if bucket is None else bucket.tokens
