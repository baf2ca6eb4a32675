"""Sluice's pure scheduling core: requests in, facts out, state by folding facts.

The shell's whole interface::

    state = initial_state(shard, cluster_id, config)       # or restore_state(meta, jobs, nodes)
    facts = decide(state, request, now_ms)                  # one request → facts
    state = evolve(state, fact)                             # the only writer of state
    facts = schedule(state, now_ms)                         # one scheduling pass
    cmds  = node_commands(state, fact)                      # LaunchRun / KillRun
    due   = accrual_due(state, now_ms)                      # close a quiet batch's cycle too
    name, record = as_record(obj); obj = from_record(name, record)

Nothing here reads a clock, draws a random number or does I/O.
"""

from scheduler.commands import KillRun, LaunchRun, NodeCommand, node_commands
from scheduler.config import (
    DEFAULT_CONFIG,
    AccountConfig,
    ClusterConfig,
    ConfigError,
    NodeConfig,
    PartitionConfig,
    PriorityConfig,
    QosConfig,
    SchedulerConfig,
    parse_config,
)
from scheduler.config_model import RequeueConfig
from scheduler.decide import decide
from scheduler.evolve import evolve
from scheduler.facts import (
    ConfigApplied,
    CycleCompleted,
    Fact,
    JobEnded,
    JobExpediting,
    JobHeld,
    JobPending,
    JobQueued,
    JobRejected,
    JobReleased,
    JobRequeued,
    JobStarted,
    NodeEpilogCompleted,
    NodeRegistered,
    NodeStateChanged,
    RunKillRequested,
)
from scheduler.fairshare import accrual_due
from scheduler.model import Demand, Job, Node
from scheduler.node_states import node_state
from scheduler.reasons import (
    PERMANENT,
    RETRYABLE,
    JobState,
    NodeReason,
    NodeState,
    PendingReason,
    Rejection,
    RejectionReason,
    RequeueReason,
)
from scheduler.requests import (
    ApplyConfig,
    CancelJob,
    CloseCycle,
    DrainNode,
    HoldJob,
    NodeFailed,
    RegisterNode,
    ReleaseJob,
    ReportEpilog,
    ReportJobExit,
    ReportProlog,
    Request,
    RequeueJob,
    ResumeNode,
    SubmitJob,
    Tick,
    UpdateJob,
)
from scheduler.schedule import PassResult, Reservation, schedule, schedule_with_plan
from scheduler.spec import JobSpec, Segment
from scheduler.state import ShardMeta, ShardState, initial_state, restore_state, state_meta
from scheduler.wire import RECORD_TYPES, as_record, from_record, record_fields

__all__ = [
    "DEFAULT_CONFIG",
    "PERMANENT",
    "RECORD_TYPES",
    "RETRYABLE",
    "AccountConfig",
    "ApplyConfig",
    "CancelJob",
    "CloseCycle",
    "ClusterConfig",
    "ConfigApplied",
    "ConfigError",
    "CycleCompleted",
    "Demand",
    "DrainNode",
    "Fact",
    "HoldJob",
    "Job",
    "JobEnded",
    "JobExpediting",
    "JobHeld",
    "JobPending",
    "JobQueued",
    "JobRejected",
    "JobReleased",
    "JobRequeued",
    "JobSpec",
    "JobStarted",
    "JobState",
    "KillRun",
    "LaunchRun",
    "Node",
    "NodeCommand",
    "NodeConfig",
    "NodeEpilogCompleted",
    "NodeFailed",
    "NodeReason",
    "NodeRegistered",
    "NodeState",
    "NodeStateChanged",
    "PartitionConfig",
    "PassResult",
    "PendingReason",
    "PriorityConfig",
    "QosConfig",
    "RegisterNode",
    "Rejection",
    "RejectionReason",
    "ReleaseJob",
    "ReportEpilog",
    "ReportJobExit",
    "ReportProlog",
    "Request",
    "RequeueConfig",
    "RequeueJob",
    "RequeueReason",
    "Reservation",
    "ResumeNode",
    "RunKillRequested",
    "SchedulerConfig",
    "Segment",
    "ShardMeta",
    "ShardState",
    "SubmitJob",
    "Tick",
    "UpdateJob",
    "accrual_due",
    "as_record",
    "decide",
    "evolve",
    "from_record",
    "initial_state",
    "node_commands",
    "node_state",
    "parse_config",
    "record_fields",
    "restore_state",
    "schedule",
    "schedule_with_plan",
    "state_meta",
]
