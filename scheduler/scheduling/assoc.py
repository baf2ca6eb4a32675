"""Association (account) limits, with Slurm's semantics (``src/slurmctld/acct_policy.c``).

A job belongs to the association of its user in its account. What limits it:

- the ``Grp`` limits of its account and of every ancestor up to ``root`` (``GrpTRES``,
  ``GrpJobs``, ``GrpSubmitJobs``), each counted over that account's whole subtree;
- the ``Max`` limits of its account, a parent's standing in for any the account leaves unset
  (``MaxJobs`` and ``MaxSubmitJobs`` per user of the account, ``MaxWall`` and ``MaxTRESPerJob``
  per job);
- except where the job's QOS sets the same limit: the QOS's comes first and the association's
  is not looked at (Slurm's hierarchy: "the point where the limit is first defined is used").

Everything here is a pure function of the configuration, built once per configuration object
(:func:`assoc_table`) so that a pass with no account limits pays one lookup. Jobs of account ""
(a user no account lists) or of an account the configuration no longer has belong to ``root``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from scheduler.config.model import NO_TRES, AccountConfig, ClusterConfig, QosConfig, TresLimits
from scheduler.shard.model import Job
from scheduler.shard.reasons import PendingReason as P
from scheduler.shard.reasons import Rejection, RejectionReason

__all__ = [
    "AssocLimits",
    "AssocTable",
    "AssocUsage",
    "GrpLimit",
    "assoc_table",
    "grp_reason",
    "jobs_reason",
    "static_reason",
    "submit_problem",
]

ROOT = "root"


@dataclass(frozen=True, slots=True)
class GrpLimit:
    """One account's own group limits (-1 = none), counted over its subtree."""

    account: str
    tres: TresLimits
    jobs: int
    submit_jobs: int


@dataclass(frozen=True, slots=True)
class AssocLimits:
    """Every association limit on one account's jobs under one QOS."""

    grp: tuple[GrpLimit, ...]  # own account first, up to root; only accounts with a Grp limit
    max_jobs: int = -1  # per user
    max_submit_jobs: int = -1  # per user
    max_wall_s: int = 0
    max_tres: TresLimits = NO_TRES  # per job
    static: bool = field(init=False)  # a per-job limit: MaxWall or MaxTRESPerJob
    running: bool = field(init=False)  # a limit on what runs at once: MaxJobs, GrpTRES, GrpJobs
    submit: bool = field(init=False)  # a limit on what is queued: MaxSubmitJobs, GrpSubmitJobs

    def __post_init__(self) -> None:
        static = self.max_wall_s > 0 or self.max_tres.limited
        running = self.max_jobs >= 0 or any(g.jobs >= 0 or g.tres.limited for g in self.grp)
        submit = self.max_submit_jobs >= 0 or any(g.submit_jobs >= 0 for g in self.grp)
        object.__setattr__(self, "static", static)
        object.__setattr__(self, "running", running)
        object.__setattr__(self, "submit", submit)


class _Everything:
    """A container holding every account (when ``root`` itself has limits)."""

    def __contains__(self, item: object) -> bool:
        return True


class AssocTable:
    """The account tree's limits, resolved per account (and per QOS, on first use)."""

    def __init__(self, config: ClusterConfig) -> None:
        accounts = {a.name: a for a in config.accounts}
        self.qos: dict[str, QosConfig] = {q.name: q for q in config.qos}
        self._chains: dict[str, tuple[AccountConfig, ...]] = {}
        for name in (*sorted(accounts), "", ROOT):
            self._chains[name] = _chain(name, accounts)
        self._paths = {name: frozenset(a.name for a in c) for name, c in self._chains.items()}
        self._limits: dict[tuple[str, str], AssocLimits] = {}
        self.counted: dict[str, tuple[GrpLimit, ...]] = {
            name: tuple(_grp(a) for a in chain if _has_grp(a))
            for name, chain in self._chains.items()
        }  # every Grp limit a job of the account counts against, whatever its QOS
        limited = {
            name
            for name in self._chains
            if (found := self.limits(name, "")).static or found.running
        }
        self.limited: frozenset[str] | _Everything = (
            _Everything() if ROOT in limited else frozenset(limited)
        )  # accounts whose pending jobs an association limit may hold back (QOS aside)
        self.max_jobs = any(a.max_jobs >= 0 for a in config.accounts)

    def path(self, account: str) -> frozenset[str]:
        """The names of the account and its ancestors (root's path for an unknown one)."""
        found = self._paths.get(account)
        return found if found is not None else self._paths[ROOT]

    def chain(self, account: str) -> tuple[GrpLimit, ...]:
        """The Grp limits a job of ``account`` counts against (own account first)."""
        found = self.counted.get(account)
        return found if found is not None else self.counted[ROOT]

    def limits(self, account: str, qos: str) -> AssocLimits:
        """The association limits on a job of ``account`` under ``qos`` (memoised)."""
        key = (account, qos)
        found = self._limits.get(key)
        if found is None:
            chain = self._chains.get(account)
            if chain is None:  # an account the configuration no longer has: root's
                chain = self._chains[ROOT]
            found = self._limits[key] = _resolve(chain, self.qos.get(qos))
        return found


