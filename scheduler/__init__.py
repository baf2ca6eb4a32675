"""Sluice's pure scheduling core: requests in, facts out, state by folding facts.

The shell's whole interface::

    state = initial_state(shard, cluster_id, config)       # or restore_state(meta, jobs, nodes)
    facts = decide(state, request, now_ms)                  # one request → facts
    state = evolve(state, fact)                             # the only writer of state
    facts = schedule(state, now_ms)                         # one scheduling pass
    cmds  = node_commands(state, fact)                      # LaunchRun / KillRun
    due   = accrual_due(state, now_ms)                      # close a quiet batch's cycle too
    out   = run_cycle(state, [Timed(pos, ms, req)], inbox)   # a whole cycle (shard, verify, sim)
    name, record = as_record(obj); obj = from_record(name, record)

Nothing here reads a clock, draws a random number or does I/O.
"""

import sys
import types
from typing import TYPE_CHECKING, Any

from scheduler.lazy import lazy_exports

if TYPE_CHECKING:
    from scheduler.access.identity import ANONYMOUS, Attributed, Identity
    from scheduler.commands import node_commands
    from scheduler.config.cluster import (
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
    from scheduler.config.model import RequeueConfig
    from scheduler.cycle import CycleResult, Failure, InboxRange, Timed, cycle_closes, run_cycle
    from scheduler.decide import decide
    from scheduler.evolve import evolve
    from scheduler.nodes.states import node_state
    from scheduler.records import (
        RECORD_TYPES,
        ApplyConfig,
        CancelJob,
        CloseCycle,
        ConfigApplied,
        CycleCompleted,
        DrainNode,
        Fact,
        HoldJob,
        JobEnded,
        JobExpediting,
        JobHeld,
        JobPending,
        JobQueued,
        JobRejected,
        JobReleased,
        JobRequeued,
        JobSpec,
        JobStarted,
        KillRun,
        LaunchRun,
        NodeCommand,
        NodeEpilogCompleted,
        NodeFailed,
        NodeRegistered,
        NodeResponding,
        NodeStateChanged,
        NodeSuspected,
        RegisterNode,
        ReleaseJob,
        ReportEpilog,
        ReportJobExit,
        ReportProlog,
        Request,
        RequestDenied,
        RequeueJob,
        ResumeNode,
        RunKillRequested,
        RunMissingNoted,
        RunSignalled,
        Segment,
        SubmitJob,
        Tick,
        UpdateJob,
        as_record,
        from_record,
        record_fields,
    )
    from scheduler.schedule import PassResult, Reservation, schedule, schedule_with_plan
    from scheduler.scheduling.fairshare import accrual_due
    from scheduler.shard.model import Demand, Job, Node
    from scheduler.shard.reasons import (
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
    from scheduler.shard.state import (
        ShardMeta,
        ShardState,
        initial_state,
        node_rows_changed,
        restore_state,
        state_meta,
    )

# Imported when first used (PEP 562), so that importing one submodule (the node daemon's
# scheduler.…) does not load the whole package: name → (module, attribute).
_LAZY: dict[str, tuple[str, str]] = {
    "ANONYMOUS": ("scheduler.access.identity", "ANONYMOUS"),
    "AccountConfig": ("scheduler.config.cluster", "AccountConfig"),
    "ApplyConfig": ("scheduler.records", "ApplyConfig"),
    "Attributed": ("scheduler.access.identity", "Attributed"),
    "CancelJob": ("scheduler.records", "CancelJob"),
    "CloseCycle": ("scheduler.records", "CloseCycle"),
    "ClusterConfig": ("scheduler.config.cluster", "ClusterConfig"),
    "ConfigApplied": ("scheduler.records", "ConfigApplied"),
    "ConfigError": ("scheduler.config.cluster", "ConfigError"),
    "CycleCompleted": ("scheduler.records", "CycleCompleted"),
    "CycleResult": ("scheduler.cycle", "CycleResult"),
    "DEFAULT_CONFIG": ("scheduler.config.cluster", "DEFAULT_CONFIG"),
    "Demand": ("scheduler.shard.model", "Demand"),
    "DrainNode": ("scheduler.records", "DrainNode"),
    "Fact": ("scheduler.records", "Fact"),
    "Failure": ("scheduler.cycle", "Failure"),
    "HoldJob": ("scheduler.records", "HoldJob"),
    "Identity": ("scheduler.access.identity", "Identity"),
    "InboxRange": ("scheduler.cycle", "InboxRange"),
    "Job": ("scheduler.shard.model", "Job"),
    "JobEnded": ("scheduler.records", "JobEnded"),
    "JobExpediting": ("scheduler.records", "JobExpediting"),
    "JobHeld": ("scheduler.records", "JobHeld"),
    "JobPending": ("scheduler.records", "JobPending"),
    "JobQueued": ("scheduler.records", "JobQueued"),
    "JobRejected": ("scheduler.records", "JobRejected"),
    "JobReleased": ("scheduler.records", "JobReleased"),
    "JobRequeued": ("scheduler.records", "JobRequeued"),
    "JobSpec": ("scheduler.records", "JobSpec"),
    "JobStarted": ("scheduler.records", "JobStarted"),
    "JobState": ("scheduler.shard.reasons", "JobState"),
    "KillRun": ("scheduler.records", "KillRun"),
    "LaunchRun": ("scheduler.records", "LaunchRun"),
    "Node": ("scheduler.shard.model", "Node"),
    "NodeCommand": ("scheduler.records", "NodeCommand"),
    "NodeConfig": ("scheduler.config.cluster", "NodeConfig"),
    "NodeEpilogCompleted": ("scheduler.records", "NodeEpilogCompleted"),
    "NodeFailed": ("scheduler.records", "NodeFailed"),
    "NodeReason": ("scheduler.shard.reasons", "NodeReason"),
    "NodeRegistered": ("scheduler.records", "NodeRegistered"),
    "NodeResponding": ("scheduler.records", "NodeResponding"),
    "NodeState": ("scheduler.shard.reasons", "NodeState"),
    "NodeStateChanged": ("scheduler.records", "NodeStateChanged"),
    "NodeSuspected": ("scheduler.records", "NodeSuspected"),
    "PERMANENT": ("scheduler.shard.reasons", "PERMANENT"),
    "PartitionConfig": ("scheduler.config.cluster", "PartitionConfig"),
    "PassResult": ("scheduler.schedule", "PassResult"),
    "PendingReason": ("scheduler.shard.reasons", "PendingReason"),
    "PriorityConfig": ("scheduler.config.cluster", "PriorityConfig"),
    "QosConfig": ("scheduler.config.cluster", "QosConfig"),
    "RECORD_TYPES": ("scheduler.records", "RECORD_TYPES"),
    "RETRYABLE": ("scheduler.shard.reasons", "RETRYABLE"),
    "RegisterNode": ("scheduler.records", "RegisterNode"),
    "Rejection": ("scheduler.shard.reasons", "Rejection"),
    "RejectionReason": ("scheduler.shard.reasons", "RejectionReason"),
    "ReleaseJob": ("scheduler.records", "ReleaseJob"),
    "ReportEpilog": ("scheduler.records", "ReportEpilog"),
    "ReportJobExit": ("scheduler.records", "ReportJobExit"),
    "ReportProlog": ("scheduler.records", "ReportProlog"),
    "Request": ("scheduler.records", "Request"),
    "RequestDenied": ("scheduler.records", "RequestDenied"),
    "RequeueConfig": ("scheduler.config.model", "RequeueConfig"),
    "RequeueJob": ("scheduler.records", "RequeueJob"),
    "RequeueReason": ("scheduler.shard.reasons", "RequeueReason"),
    "Reservation": ("scheduler.schedule", "Reservation"),
    "ResumeNode": ("scheduler.records", "ResumeNode"),
    "RunKillRequested": ("scheduler.records", "RunKillRequested"),
    "RunMissingNoted": ("scheduler.records", "RunMissingNoted"),
    "RunSignalled": ("scheduler.records", "RunSignalled"),
    "SchedulerConfig": ("scheduler.config.cluster", "SchedulerConfig"),
    "Segment": ("scheduler.records", "Segment"),
    "ShardMeta": ("scheduler.shard.state", "ShardMeta"),
    "ShardState": ("scheduler.shard.state", "ShardState"),
    "SubmitJob": ("scheduler.records", "SubmitJob"),
    "Tick": ("scheduler.records", "Tick"),
    "Timed": ("scheduler.cycle", "Timed"),
    "UpdateJob": ("scheduler.records", "UpdateJob"),
    "accrual_due": ("scheduler.scheduling.fairshare", "accrual_due"),
    "as_record": ("scheduler.records", "as_record"),
    "cycle_closes": ("scheduler.cycle", "cycle_closes"),
    "decide": ("scheduler.decide", "decide"),
    "evolve": ("scheduler.evolve", "evolve"),
    "from_record": ("scheduler.records", "from_record"),
    "initial_state": ("scheduler.shard.state", "initial_state"),
    "node_commands": ("scheduler.commands", "node_commands"),
    "node_state": ("scheduler.nodes.states", "node_state"),
    "parse_config": ("scheduler.config.cluster", "parse_config"),
    "record_fields": ("scheduler.records", "record_fields"),
    "restore_state": ("scheduler.shard.state", "restore_state"),
    "node_rows_changed": ("scheduler.shard.state", "node_rows_changed"),
    "run_cycle": ("scheduler.cycle", "run_cycle"),
    "schedule": ("scheduler.schedule", "schedule"),
    "schedule_with_plan": ("scheduler.schedule", "schedule_with_plan"),
    "state_meta": ("scheduler.shard.state", "state_meta"),
}

__all__ = [
    "ANONYMOUS",
    "DEFAULT_CONFIG",
    "PERMANENT",
    "RECORD_TYPES",
    "RETRYABLE",
    "AccountConfig",
    "ApplyConfig",
    "Attributed",
    "CancelJob",
    "CloseCycle",
    "ClusterConfig",
    "ConfigApplied",
    "ConfigError",
    "CycleCompleted",
    "CycleResult",
    "Demand",
    "DrainNode",
    "Fact",
    "Failure",
    "HoldJob",
    "Identity",
    "InboxRange",
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
    "NodeResponding",
    "NodeState",
    "NodeStateChanged",
    "NodeSuspected",
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
    "RequestDenied",
    "RequeueConfig",
    "RequeueJob",
    "RequeueReason",
    "Reservation",
    "ResumeNode",
    "RunKillRequested",
    "RunMissingNoted",
    "RunSignalled",
    "SchedulerConfig",
    "Segment",
    "ShardMeta",
    "ShardState",
    "SubmitJob",
    "Tick",
    "Timed",
    "UpdateJob",
    "accrual_due",
    "as_record",
    "cycle_closes",
    "decide",
    "evolve",
    "from_record",
    "initial_state",
    "node_commands",
    "node_rows_changed",
    "node_state",
    "parse_config",
    "record_fields",
    "restore_state",
    "run_cycle",
    "schedule",
    "schedule_with_plan",
    "state_meta",
]


__getattr__, __dir__ = lazy_exports("scheduler", globals(), _LAZY)


_SHADOWED = frozenset({"decide", "evolve", "schedule"})
"""Names of the package that are also the names of its submodules: the function, not the module."""


class _Package(types.ModuleType):
    """The package object: loading ``scheduler.decide`` (the module) makes the import system
    set the package's ``decide`` to that module; the package's ``decide`` stays the function
    (as when everything was imported eagerly), found by ``__getattr__``."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _SHADOWED and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
