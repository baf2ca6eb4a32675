"""Fair share: decayed usage per account and user, and Slurm's Fair Tree factor.

Usage is charged when a run ends (CPU-seconds, times the QOS UsageFactor) to the job's user
and to every account from its own up to ``root``; all usage decays with
``PriorityDecayHalfLife`` (see :func:`charge_usage` for how), so the result depends only on
fact times (replay-exact).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler.config import ClusterConfig

if TYPE_CHECKING:
    from scheduler.model import Job
    from scheduler.state import ShardMeta, ShardState

__all__ = ["charge_usage", "decayed", "fair_tree"]


def decayed(value: float, elapsed_ms: int, half_life_s: int) -> float:
    """``value`` after ``elapsed_ms`` of exponential decay with the given half-life."""
    if elapsed_ms <= 0 or half_life_s <= 0:
        return value
    return float(value * 0.5 ** (elapsed_ms / (half_life_s * 1000)))


def charge_usage(meta: ShardMeta, config: ClusterConfig, job: Job, end_ms: int) -> None:
    """Charge an ended run's CPU-seconds to its user and its accounts up to ``root``.

    Usage is kept scaled by ``2^((t - usage_ms) / half_life)`` at the time ``t`` it is charged,
    so decay needs no pass over all entries: the true usage at time ``T`` is the stored value
    times ``2^(-(T - usage_ms) / half_life)``, a factor common to every entry (Fair Tree only
    compares ratios). When the scale grows large, every entry is rebased to the current time.
    """
    half_life_ms = max(config.priority.decay_half_life_s, 1) * 1000
    if not meta.usage:
        meta.usage_ms = end_ms
    exponent = (end_ms - meta.usage_ms) / half_life_ms
    if exponent > _REBASE_EXPONENT:
        factor = 0.5**exponent
        for key in sorted(meta.usage):
            meta.usage[key] *= factor
        meta.usage_ms, exponent = end_ms, 0.0
    cpus = sum(cpus for cpus, _, _ in job.alloc)
    qos = config.qos_named(job.qos) if config.qos else None
    cost = cpus * max(end_ms - job.start_ms, 0) / 1000 * (qos.usage_factor if qos else 1.0)
    scaled = cost * 2.0**exponent
    for key in _charged_keys(config, job):
        meta.usage[key] = meta.usage.get(key, 0.0) + scaled


_REBASE_EXPONENT = 256.0


def _charged_keys(config: ClusterConfig, job: Job) -> list[str]:
    keys = [f"user:{job.account}:{job.spec.user}"]
    if not config.accounts:
        return [*keys, "account:root"]
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


def fair_tree(
    state: ShardState, associations: list[tuple[str, str]]
) -> dict[tuple[str, str], float]:
    """Slurm's Fair Tree factor for each (account, user) association, in [0, 1].

    At every level siblings are ranked by Level Fairshare ``LF = S / U`` (shares normalised
    among siblings over usage normalised among siblings; no usage = infinite), highest first,
    ties by name; a depth-first walk in that order ranks the users; the first of ``n`` users gets
    ``n/n = 1``, the next ``(n-1)/n``…, and users with equal LF under one account share a rank.
    """
    config = state.config
    children: dict[str, list[str]] = {"root": []}
    shares: dict[str, int] = {}
    for conf in config.accounts:
        if conf.name == "root":
            continue
        children.setdefault(conf.parent or "root", []).append("account:" + conf.name)
        children.setdefault(conf.name, [])
        shares["account:" + conf.name] = conf.shares
    for account, user in sorted(set(associations)):
        owner = account if account in children else "root"
        key = f"user:{account}:{user}"
        if key not in children[owner]:
            children[owner].append(key)
    usage = state.meta.usage
    ranked_users: list[tuple[str, float, str]] = []  # (user key, LF, parent) in walk order

    def walk(name: str) -> None:
        kids = children.get(name, [])
        total_shares = sum(shares.get(k, 1) for k in kids) or 1
        total_usage = sum(usage.get(k, 0.0) for k in kids)
        levels = []
        for kid in kids:
            s = shares.get(kid, 1) / total_shares
            u = usage.get(kid, 0.0) / total_usage if total_usage > 0 else 0.0
            levels.append((-(s / u) if u > 0 else -float("inf"), kid))
        for lf, kid in sorted(levels):
            if kid.startswith("user:"):
                ranked_users.append((kid, lf, name))
            else:
                walk(kid.removeprefix("account:"))

    walk("root")
    count = len(ranked_users)
    factors: dict[str, float] = {}
    rank, previous = count, None
    for position, (key, lf, parent) in enumerate(ranked_users):
        if previous is not None and previous != (lf, parent):
            rank = count - position
        previous = (lf, parent)
        factors[key] = rank / count if count else 0.0
    return {(a, u): factors.get(f"user:{a}:{u}", 0.0) for a, u in associations}