def submit_problem(
    table: AssocTable,
    job: tuple[str, str, str],
    tasks: int,
    by_user: Mapping[tuple[str, str], int],
    by_account: Mapping[str, int],
) -> tuple[Rejection, str] | None:
    """Whether ``tasks`` more jobs of (account, user, QOS) ``job`` may be queued: the user's
    ``MaxSubmitJobs`` in the account, then ``GrpSubmitJobs`` from the account up to root, over
    the pending and running (and completing) jobs counted in ``by_user`` and ``by_account``."""
    account, user, qos = job
    limits = table.limits(account, qos)
    if not limits.submit:
        return None
    if limits.max_submit_jobs >= 0:
        have = by_user.get((account, user), 0)
        if have + tasks > limits.max_submit_jobs:
            detail = (
                f"user {user} has {have} jobs in account {account or ROOT}, "
                f"MaxSubmitJobs {limits.max_submit_jobs}"
            )
            return RejectionReason.ASSOC_MAX_SUBMIT, detail
    for limit in limits.grp:
        if limit.submit_jobs < 0:
            continue
        have = sum(n for name, n in by_account.items() if limit.account in table.path(name))
        if have + tasks > limit.submit_jobs:
            detail = f"account {limit.account} has {have} jobs, GrpSubmitJobs {limit.submit_jobs}"
            return RejectionReason.ASSOC_GRP_SUBMIT, detail
    return None


def _chain(name: str, accounts: dict[str, AccountConfig]) -> tuple[AccountConfig, ...]:
    """The account and its ancestors, root last (a configured ``root`` entry included)."""
    path: list[AccountConfig] = []
    current = name if name in accounts else ROOT
    while current != ROOT:
        account = accounts[current]
        path.append(account)
        current = account.parent or ROOT
    if ROOT in accounts:
        path.append(accounts[ROOT])
    return tuple(path)


def _has_grp(account: AccountConfig) -> bool:
    return account.grp_tres.limited or account.grp_jobs >= 0 or account.grp_submit_jobs >= 0


def _grp(account: AccountConfig) -> GrpLimit:
    return GrpLimit(account.name, account.grp_tres, account.grp_jobs, account.grp_submit_jobs)


def _nearest(values: list[int], unset: int) -> int:
    """The first value that is set (the account's own, else the nearest ancestor's)."""
    return next((v for v in values if v != unset), unset)


def _resolve(chain: tuple[AccountConfig, ...], qos: QosConfig | None) -> AssocLimits:
    """Inherit the Max limits down the chain; drop what the QOS decides itself."""
    tres = TresLimits(
        cpu=_nearest([a.max_tres_per_job.cpu for a in chain], -1),
        mem_mb=_nearest([a.max_tres_per_job.mem_mb for a in chain], -1),
        node=_nearest([a.max_tres_per_job.node for a in chain], -1),
        gpu=_nearest([a.max_tres_per_job.gpu for a in chain], -1),
    )
    q = qos or QosConfig("")
    grp = []
    for account in chain:
        if not _has_grp(account):
            continue
        own = account.grp_tres
        masked = TresLimits(
            cpu=-1 if q.grp_cpus else own.cpu,
            mem_mb=-1 if q.grp_mem_mb else own.mem_mb,
            node=-1 if q.grp_nodes else own.node,
            gpu=-1 if q.grp_gpus else own.gpu,
        )
        grp.append(GrpLimit(account.name, masked, account.grp_jobs, account.grp_submit_jobs))
    return AssocLimits(
        grp=tuple(grp),
        max_jobs=-1 if q.max_jobs_per_user else _nearest([a.max_jobs for a in chain], -1),
        max_submit_jobs=(
            -1 if q.max_submit_jobs_per_user else _nearest([a.max_submit_jobs for a in chain], -1)
        ),
        max_wall_s=0 if q.max_wall_s else _nearest([a.max_wall_s for a in chain], 0),
        max_tres=tres,
    )


_TABLES: dict[int, tuple[ClusterConfig, AssocTable | None]] = {}


def assoc_table(config: ClusterConfig) -> AssocTable | None:
    """The configuration's association limits; None when no account sets any (memoised)."""
    hit = _TABLES.get(id(config))
    if hit is not None and hit[0] is config:
        return hit[1]
    table = AssocTable(config) if any(a.has_limits for a in config.accounts) else None
    if len(_TABLES) > 64:
        _TABLES.clear()
    _TABLES[id(config)] = (config, table)
    return table


