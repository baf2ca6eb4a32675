"""Named reasons: why a request was refused, why a job waits, how a run ended.

Every reason is a constant whose ``name`` is the text on the wire (Slurm's name where Slurm has
one) and whose ``text`` is a sentence for people. Rejections also say whether retrying the same
request later can succeed (:data:`RETRYABLE`, e.g. a limit that frees up) or never will
(:data:`PERMANENT`, e.g. a malformed request). Rejections are facts, never exceptions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

__all__ = [
    "PERMANENT",
    "RETRYABLE",
    "JobState",
    "NodeReason",
    "NodeState",
    "PendingReason",
    "Rejection",
    "RejectionReason",
    "RequeueReason",
]

Retry = Literal["RETRYABLE", "PERMANENT"]
RETRYABLE: Final[Retry] = "RETRYABLE"
PERMANENT: Final[Retry] = "PERMANENT"


@dataclass(frozen=True, slots=True)
class Rejection:
    """A named reason for refusing a request: wire name, sentence, retry class."""

    name: str
    text: str
    retry: Retry = PERMANENT
    slurm: str = ""  # Slurm's own error text for the same refusal (slurm_strerror), if any

    @property
    def retryable(self) -> bool:
        """True when the same request may succeed later."""
        return self.retry == RETRYABLE


_POLICY: Final = (
    "Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)"
)


class RejectionReason:
    """The reasons a submission or another request is refused (``JobRejected.reason``)."""

    INVALID_NODE_COUNT: Final = Rejection(
        "InvalidNodeCount",
        "The node count must be at least 1 and the minimum at most the maximum.",
        slurm="Node count specification invalid",
    )
    INVALID_TIME_LIMIT: Final = Rejection(
        "InvalidTimeLimit", "The time limit must not be negative.",
        slurm="Requested time limit is invalid (missing or exceeds some limit)",
    )
    INVALID_PARTITION: Final = Rejection(
        "InvalidPartition", "The requested partition does not exist.",
        slurm="Invalid partition name specified",
    )
    PARTITION_NOT_AVAILABLE: Final = Rejection(
        "PartitionNotAvailable",
        "The partition does not accept jobs now (DRAIN or INACTIVE).",
        RETRYABLE,
        slurm="Required partition not available (inactive or drain)",
    )
    INVALID_QOS: Final = Rejection(
        "InvalidQOS", "The requested QOS does not exist or the partition does not allow it.",
        slurm="Invalid qos specification",
    )
    INVALID_ACCOUNT: Final = Rejection(
        "InvalidAccount", "The requested account does not exist.",
        slurm="Invalid account or account/partition combination specified",
    )
    INVALID_TASKS: Final = Rejection(
        "InvalidTaskCount",
        "Tasks and CPUs per task must be at least 1; GPUs and memory must not be negative.",
    )
    VALUE_OUT_OF_RANGE: Final = Rejection(
        "ValueOutOfRange",
        "A count, size, time or time limit is larger than Sluice can hold (schemas.ranges).",
    )
    FIELD_TOO_LONG: Final = Rejection(
        "FieldTooLong", "A text or list field is longer than Sluice accepts (schemas.ranges)."
    )
    DUPLICATE_SUBMISSION: Final = Rejection(
        "DuplicateSubmission",
        "A job with this SLUID exists with another spec; mint a new SLUID for a new job.",
    )
    SLUID_IN_USE: Final = Rejection(
        "SluidInUse",
        "Another submission holds this job SLUID (two clients minted it in the same millisecond);"
        " mint a new SLUID and submit again. The refusal carries the refused submission's nonce.",
        RETRYABLE,
    )
    INTERNAL_ERROR: Final = Rejection(
        "InternalError",
        "The shard failed to decide this request (a bug, logged with the request's inbox"
        " position); nothing changed.",
    )
    EMPTY_COMMAND: Final = Rejection("EmptyCommand", "The job has no command to run.")
    NODE_COUNT_TOO_LARGE: Final = Rejection(
        "NodeCountTooLarge", "No partition has enough nodes that could ever run this job.",
        slurm="Requested node configuration is not available",
    )
    NODE_CONFIG_UNAVAILABLE: Final = Rejection(
        "RequestedNodeConfigUnavailable",
        "No node in the partition has the CPUs, memory or GPUs asked for per node.",
        slurm="Requested node configuration is not available",
    )
    INVALID_FEATURE: Final = Rejection(
        "InvalidFeature",
        "The --constraint does not parse or names a feature no node of the partition has.",
        slurm="Invalid feature specification",
    )
    INVALID_NODE_NAME: Final = Rejection(
        "InvalidNodeName",
        "-w/--nodelist or -x/--exclude does not parse, or -w names a node the partition lacks.",
        slurm="Invalid node name specified",
    )
    INVALID_LICENSE: Final = Rejection(
        "InvalidLicense", "The license or resource request is malformed or names unknown ones.",
        slurm="Invalid license specification",
    )
    INVALID_DEPENDENCY: Final = Rejection(
        "InvalidDependency", "The dependency is malformed or names a job that never existed.",
        slurm="Job dependency problem",
    )
    INVALID_ARRAY: Final = Rejection(
        "InvalidArraySpec", "The array specification is malformed or larger than MaxArraySize.",
        slurm="Invalid job array specification",
    )
    INVALID_BEGIN_TIME: Final = Rejection(
        "InvalidBeginTime", "The begin time must not be negative."
    )
    INVALID_SIGNAL: Final = Rejection(
        "InvalidSignal", "The --signal specification is not [{R|B}:]SIG[@SECONDS] with a signal "
        "name or number 1-64 and SECONDS 0-65535.",
    )
    INVALID_REQUEUE: Final = Rejection(
        "InvalidRequeue", "The requeue option must be empty, 'yes', 'no' or 'expedite'."
    )
    INVALID_NICE: Final = Rejection(
        "InvalidNice", "Nice must lie between -2147483645 and 2147483645."
    )
    INVALID_SLUID: Final = Rejection("InvalidSluid", "The job SLUID is not a valid SLUID.")
    STALE_SUBMISSION: Final = Rejection(
        "StaleSubmission",
        "The job SLUID is older than the duplicate-detection window; mint a new one and resubmit.",
    )
    PARTITION_TIME_LIMIT: Final = Rejection(
        "PartitionTimeLimit", "The time limit exceeds the partition's MaxTime (EnforcePartLimits).",
        slurm="Requested time limit exceeds partition limit",
    )
    PARTITION_NODE_LIMIT: Final = Rejection(
        "PartitionNodeLimit",
        "The node count exceeds the partition's MaxNodes (EnforcePartLimits).",
        slurm="Node count specification invalid",
    )
    QOS_MAX_WALL: Final = Rejection(
        "QOSMaxWallDurationPerJobLimit", "The time limit exceeds the QOS's MaxWall.",
        slurm=_POLICY,
    )
    QOS_MAX_SUBMIT: Final = Rejection(
        "QOSMaxSubmitJobPerUserLimit",
        "The user already has the QOS's MaxSubmitJobs jobs pending or running.",
        RETRYABLE,
        slurm=_POLICY,
    )
    ASSOC_MAX_SUBMIT: Final = Rejection(
        "AssocMaxSubmitJobLimit",
        "Job violates accounting/QOS policy: the user already has the account's MaxSubmitJobs"
        " jobs pending or running.",
        RETRYABLE,
        slurm=_POLICY,
    )
    ASSOC_GRP_SUBMIT: Final = Rejection(
        "AssocGrpSubmitJobsLimit",
        "Job violates accounting/QOS policy: the account (or a parent) already has its"
        " GrpSubmitJobs jobs pending or running.",
        RETRYABLE,
        slurm=_POLICY,
    )
    JOB_NOT_PENDING: Final = Rejection(
        "JobNotPending", "Only a pending job can be changed this way.",
        slurm="Job is no longer pending execution",
    )
    INVALID_UPDATE: Final = Rejection(
        "InvalidUpdate", "The update names an unknown field or a value that does not parse."
    )
    ACCESS_DENIED: Final = Rejection(
        "AccessDenied", "Only the job's owner or an operator may do this.",
        slurm="Access/permission denied",
    )
    INVALID_CONFIG: Final = Rejection(
        "InvalidConfig", "The configuration file is invalid; the running configuration is kept."
    )
    EXPEDITE_NOT_ENABLED: Final = Rejection(
        "ExpediteNotEnabled", "Expedited requeue requested but not enabled"
    )
    INVALID_HOT_SWAP: Final = Rejection(
        "InvalidHotSwap", "The hot-swap option must be empty, 'yes' or 'no'."
    )
    REQUEUE_DISABLED: Final = Rejection(
        "RequeueDisabled", "The job may not be requeued (--no-requeue, or JobRequeue=0)."
    )
    JOB_NOT_RUNNING: Final = Rejection("JobNotRunning", "Only a running job can be requeued.")
    KEY_MISMATCH: Final = Rejection(
        "KeyMismatch", "The record's Kafka key is not the job's SLUID (refused at the intake)."
    )
    PARTITION_MISMATCH: Final = Rejection(
        "PartitionMismatch",
        "The record is not on the partition its key hashes to with murmur2 (refused at the "
        "intake; set the producer's partitioner to murmur2).",
    )
    EMPTY_WORKING_DIRECTORY: Final = Rejection(
        "EmptyWorkingDirectory",
        "The job has no absolute working directory (spec.workdir; refused at the intake).",
    )
    JOB_FINISHED: Final = Rejection(
        "JobFinished", "The job is being killed or has ended: it can no longer change.",
        slurm="Job has already finished",
    )
    JOB_HELD: Final = Rejection(
        "JobHeld", "A held job's priority cannot be set: release it first.",
        slurm="Job is in held state, pending scheduler release",
    )
    JOB_EXPEDITING: Final = Rejection(
        "JobExpediting", "Only an operator may change a job while it is expediting."
    )
    RESERVATION_INVALID: Final = Rejection(
        "InvalidReservation", "No reservation of that name exists.",
        slurm="Requested reservation is invalid",
    )
    RESERVATION_ACCESS: Final = Rejection(
        "ReservationAccessDenied",
        "The reservation lists neither the job's user nor its account (Users=, Accounts=).",
        slurm="Access denied to requested reservation",
    )
    RESERVATION_NAME_DUP: Final = Rejection(
        "DuplicateReservationName", "A reservation of that name exists.",
        slurm="Duplicate reservation name",
    )
    RESERVATION_BUSY: Final = Rejection(
        "ReservationBusy", "Jobs of the reservation still run: it cannot be deleted.",
        RETRYABLE, slurm="Reservation is busy",
    )
    NODES_BUSY: Final = Rejection(
        "NodesBusy",
        "The nodes run jobs into the window, or another reservation holds them then.",
        RETRYABLE, slurm="Requested nodes are busy",
    )
    INVALID_TIME: Final = Rejection(
        "InvalidTime", "The reservation's window is empty or not given.",
        slurm="Invalid time specified",
    )
    INVALID_RESERVATION_REQUEST: Final = Rejection(
        "InvalidReservationRequest",
        "A reservation needs nodes (Nodes= or NodeCnt=) and Users= or Accounts=, and only "
        "the flags Sluice builds (MAINT, IGNORE_JOBS).",
    )


class PendingReason:
    """Why a pending job is not running, with Slurm's names (``JobPending.reason``)."""

    NONE: Final = "None"
    PRIORITY: Final = "Priority"
    RESOURCES: Final = "Resources"
    BEGIN_TIME: Final = "BeginTime"
    DEPENDENCY: Final = "Dependency"
    DEPENDENCY_NEVER_SATISFIED: Final = "DependencyNeverSatisfied"
    HELD_USER: Final = "JobHeldUser"
    HELD_ADMIN: Final = "JobHeldAdmin"
    PARTITION_TIME_LIMIT: Final = "PartitionTimeLimit"
    PARTITION_NODE_LIMIT: Final = "PartitionNodeLimit"
    PARTITION_DOWN: Final = "PartitionDown"
    PARTITION_INACTIVE: Final = "PartitionInactive"
    QOS_MAX_JOBS_PER_USER: Final = "QOSMaxJobsPerUserLimit"
    QOS_MAX_WALL: Final = "QOSMaxWallDurationPerJobLimit"
    QOS_GRP_CPU: Final = "QOSGrpCpuLimit"
    QOS_GRP_GRES: Final = "QOSGrpGRES"
    QOS_GRP_NODE: Final = "QOSGrpNodeLimit"
    QOS_GRP_MEM: Final = "QOSGrpMemLimit"
    ASSOC_GRP_CPU: Final = "AssocGrpCpuLimit"
    ASSOC_GRP_MEM: Final = "AssocGrpMemLimit"
    ASSOC_GRP_NODE: Final = "AssocGrpNodeLimit"
    ASSOC_GRP_GRES: Final = "AssocGrpGRES"
    ASSOC_GRP_JOBS: Final = "AssocGrpJobsLimit"
    ASSOC_MAX_JOBS: Final = "AssocMaxJobsLimit"
    ASSOC_MAX_WALL: Final = "AssocMaxWallDurationPerJobLimit"
    ASSOC_MAX_CPU_PER_JOB: Final = "AssocMaxCpuPerJobLimit"
    ASSOC_MAX_MEM_PER_JOB: Final = "AssocMaxMemPerJob"
    ASSOC_MAX_NODE_PER_JOB: Final = "AssocMaxNodePerJobLimit"
    ASSOC_MAX_GRES_PER_JOB: Final = "AssocMaxGRESPerJob"
    ARRAY_TASK_LIMIT: Final = "JobArrayTaskLimit"
    LICENSES: Final = "Licenses"
    NODE_DOWN: Final = "NodeDown"
    CLEANING: Final = "Cleaning"
    MAX_REQUEUE: Final = "JobHoldMaxRequeue"  # held after MaxBatchRequeue requeues
    HOT_SWAP: Final = "HotSwap"  # Sluice: waiting for replacements beside the nodes it kept
    RESERVATION: Final = "Reservation"  # its reservation's window has not begun
    RESERVATION_DELETED: Final = "ReservationDeleted"  # its reservation was deleted or ended


