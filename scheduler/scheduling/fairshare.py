"""Fair share: decayed usage per account and user, and Slurm's Fair Tree factor.

A run's usage is its CPUs times the QOS UsageFactor for every second it runs, charged to the
job's user and to every account from its own up to ``root``. As with Slurm's decay thread,
usage accrues *while* jobs run: a ``CycleCompleted`` at least ``PriorityCalcPeriod`` after the
last accrual charges every running job up to the fact's time (:func:`accrue_usage`, when fair
share is weighted); a run's ``JobEnded`` charges the rest (:func:`charge_usage`). The
bookkeeping is one watermark, ``ShardMeta.accrued_ms``: a running job has been charged from its
start up to ``max(start_ms, accrued_ms)``. So nothing is charged twice, and a requeued run
stays charged (its next run starts later).

Usage decays with ``PriorityDecayHalfLife`` (0 = no decay, as in Slurm) continuously: a second
used at time ``s`` weighs ``2^(-(T - s) / half_life)`` at time ``T``, and an interval is
charged with the exact integral (:func:`_integral`). A run's total is then the same however
it was cut into periods, and usage depends only on fact times (replay-exact).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from scheduler.config.cluster import ClusterConfig

if TYPE_CHECKING:
    from scheduler.shard.model import Job
    from scheduler.shard.state import ShardMeta, ShardState

__all__ = ["accrual_due", "accrue_usage", "charge_usage", "decayed", "rebase_usage"]

_LN2 = math.log(2.0)
_REBASE_EXPONENT = 256.0


def decayed(value: float, elapsed_ms: int, half_life_s: int) -> float:
    """``value`` after ``elapsed_ms`` of exponential decay with the given half-life."""
    if elapsed_ms <= 0 or half_life_s <= 0:
        return value
    return float(value * 0.5 ** (elapsed_ms / (half_life_s * 1000)))


def _scale(meta: ShardMeta, half_life_ms: int, time_ms: int) -> float:
    """The factor by which usage charged at ``time_ms`` is stored: ``2^((t - usage_ms) / hl)``.

    Usage is kept scaled this way so decay needs no pass over all entries: the true usage at
    time ``T`` is the stored value times ``2^(-(T - usage_ms) / half_life)``, a factor common
    to every entry (Fair Tree only compares ratios). When the scale grows large, every entry
    is rebased to ``time_ms``. Without decay (``half_life_ms`` 0) the scale is 1.
    """
    if half_life_ms <= 0:
        return 1.0
    if not meta.usage:
        meta.usage_ms = time_ms
    exponent = (time_ms - meta.usage_ms) / half_life_ms
    if exponent > _REBASE_EXPONENT:
        factor = 0.5**exponent
        for key in sorted(meta.usage):
            meta.usage[key] *= factor
        meta.usage_ms, exponent = time_ms, 0.0
    return float(2.0**exponent)


def _integral(half_life_ms: int, from_ms: int, to_ms: int) -> float:
    """Seconds of use over ``[from_ms, to_ms]`` as they weigh at ``to_ms`` (signed).

    ``∫ 2^(-(to - s) / hl) ds = hl / ln 2 · (1 - 2^(-(to - from) / hl))``, computed with
    ``expm1`` so a short interval loses no precision; without decay, the plain length.
    """
    if half_life_ms <= 0:
        return (to_ms - from_ms) / 1000
    rate = _LN2 / half_life_ms
    return -math.expm1(-(to_ms - from_ms) * rate) / rate / 1000


def _usage_factor(config: ClusterConfig, qos_name: str) -> float:
    qos = config.qos_named(qos_name) if config.qos else None
    return qos.usage_factor if qos else 1.0


def _cpus(job: Job) -> int:
    alloc = job.alloc
    if alloc and alloc.count(alloc[0]) == len(alloc):  # one share on every node (the rule)
        return alloc[0][0] * len(alloc)
    return sum(cpus for cpus, _, _ in alloc)


def _add(meta: ShardMeta, keys: list[str], amount: float) -> None:
    usage = meta.usage
    for key in keys:
        usage[key] = usage.get(key, 0.0) + amount


def charge_usage(meta: ShardMeta, config: ClusterConfig, job: Job, end_ms: int) -> None:
    """Charge an ended run what :func:`accrue_usage` has not charged yet.

    The run was charged from its start up to ``max(start_ms, accrued_ms)``; this charges from
    there to its end (signed, so the run's total is exactly ``[start, end]`` even if a fact's
    time were earlier than the last accrual).
    """
    half_life_ms = config.priority.decay_half_life_s * 1000
    start = job.start_ms
    since, end = max(start, meta.accrued_ms), max(end_ms, start)
    if since == end:
        return
    seconds = _integral(half_life_ms, since, end)
    amount = _cpus(job) * _usage_factor(config, job.qos) * seconds * _scale(meta, half_life_ms, end)
    _add(meta, _charged_keys(config, job.account, job.spec.user), amount)


def _accrues(config: ClusterConfig) -> bool:
    """Whether running jobs accrue usage: only when something reads usage while they run.

    Only the fair-share factor does; with ``PriorityWeightFairshare`` 0 the watermark stays
    put and each run is charged whole at its end, the same total (the integral does not depend
    on how a run is cut), at no cost to a shard or simulation that does not use fair share.
    """
    return config.priority.weight_fairshare > 0


def accrual_due(state: ShardState, time_ms: int) -> bool:
    """True when a ``CycleCompleted`` at ``time_ms`` would charge running jobs.

    The shell closes a cycle for it even when its batch had no other fact, so usage accrues on
    a quiet shard too.
    """
    config = state.config
    return (
        bool(state.running)
        and _accrues(config)
        and time_ms - state.meta.accrued_ms >= config.priority.calc_period_s * 1000
    )


def accrue_usage(state: ShardState, time_ms: int) -> None:
    """Slurm's decay-thread step, at a ``CycleCompleted``: charge running jobs up to ``time_ms``.

    Nothing happens (one comparison) until ``PriorityCalcPeriod`` has passed since the last
    accrual, nor when fair share is not weighted (:func:`_accrues`). Then each running job is
    charged from ``max(start_ms, accrued_ms)`` to ``time_ms`` and the watermark moves to
    ``time_ms``. Jobs are summed per (account, user, QOS) in job SLUID order, so the
    floating-point result does not depend on dict order (a restored state files its running
    jobs in another order than the live one).
    """
    meta = state.meta
    config = state.config
    if time_ms - meta.accrued_ms < config.priority.calc_period_s * 1000 or not _accrues(config):
        return
    since, meta.accrued_ms = meta.accrued_ms, time_ms
    if not state.running:
        return
    half_life_ms = config.priority.decay_half_life_s * 1000
    jobs = state.jobs
    whole = _integral(half_life_ms, since, time_ms)  # for every job that ran the whole period
    groups: dict[tuple[str, str, str], float] = {}
    for sluid in sorted(state.running):
        job = jobs[sluid]
        start = job.start_ms
        if start >= time_ms:
            continue
        seconds = whole if start <= since else _integral(half_life_ms, start, time_ms)
        group = (job.account, job.spec.user, job.qos)
        groups[group] = groups.get(group, 0.0) + _cpus(job) * seconds
    scale = _scale(meta, half_life_ms, time_ms)
    for group in sorted(groups):
        account, user, qos = group
        amount = groups[group] * _usage_factor(config, qos) * scale
        _add(meta, _charged_keys(config, account, user), amount)


def rebase_usage(meta: ShardMeta, half_life_s: int, time_ms: int) -> None:
    """Turn stored usage into true usage at ``time_ms`` under ``half_life_s`` (its scale 1).

    Called before the half-life changes (``ConfigApplied``), so usage stored scaled under the
    old half-life is not read under the new one.
    """
    if half_life_s > 0 and meta.usage:
        factor = 0.5 ** ((time_ms - meta.usage_ms) / (half_life_s * 1000))
        for key in sorted(meta.usage):
            meta.usage[key] *= factor
    meta.usage_ms = time_ms


def _charged_keys(config: ClusterConfig, account_name: str, user: str) -> list[str]:
    if not config.accounts:  # no account tree: one association per user (fair_tree.association)
        return [f"user::{user}", "account:root"]
    keys = [f"user:{account_name}:{user}"]
    parents = {a.name: a.parent or "root" for a in config.accounts}
    account = account_name or "root"
    seen = set()
    while account not in seen:
        seen.add(account)
        keys.append(f"account:{account}")
        if account == "root":
            break
        account = parents.get(account, "root")
    return keys