def _job_tres(job: Job) -> tuple[int, int, int, int]:
    """What a pending job asks for in all: CPUs, memory (MB), nodes, GPUs (at its minimum)."""
    demand = job.demand
    nodes = demand.nodes_min
    return demand.cpus * nodes, demand.mem_mb * nodes, nodes, demand.gpus * nodes


def static_reason(job: Job, limits: AssocLimits) -> str:
    """The per-job limit ``job`` breaks (MaxWall, then MaxTRESPerJob), or ""."""
    wall = limits.max_wall_s
    if wall and (job.time_limit_s == 0 or job.time_limit_s > wall):
        return P.ASSOC_MAX_WALL
    cap = limits.max_tres
    if cap.limited:
        cpu, mem, node, gpu = _job_tres(job)
        if 0 <= cap.cpu < cpu:
            return P.ASSOC_MAX_CPU_PER_JOB
        if 0 <= cap.mem_mb < mem:
            return P.ASSOC_MAX_MEM_PER_JOB
        if 0 <= cap.node < node:
            return P.ASSOC_MAX_NODE_PER_JOB
        if 0 <= cap.gpu < gpu:
            return P.ASSOC_MAX_GRES_PER_JOB
    return ""


class AssocUsage:
    """What the jobs running now (and those started earlier in the pass) use, per Grp account
    and per (account, user)."""

    __slots__ = ("grp", "nodes", "table", "user_jobs")

    def __init__(self, table: AssocTable) -> None:
        self.table = table
        self.grp: dict[str, list[int]] = {}  # account → [cpus, mem, gpus, jobs, new nodes]
        self.nodes: dict[str, set[str]] = {}  # account → distinct nodes its subtree runs on
        self.user_jobs: dict[tuple[str, str], int] = {}

    def count(
        self,
        job: Job,
        alloc: tuple[tuple[int, int, int], ...] | list[tuple[int, int, int]],
        nodes: tuple[str, ...] | None,
    ) -> None:
        """Count a run on ``nodes`` (None when not known: they all count as new, which may
        overcount nodes it shares, never undercount)."""
        if self.table.max_jobs:
            key = (job.account, job.spec.user)
            self.user_jobs[key] = self.user_jobs.get(key, 0) + 1
        chain = self.table.chain(job.account)
        if not chain:
            return
        cpus = sum(a[0] for a in alloc)
        mem = sum(a[1] for a in alloc)
        gpus = sum(a[2] for a in alloc)
        for limit in chain:
            totals = self.grp.get(limit.account)
            if totals is None:
                totals = self.grp[limit.account] = [0, 0, 0, 0, 0]
            totals[0] += cpus
            totals[1] += mem
            totals[2] += gpus
            totals[3] += 1
            if limit.tres.node >= 0:
                if nodes is None:
                    totals[4] += len(alloc)
                else:
                    self.nodes.setdefault(limit.account, set()).update(nodes)


def jobs_reason(job: Job, limits: AssocLimits, usage: AssocUsage) -> str:
    """``AssocMaxJobsLimit`` (the user's running jobs in the account), then ``GrpJobs`` from the
    account up to root; "" when none is reached."""
    user_jobs = usage.user_jobs.get((job.account, job.spec.user), 0)
    if limits.max_jobs >= 0 and user_jobs >= limits.max_jobs:
        return P.ASSOC_MAX_JOBS
    for limit in limits.grp:
        if limit.jobs >= 0:
            totals = usage.grp.get(limit.account)
            if (totals[3] if totals else 0) >= limit.jobs:
                return P.ASSOC_GRP_JOBS
    return ""


def grp_reason(job: Job, limits: AssocLimits, usage: AssocUsage) -> str:
    """The first ``GrpTRES`` (CPU, memory, nodes, GPUs) the job would overrun, from its account
    up to root; "" when it fits under all of them."""
    cpu, mem, node, gpu = _job_tres(job)
    for limit in limits.grp:
        cap = limit.tres
        if not cap.limited:
            continue
        totals = usage.grp.get(limit.account) or [0, 0, 0, 0, 0]
        if 0 <= cap.cpu < totals[0] + cpu and cpu:
            return P.ASSOC_GRP_CPU
        if 0 <= cap.mem_mb < totals[1] + mem and mem:
            return P.ASSOC_GRP_MEM
        if cap.node >= 0:
            used = len(usage.nodes.get(limit.account, ())) + totals[4]
            if used + node > cap.node:
                return P.ASSOC_GRP_NODE
        if 0 <= cap.gpu < totals[2] + gpu and gpu:
            return P.ASSOC_GRP_GRES
    return ""
