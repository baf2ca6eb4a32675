"""``decide(state, request, now_ms) -> facts``: one request, decided against the state.

Pure: no clock (``now_ms`` is the request's time), no randomness, no I/O, and no decision by
the order of an unordered collection. The facts carry their meta (see :mod:`scheduler.stamp`);
evolve them in order before deciding the next request. Time limits and begin times are not
acted on here but in :func:`scheduler.schedule`, which the shell calls once per batch.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from scheduler.config import ConfigError, parse_config
from scheduler.decide_jobs import (
    decide_cancel,
    decide_exit,
    decide_hold,
    decide_release,
    decide_submit,
    decide_update,
    rejected,
)
from scheduler.decide_nodes import decide_node_failed, decide_register
from scheduler.decide_requeue import decide_requeue
from scheduler.epilog import decide_epilog, decide_prolog
from scheduler.facts import ConfigApplied, CycleCompleted, Fact
from scheduler.licenses import ResourcesConfigError, parse_resources
from scheduler.node_admin import decide_drain, decide_resume
from scheduler.reasons import RejectionReason
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
from scheduler.stamp import Stamper
from scheduler.state import ShardState
from scheduler.topology_glue import TopologyConfigError, parse_topology

__all__ = ["CONFIG_KINDS", "decide"]

CONFIG_KINDS = ("cluster", "topology", "resources")


def decide(state: ShardState, request: Request, now_ms: int) -> list[Fact]:
    """The facts that ``request`` leads to at ``now_ms`` (possibly none)."""
    handler = _HANDLERS.get(type(request))
    if handler is None:
        raise TypeError(f"decide() does not accept {type(request).__name__}")
    return handler(state, request, Stamper(state, now_ms))


def _apply_config(state: ShardState, req: ApplyConfig, st: Stamper) -> list[Fact]:
    """A valid file → ConfigApplied; a bad one → JobRejected(InvalidConfig) keyed by its SLUID.

    ``cluster`` files are parsed here, ``topology`` files by the topology plugins' parsers
    (topology.yaml or topology.conf; an empty text removes the topology), ``resources`` files
    by the resources module (resources.yaml; an empty text removes them).
    """
    if req.kind not in CONFIG_KINDS:
        return rejected(
            st,
            req.config_sluid,
            RejectionReason.INVALID_CONFIG,
            f"unknown configuration kind {req.kind!r}",
        )
    if state.meta.config_texts.get(req.kind) == req.text:
        return []
    source = req.source or req.config_sluid
    try:
        if req.kind == "cluster":
            parse_config(req.text, source)
        elif req.kind == "topology" and req.text.strip():
            parse_topology(req.text, source)
        elif req.kind == "resources" and req.text.strip():
            parse_resources(req.text, source, tuple(n for n, _ in state.config.licenses))
    except (ConfigError, TopologyConfigError, ResourcesConfigError) as error:
        return rejected(st, req.config_sluid, RejectionReason.INVALID_CONFIG, str(error))
    digest = hashlib.sha256(req.text.encode()).hexdigest()
    return [
        ConfigApplied(
            **st.meta(), config_sluid=req.config_sluid, kind=req.kind, digest=digest, text=req.text
        )
    ]


def _close_cycle(state: ShardState, req: CloseCycle, st: Stamper) -> list[Fact]:
    return [
        CycleCompleted(
            **st.meta(),
            inbox_partition=req.inbox_partition,
            inbox_from=req.inbox_from,
            inbox_to=req.inbox_to,
            pending=len(state.pending),
            running=len(state.running),
            started=state.meta.started_in_cycle,
        )
    ]


def _tick(state: ShardState, req: Tick, st: Stamper) -> list[Fact]:
    del state, req, st  # time is acted on by schedule(), which the shell calls per batch
    return []


_HANDLERS: dict[type, Callable[[ShardState, Any, Stamper], list[Fact]]] = {
    SubmitJob: decide_submit,
    CancelJob: decide_cancel,
    HoldJob: decide_hold,
    ReleaseJob: decide_release,
    UpdateJob: decide_update,
    RegisterNode: decide_register,
    ReportJobExit: decide_exit,
    ApplyConfig: _apply_config,
    Tick: _tick,
    NodeFailed: decide_node_failed,
    CloseCycle: _close_cycle,
    ReportProlog: decide_prolog,
    ReportEpilog: decide_epilog,
    DrainNode: decide_drain,
    ResumeNode: decide_resume,
    RequeueJob: decide_requeue,
}