class JobState:
    """Job base states (Slurm's ``enum job_states``) and the flags Sluice shows."""

    PENDING: Final = "PENDING"
    RUNNING: Final = "RUNNING"
    SUSPENDED: Final = "SUSPENDED"
    COMPLETING: Final = "COMPLETING"
    COMPLETED: Final = "COMPLETED"
    CANCELLED: Final = "CANCELLED"
    FAILED: Final = "FAILED"
    TIMEOUT: Final = "TIMEOUT"
    NODE_FAIL: Final = "NODE_FAIL"
    PREEMPTED: Final = "PREEMPTED"
    BOOT_FAIL: Final = "BOOT_FAIL"
    DEADLINE: Final = "DEADLINE"
    OUT_OF_MEMORY: Final = "OUT_OF_MEMORY"
    REJECTED: Final = "REJECTED"
    REQUEUED: Final = "REQUEUED"  # a run ended because its job is requeued (admin, prolog)
    ENDED: Final = frozenset(
        {
            COMPLETED,
            CANCELLED,
            FAILED,
            TIMEOUT,
            NODE_FAIL,
            PREEMPTED,
            BOOT_FAIL,
            DEADLINE,
            OUT_OF_MEMORY,
        }
    )
    KILL_REASONS: Final = (CANCELLED, TIMEOUT, PREEMPTED, NODE_FAIL)
    REQUEUE_HOLD: Final = "REQUEUE_HOLD"  # a kill that requeues the job held (requeuehold)
    PROLOG_FAILED: Final = "PROLOG_FAILED"  # a kill after a failed prolog


