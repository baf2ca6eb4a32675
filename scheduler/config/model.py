"""The cluster configuration's values: frozen records built by :mod:`scheduler.config.cluster`."""

from __future__ import annotations

from dataclasses import dataclass, field

from scheduler.config.auth import AuthConfig

__all__ = [
    "DAY_S",
    "DEFAULT_CONFIG",
    "NO_TRES",
    "AccountConfig",
    "ClusterConfig",
    "NodeConfig",
    "NodeHealthConfig",
    "PartitionConfig",
    "PriorityConfig",
    "QosConfig",
    "RequeueConfig",
    "SchedulerConfig",
    "TresLimits",
]

DAY_S = 86_400


@dataclass(frozen=True, slots=True)
class NodeConfig:
    """One configured node (``NodeName``); listed nodes are the only ones that may register."""

    name: str
    cpus: int = 1
    mem_mb: int = 0
    gpus: int = 0
    gpu_type: str = ""
    features: tuple[str, ...] = ()
    weight: int = 1


@dataclass(frozen=True, slots=True)
class PartitionConfig:
    """One partition (``PartitionName``); ``nodes`` None means every node."""

    name: str
    nodes: tuple[str, ...] | None = None
    default: bool = False
    max_time_s: int = 0  # 0 = UNLIMITED
    default_time_s: int = 0  # 0 = MaxTime
    max_nodes: int = 0  # 0 = UNLIMITED
    priority_tier: int = 1
    priority_job_factor: int = 1
    state: str = "UP"  # UP, DOWN, DRAIN, INACTIVE
    allow_qos: tuple[str, ...] = ()  # empty = all
    topology: str = ""  # a topology name of the applied topology file; "" = its default
    hot_swap: str = ""  # Sluice: "" (cluster default), "yes", "no"


@dataclass(frozen=True, slots=True)
class QosConfig:
    """One QOS: priority, per-job and per-user limits, group TRES limits (0 = no limit)."""

    name: str
    priority: int = 0
    max_wall_s: int = 0
    max_jobs_per_user: int = 0
    max_submit_jobs_per_user: int = 0
    grp_cpus: int = 0
    grp_mem_mb: int = 0
    grp_gpus: int = 0
    grp_nodes: int = 0
    usage_factor: float = 1.0


@dataclass(frozen=True, slots=True)
class TresLimits:
    """A limit per trackable resource, Slurm's TRES order; -1 = no limit (0 is a limit)."""

    cpu: int = -1
    mem_mb: int = -1
    node: int = -1
    gpu: int = -1  # gres/gpu, any type

    @property
    def limited(self) -> bool:
        """True when any resource has a limit."""
        return self.cpu >= 0 or self.mem_mb >= 0 or self.node >= 0 or self.gpu >= 0


NO_TRES = TresLimits()


@dataclass(frozen=True, slots=True)
class AccountConfig:
    """One account in the fair-share tree; ``parent`` "" means under ``root``.

    Association limits (Slurm's names; -1 = none, 0 is a limit of zero; docs/configuration.md):
    ``grp_*`` cap the whole subtree; ``max_*`` apply per user (``max_jobs``,
    ``max_submit_jobs``) or per job, and an account that leaves one unset inherits its parent's.
    """

    name: str
    parent: str = ""
    shares: int = 1
    users: tuple[str, ...] = ()
    grp_tres: TresLimits = NO_TRES
    grp_jobs: int = -1
    grp_submit_jobs: int = -1
    max_jobs: int = -1
    max_submit_jobs: int = -1
    max_wall_s: int = 0  # 0 = none (as a QOS's MaxWall)
    max_tres_per_job: TresLimits = NO_TRES
    qos: tuple[str, ...] = ()  # the QOS its users may name; () = its parent's (root's: any)

    @property
    def has_limits(self) -> bool:
        """True when the account sets any association limit of its own."""
        return (
            self.grp_tres.limited
            or self.max_tres_per_job.limited
            or max(self.grp_jobs, self.grp_submit_jobs, self.max_jobs, self.max_submit_jobs) >= 0
            or self.max_wall_s > 0
        )


@dataclass(frozen=True, slots=True)
class PriorityConfig:
    """Multifactor priority weights and periods (Slurm's ``PriorityWeight*``)."""

    weight_age: int = 0
    weight_fairshare: int = 0
    weight_job_size: int = 0
    weight_partition: int = 0
    weight_qos: int = 0
    weight_assoc: int = 0
    max_age_s: int = 7 * DAY_S
    decay_half_life_s: int = 7 * DAY_S  # 0 = no decay
    favor_small: bool = False
    calc_period_s: int = 300  # PriorityCalcPeriod: fair-share usage accrues this often


