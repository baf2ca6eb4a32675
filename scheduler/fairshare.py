"""Fair share: decayed usage per account and user, and Slurm's Fair Tree factor.

Usage is charged when a run ends (CPU-seconds, times the QOS UsageFactor) to the job's user
and to every account from its own up to ``root``; all usage decays with
``PriorityDecayHalfLife``, applied lazily at each charge from the time of the previous one, so
the result depends only on fact times (replay-exact).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler.config import ClusterConfig

if TYPE_CHECKING:
    from scheduler.model import Job
    from scheduler.state import ShardMeta

__all__ = ["charge_usage", "decayed"]


def decayed(value: float, elapsed_ms: int, half_life_s: int) -> float:
    """``value`` after ``elapsed_ms`` of exponential decay with the given half-life."""
    if elapsed_ms <= 0 or half_life_s <= 0:
        return value
    return float(value * 0.5 ** (elapsed_ms / (half_life_s * 1000)))


def charge_usage(meta: ShardMeta, config: ClusterConfig, job: Job, end_ms: int) -> None:
    """Decay all usage to ``end_ms`` and charge the ended run to its user and accounts."""
    half_life = config.priority.decay_half_life_s
    elapsed = end_ms - meta.usage_ms
    if elapsed > 0:
        factor = decayed(1.0, elapsed, half_life)
        for key in meta.usage:
            meta.usage[key] *= factor
        meta.usage_ms = end_ms
    cpus = sum(cpus for cpus, _, _ in job.alloc)
    qos = config.qos_named(job.qos)
    cost = cpus * max(end_ms - job.start_ms, 0) / 1000 * (qos.usage_factor if qos else 1.0)
    for key in _charged_keys(config, job):
        meta.usage[key] = meta.usage.get(key, 0.0) + cost


def _charged_keys(config: ClusterConfig, job: Job) -> list[str]:
    keys = [f"user:{job.account}:{job.spec.user}"]
    parents = {a.name: a.parent or "root" for a in config.accounts}
    account = job.account or "root"
    seen = set()
    while account not in seen:
        seen.add(account)
        keys.append(f"account:{account}")
        if account == "root":
            break
        account = parents.get(account, "root")
    return keys