class NodeState:
    """Node states. ``NodeStateChanged`` announces a node's *service* state: ``IDLE`` (in
    service), ``DRAIN``, ``DOWN`` or ``INVALID_REG``. Whether a node in service is ``IDLE``,
    ``MIXED`` or ``ALLOCATED`` follows from the runs on it and is derived where it is shown, as
    slurmctld does (old ledgers' ``MIXED``/``ALLOCATED`` read as in service).
    """

    UNKNOWN: Final = "UNKNOWN"
    IDLE: Final = "IDLE"
    MIXED: Final = "MIXED"
    ALLOCATED: Final = "ALLOCATED"
    DOWN: Final = "DOWN"
    DRAIN: Final = "DRAIN"
    INVALID_REG: Final = "INVALID_REG"
    SCHEDULABLE: Final = frozenset({IDLE, MIXED, ALLOCATED})


class RequeueReason:
    """Why a job was requeued (``JobRequeued.reason``) and what triggered an expedite."""

    NODE_FAIL: Final = "NODE_FAIL"
    EXIT_NONZERO: Final = "EXIT_NONZERO"
    ADMIN: Final = "ADMIN"
    PROLOG_FAILED: Final = "PROLOG_FAILED"
    REQUEUE_EXIT: Final = "REQUEUE_EXIT"  # the script's exit code is in RequeueExit
    SPECIAL_EXIT: Final = "SPECIAL_EXIT"  # in RequeueExitHold: held (Slurm's JOB_SPECIAL_EXIT)
    EPILOG_FAILED: Final = "EPILOG_FAILED"  # JobExpediting.trigger only
    COUNTED: Final = frozenset({NODE_FAIL, EXIT_NONZERO, PROLOG_FAILED})  # MaxBatchRequeue