@dataclass(frozen=True, slots=True)
class SchedulerConfig:
    """Scheduling policy and backfill knobs (``SchedulerType``, ``SchedulerParameters``)."""

    policy: str = "conservative"  # fcfs (sched/builtin), easy or conservative (sched/backfill)
    bf_window_s: int = DAY_S
    bf_resolution_s: int = 60
    bf_max_job_test: int = 500
    bf_max_job_start: int = 0  # 0 = no limit
    min_job_age_s: int = 300
    dedupe_window_s: int = 3600
    dedupe_max_jobs: int = 65_536
    max_array_size: int = 1001
    enforce_part_limits: bool = False
    operators: tuple[str, ...] = ()
    fragmentation_aware: bool = False  # Sluice: TopologyFragmentationAware (docs/topology.md)


@dataclass(frozen=True, slots=True)
class RequeueConfig:
    """Node failure and requeue (docs/configuration.md, "Requeue and expedited requeue").

    Slurm's ``SlurmctldParameters=enable_expedited_requeue``, ``SchedulerParameters``
    ``requeue_delay`` (default ``cred_expire``, 120 s) and ``nohold_on_prolog_fail``,
    ``JobRequeue`` (default 1), ``MaxBatchRequeue`` (default 5), ``RequeueExit`` and
    ``RequeueExitHold`` (exit codes 0-255 that requeue a batch job, or requeue it held in
    ``SPECIAL_EXIT``; none by default, never the same code in both); Sluice's ``HotSwap`` and
    ``HotSwapWait`` (gang-aware hot swap of an expediting job's lost nodes).
    """

    expedited_requeue: bool = False
    requeue_delay_s: int = 120
    nohold_on_prolog_fail: bool = False
    job_requeue: bool = True
    max_batch_requeue: int = 5
    requeue_exit: frozenset[int] = frozenset()
    requeue_exit_hold: frozenset[int] = frozenset()
    hot_swap: bool = False
    hot_swap_wait_s: int = 60


@dataclass(frozen=True, slots=True)
class NodeHealthConfig:
    """Node failure and return (docs/configuration.md, "Node health").

    Slurm's ``ReturnToService`` (0, 1 or 2; Sluice's default is 1, Slurm's is 0) and Sluice's
    ``NodeFailureGuardShare``: when more than this share of the watched nodes (and at least 2)
    fall silent at once, they are suspected of being cut off (a network partition), not taken
    DOWN, until an operator confirms or their heartbeats resume. ``MissingRunGrace`` (Sluice;
    Slurm's ``BatchStartTimeout`` + ``MessageTimeout``, 20 s): seconds a run the shard holds
    on a node may stay missing from the node's heartbeats before it is ended
    (docs/node-daemon.md, "Runs the node no longer runs").
    """

    return_to_service: int = 1
    failure_guard_share: float = 0.5
    missing_run_grace_s: int = 30


@dataclass(frozen=True, slots=True)
class ClusterConfig:
    """A whole cluster configuration; see docs/configuration.md."""

    cluster_name: str = "sluice"
    nodes: tuple[NodeConfig, ...] = ()
    partitions: tuple[PartitionConfig, ...] = (PartitionConfig("main", default=True),)
    qos: tuple[QosConfig, ...] = ()
    accounts: tuple[AccountConfig, ...] = ()
    licenses: tuple[tuple[str, int], ...] = ()  # cluster licenses: (name, count)
    priority: PriorityConfig = field(default_factory=PriorityConfig)
    scheduler: SchedulerConfig = field(default_factory=SchedulerConfig)
    requeue: RequeueConfig = field(default_factory=RequeueConfig)
    health: NodeHealthConfig = field(default_factory=NodeHealthConfig)
    auth: AuthConfig = field(default_factory=AuthConfig)

    def partition(self, name: str) -> PartitionConfig | None:
        """The partition called ``name``, or the default partition for ``""``."""
        for part in self.partitions:
            if part.name == name or (not name and part.default):
                return part
        return None

    def qos_named(self, name: str) -> QosConfig | None:
        """The QOS called ``name`` (None when unknown)."""
        for qos in self.qos:
            if qos.name == name:
                return qos
        return None

    def node_named(self, name: str) -> NodeConfig | None:
        """The configured node called ``name`` (None when unknown)."""
        for node in self.nodes:
            if node.name == name:
                return node
        return None

    def account_of(self, user: str) -> str:
        """The first account listing ``user`` (its default account), or ""."""
        for account in self.accounts:
            if user in account.users:
                return account.name
        return ""


DEFAULT_CONFIG = ClusterConfig()
