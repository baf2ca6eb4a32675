"""The worker's own metrics: scheduling cycle times per shard, and a span per cycle.

The shard runner reports each batch it applied (``BatchStats``); :func:`observe_batch` turns it
into Prometheus metrics on a registry of this module, which :func:`start_metrics_server` serves
on ``/metrics`` (:mod:`agents.metrics_server`, in a daemon thread). Wire it as
``ShardRunner(..., on_batch=lambda stats: observe_batch(shard, stats))``.

| metric | type | labels |
|---|---|---|
| ``sluice_scheduling_cycle_seconds`` | histogram | shard: decide + publish + persist of a batch |
| ``sluice_scheduling_phase_seconds`` | histogram | shard, phase: decide, publish, persist |
| ``sluice_scheduling_batch_requests`` | histogram | shard: inbox records in a batch |
| ``sluice_scheduling_requests_total`` | counter | shard |
| ``sluice_scheduling_facts_total`` | counter | shard, fact |
| ``sluice_scheduling_node_commands_total`` | counter | shard |
| ``sluice_scheduling_failed_requests_total`` | counter | shard: refused with InternalError |
| ``sluice_scheduling_failed_passes_total`` | counter | shard: passes that raised |
| ``slurm_schedule_cycle_last``, ``_max``, ``_tot`` | gauge | (µs, as sdiag) |
| ``slurm_sched_mean_cycle`` | gauge | (µs, as sdiag) |
| ``sluice_health_silent_nodes`` | gauge | nodes silent for the node timeout at the last check |
| ``sluice_health_watched_nodes`` | gauge | nodes this worker's health agent watches |
| ``sluice_health_blind`` | gauge | 1 while no heartbeat from any watched node arrives |
| ``sluice_intake_rate_limited_total`` | counter | request: requests refused ``RateLimited`` |
| ``sluice_intake_requests_total`` | counter | request: requests forwarded (sdiag's RPCs) |
| ``sluice_state_dir_full`` | gauge | 1 while the state directory is full (``streams.state_dir``) |
| ``sluice_state_dir_read_only`` | gauge | 1 while it is read-only or not writable |

The refusals are counted by request kind, not by user: user names are no secret (Slurm's
``slurm_user_jobs{username}``), but a label per user is unbounded, which ``/metrics`` never
carries (docs/observability.md); who was refused is in the ledger (``RequestDenied``).

When ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set, each batch is also exported by OTLP/HTTP as a
``scheduling cycle`` span with ``decide``, ``publish`` and ``persist`` children; otherwise the
OpenTelemetry SDK is never imported.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any, Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, make_wsgi_app
from prometheus_client.process_collector import ProcessCollector

from agents import metrics_server
from streams import state_dir

__all__ = ["INTAKE_REQUESTS", "RATE_LIMITED_REQUESTS", "REGISTRY", "BatchLike", "observe_batch",
           "observe_health", "start_metrics_server"]

REGISTRY = CollectorRegistry(auto_describe=True)
"""The registry of the worker's metrics (prometheus_client's default registry is left alone)."""

ProcessCollector(registry=REGISTRY)

_CYCLE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
                  10.0)
_SIZE_BUCKETS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000)

CYCLE_SECONDS = Histogram(
    "sluice_scheduling_cycle_seconds", "Wall time of one scheduling batch (decide, publish, "
    "persist)", ["shard"], buckets=_CYCLE_BUCKETS, registry=REGISTRY)
PHASE_SECONDS = Histogram(
    "sluice_scheduling_phase_seconds", "Wall time of one phase of a scheduling batch",
    ["shard", "phase"], buckets=_CYCLE_BUCKETS, registry=REGISTRY)
BATCH_REQUESTS = Histogram(
    "sluice_scheduling_batch_requests", "Inbox records decided in one batch", ["shard"],
    buckets=_SIZE_BUCKETS, registry=REGISTRY)
REQUESTS = Counter("sluice_scheduling_requests", "Inbox records decided", ["shard"],
                   registry=REGISTRY)
FACTS = Counter("sluice_scheduling_facts", "Facts written to the ledger", ["shard", "fact"],
                registry=REGISTRY)
COMMANDS = Counter("sluice_scheduling_node_commands", "Node commands written", ["shard"],
                   registry=REGISTRY)
FAILED_REQUESTS = Counter(
    "sluice_scheduling_failed_requests", "Requests whose decision raised (refused with "
    "InternalError, logged with their inbox offset)", ["shard"], registry=REGISTRY)
FAILED_PASSES = Counter(
    "sluice_scheduling_failed_passes", "Cycles whose scheduling pass raised (no pass emitted)",
    ["shard"], registry=REGISTRY)
SDIAG_LAST = Gauge("slurm_schedule_cycle_last", "Last scheduling cycle time",
                   registry=REGISTRY)
SDIAG_MAX = Gauge("slurm_schedule_cycle_max", "Max scheduling cycle time", registry=REGISTRY)
SDIAG_TOT = Gauge("slurm_schedule_cycle_tot", "Sum of scheduling cycle times",
                  registry=REGISTRY)
SDIAG_MEAN = Gauge("slurm_sched_mean_cycle", "Mean scheduling cycle time", registry=REGISTRY)
HEALTH_SILENT = Gauge("sluice_health_silent_nodes", "Nodes silent for the node timeout at the "
                      "last health check", registry=REGISTRY)
HEALTH_WATCHED = Gauge("sluice_health_watched_nodes", "Nodes this worker's health agent watches",
                       registry=REGISTRY)
RATE_LIMITED_REQUESTS = Counter(
    "sluice_intake_rate_limited", "Requests the intake refused RateLimited (SlurmctldParameters "
    "rl_enable)", ["request"], registry=REGISTRY)
INTAKE_REQUESTS = Counter(
    "sluice_intake_requests", "Requests the intake forwarded to the shards, by kind (sdiag's "
    "remote procedure calls by message type)", ["request"], registry=REGISTRY)
HEALTH_BLIND = Gauge("sluice_health_blind", "1 while the health agent hears no heartbeat from "
                     "any watched node (it judges nobody)", registry=REGISTRY)
STATE_DIR_FULL = Gauge("sluice_state_dir_full", "1 while the worker's state directory refuses "
                       "writes for want of space (ENOSPC: consuming paused)", registry=REGISTRY)
STATE_DIR_FULL.set_function(lambda: float(state_dir.alarm.count(state_dir.FULL)))
STATE_DIR_READ_ONLY = Gauge(
    "sluice_state_dir_read_only", "1 while the worker's state directory is read-only or not "
    "writable (EROFS, EACCES: consuming paused)", registry=REGISTRY)
STATE_DIR_READ_ONLY.set_function(lambda: float(state_dir.alarm.count(state_dir.READ_ONLY)))


def observe_health(silent: int, watched: int, *, blind: bool) -> None:
    """Record one health check (see ``agents.health_watch``)."""
    HEALTH_SILENT.set(silent)
    HEALTH_WATCHED.set(watched)
    HEALTH_BLIND.set(1 if blind else 0)


class BatchLike(Protocol):
    """What :func:`observe_batch` reads of ``agents.shard_runner.BatchStats``."""

    requests: int
    facts: int
    commands: int
    decide_s: float
    publish_s: float
    persist_s: float
    fact_names: list[str]
    failed_requests: int
    failed_passes: int


_lock = threading.Lock()
_sdiag = {"count": 0, "max_us": 0, "total_us": 0}


def observe_batch(shard: str, stats: BatchLike) -> None:
    """Record one applied batch of ``shard``; cheap (a few dict updates, no I/O)."""
    total = stats.decide_s + stats.publish_s + stats.persist_s
    CYCLE_SECONDS.labels(shard).observe(total)
    for phase, seconds in (("decide", stats.decide_s), ("publish", stats.publish_s),
                           ("persist", stats.persist_s)):
        PHASE_SECONDS.labels(shard, phase).observe(seconds)
    BATCH_REQUESTS.labels(shard).observe(stats.requests)
    REQUESTS.labels(shard).inc(stats.requests)
    COMMANDS.labels(shard).inc(stats.commands)
    FAILED_REQUESTS.labels(shard).inc(stats.failed_requests)
    FAILED_PASSES.labels(shard).inc(stats.failed_passes)
    counts: dict[str, int] = {}
    for name in stats.fact_names:
        counts[name] = counts.get(name, 0) + 1
    for name, count in counts.items():
        FACTS.labels(shard, name).inc(count)
    micros = int(total * 1_000_000)
    with _lock:
        _sdiag["count"] += 1
        _sdiag["total_us"] += micros
        _sdiag["max_us"] = max(_sdiag["max_us"], micros)
        SDIAG_LAST.set(micros)
        SDIAG_MAX.set(_sdiag["max_us"])
        SDIAG_TOT.set(_sdiag["total_us"])
        SDIAG_MEAN.set(_sdiag["total_us"] // _sdiag["count"])
    tracer = _cycle_tracer()
    if tracer is not None:
        tracer(shard, stats)


_tracer: list[Any] = []


def _cycle_tracer() -> Any:
    """The function that exports a cycle span, or None when tracing is off (decided once)."""
    if not _tracer:
        endpoint = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or os.environ.get(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        disabled = os.environ.get("OTEL_SDK_DISABLED", "").lower() == "true"
        _tracer.append(_make_cycle_tracer() if endpoint and not disabled else None)
    return _tracer[0]


def _make_cycle_tracer() -> Any:
    from opentelemetry import trace  # noqa: PLC0415 - only when tracing is on
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # noqa: PLC0415
        OTLPSpanExporter,
    )
    from opentelemetry.sdk.resources import Resource  # noqa: PLC0415
    from opentelemetry.sdk.trace import TracerProvider  # noqa: PLC0415
    from opentelemetry.sdk.trace.export import BatchSpanProcessor  # noqa: PLC0415

    name = os.environ.get("OTEL_SERVICE_NAME", "sluice-worker")
    provider = TracerProvider(resource=Resource.create({"service.name": name}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(), schedule_delay_millis=500))
    tracer = provider.get_tracer("sluice.scheduler")

    def export(shard: str, stats: BatchLike) -> None:
        end = time.time_ns()
        start = end - int((stats.decide_s + stats.publish_s + stats.persist_s) * 1e9)
        cycle = tracer.start_span("scheduling cycle", start_time=start, attributes={
            "sluice.shard": shard, "sluice.requests": stats.requests,
            "sluice.facts": stats.facts, "sluice.node_commands": stats.commands})
        context = trace.set_span_in_context(cycle)
        at = start
        for phase, seconds in (("decide", stats.decide_s), ("publish", stats.publish_s),
                               ("persist", stats.persist_s)):
            child = tracer.start_span(phase, context=context, start_time=at)
            at += int(seconds * 1e9)
            child.end(end_time=at)
        cycle.end(end_time=end)

    return export


def start_metrics_server(port: int, addr: str = "127.0.0.1") -> None:
    """Serve the worker's metrics on ``http://addr:port/metrics`` from a daemon thread
    (:mod:`agents.metrics_server`: bounded connections, a deadline each, no poll interval)."""
    metrics_server.serve(make_wsgi_app(REGISTRY), port, addr)