class NodeReason:
    """The reasons the core gives nodes (Slurm's texts)."""

    NOT_RESPONDING: Final = "Not responding"
    REBOOTED: Final = "Node unexpectedly rebooted"
    EPILOG_ERROR: Final = "Epilog error"
    PROLOG_ERROR: Final = "Prolog error"
    CLOCK_SKEW: Final = "Clock skew: refused a fresh launch as expired"
    """A node refused as expired a launch issued < ``CommandTTL`` before (its clock runs
    ahead: ``scheduler.nodes.refused_launches``); drained."""
    CLOCK_SKEW_HEARTBEATS: Final = "Clock skew: heartbeats"
    """A node whose heartbeats ran ahead of the workers' clock by more than ``CommandTTL``,
    several in a row (``scheduler.nodes.clock_ahead``): it refuses every command; drained with
    ``"Clock skew: heartbeats N s ahead"``."""
    STATE_DIR_PAUSED: Final = "State directory "
    """The start of a node's suspicion while its full or read-only state directory pauses its
    commands (``scheduler.nodes.return_to_service``): no new work, runs go on, not drained."""
    SYSTEM_DOWN: Final = (NOT_RESPONDING, REBOOTED, "Re-registered as ")
    """The starts of the reasons Sluice itself takes a node DOWN with; any other is an
    operator's (here, not in ``scheduler.nodes.return_to_service``, so that ``sluice nodes``
    reads it without importing the core)."""
