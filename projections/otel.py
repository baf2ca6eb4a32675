"""OpenTelemetry traces of job lifecycles, built from ledger facts.

Every job is one trace whose id is derived from the job SLUID (the first 16 bytes of
``sha256("sluice-job:" + job_sluid)``), so any process (a client, the projection, a consumer of
the job-start notifications) names the same trace without passing state around; a requeued
job's runs land in the same trace. Spans, all with explicit times taken from the facts:

| span | from → to | parent |
|---|---|---|
| ``job <id>`` | JobQueued → the final JobEnded (or JobRejected) | root |
| ``queued`` | JobQueued → first JobStarted; pending reasons as events | job |
| ``requeued`` | first sign of a run's failure → the next JobStarted | job |
| ``run <n>`` | JobStarted → JobEnded of that run | job |

Span ids are derived the same way (``run`` from the run SLUID), so a fact applied twice (after a
restart) re-exports an identical span that a backend can drop. A run's end is final unless the
core will requeue the job (the ``JobEnded`` says so: ``job_state`` COMPLETING with its
``requeue_reason``; the views mark such a run); the job span then ends with a later run.
Spans are exported when they end, which is when the fact that ends them is applied. The W3C
``traceparent`` of a run is put in the headers of its job-start notification
(:func:`traceparent`).

Export uses OTLP over HTTP when ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or the traces-specific
variable) is set; otherwise :func:`enabled` is False, no listener is registered and the SDK is
not even imported.
"""

from __future__ import annotations

import contextvars
import hashlib
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["JobTracer", "enabled", "make_provider", "span_id_of", "trace_id_of", "traceparent"]

log = logging.getLogger(__name__)

_ENDPOINT_VARS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
_MAX_OPEN_JOBS = 200_000


def enabled(env: Mapping[str, str] | None = None) -> bool:
    """True when an OTLP endpoint is configured and the SDK is not disabled."""
    source = os.environ if env is None else env
    if source.get("OTEL_SDK_DISABLED", "").lower() == "true":
        return False
    return any(source.get(name) for name in _ENDPOINT_VARS)


def _digest(text: str, size: int) -> int:
    value = int.from_bytes(hashlib.sha256(text.encode()).digest()[:size], "big")
    return value or 1


def trace_id_of(job_sluid: str) -> int:
    """The 128-bit trace id of a job."""
    return _digest(f"sluice-job:{job_sluid}", 16)


def span_id_of(kind: str, sluid: str) -> int:
    """The 64-bit span id of a job's span of ``kind`` (``job``, ``queued``…) or of a run."""
    return _digest(f"sluice-{kind}:{sluid}", 8)


def traceparent(job_sluid: str, run_sluid: str = "") -> str:
    """The W3C traceparent of a job's run span (or of its job span without ``run_sluid``)."""
    span = span_id_of("run", run_sluid) if run_sluid else span_id_of("job", job_sluid)
    return f"00-{trace_id_of(job_sluid):032x}-{span:016x}-01"


def _ns(ms: int) -> int:
    return int(ms) * 1_000_000


class JobTracer:
    """A projection-service listener that exports the spans of every job's lifecycle."""

    def __init__(self, views: Any, tracer: Any) -> None:
        from opentelemetry import trace  # noqa: PLC0415 - only when tracing is on

        self._trace = trace
        self.views = views
        self.tracer = tracer
        self._reasons: dict[str, list[tuple[int, str]]] = {}
        self._failed_ms: dict[str, int] = {}

    @classmethod
    def from_environment(cls, views: Any, service_name: str = "sluice-projections") -> JobTracer:
        """A tracer exporting by OTLP/HTTP to the endpoint of the environment."""
        return cls(views, make_provider(service_name).get_tracer("sluice"))

    def on_fact(self, name: str, record: dict[str, Any], _timestamp_ms: int) -> None:
        """Export the spans ``record`` ends (called under the service lock, after the views)."""
        handler = _HANDLERS.get(name)
        try:
            if handler is not None:
                handler(self, record)
        except Exception:  # tracing must never stop the views
            log.exception("otel: could not trace %s", name)

    # -- spans ------------------------------------------------------------------------------

    def _span(self, job: str, kind: str, sluid: str, name: str, start_ms: int, end_ms: int,
              attributes: dict[str, Any], events: Sequence[tuple[int, str]] = (),
              error: str = "") -> None:
        trace = self._trace
        trace_id = trace_id_of(job)
        _NEXT_IDS.set((trace_id, span_id_of(kind, sluid)))
        try:
            if kind == "job":
                context = None
            else:
                parent = trace.SpanContext(trace_id, span_id_of("job", job), is_remote=True,
                                           trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED))
                context = trace.set_span_in_context(trace.NonRecordingSpan(parent))
            span = self.tracer.start_span(name, context=context, attributes=attributes,
                                          start_time=_ns(start_ms))
            for at_ms, text in events:
                span.add_event(text, timestamp=_ns(at_ms))
            if error:
                span.set_status(trace.Status(trace.StatusCode.ERROR, error))
            span.end(end_time=_ns(max(end_ms, start_ms)))
        finally:
            _NEXT_IDS.set(None)

    def _job_attributes(self, job: str) -> dict[str, Any]:
        row = self.views.jobs.get(job) or {}
        return {"sluice.job_sluid": job, "slurm.job_id": int(row.get("job_id") or 0),
                "sluice.user": str(row.get("user", "")),
                "sluice.partition": str(row.get("partition", "")),
                "sluice.job_name": str(row.get("name", ""))}

    def _on_pending(self, r: Mapping[str, Any]) -> None:
        job = str(r["job_sluid"])
        if len(self._reasons) < _MAX_OPEN_JOBS or job in self._reasons:
            self._reasons.setdefault(job, []).append((int(r["time_ms"]), f"pending: {r['reason']}"))

    def _on_started(self, r: Mapping[str, Any]) -> None:
        job, start = str(r["job_sluid"]), int(r["time_ms"])
        attributes = {**self._job_attributes(job), "sluice.run_sluid": str(r["run_sluid"])}
        if int(r.get("restart_count", 0)) == 0:
            self._span(job, "queued", job, "queued", int(r.get("submit_ms") or start), start,
                       attributes, self._reasons.pop(job, []))
        else:
            failed = self._failed_ms.pop(job, None)
            if failed is not None:
                self._span(job, "requeued", str(r["run_sluid"]), "requeued", failed, start,
                           attributes, self._reasons.pop(job, []))

    def _on_kill(self, r: Mapping[str, Any]) -> None:
        if r.get("reason") == "NODE_FAIL":
            self._failed_ms.setdefault(str(r["job_sluid"]), int(r["time_ms"]))

    def _on_requeue(self, r: Mapping[str, Any]) -> None:
        self._failed_ms.setdefault(str(r["job_sluid"]), int(r["time_ms"]))

    @staticmethod
    def _requeue_follows(row: Mapping[str, Any], r: Mapping[str, Any]) -> bool:
        """Whether the core will requeue the job after this end: the job's trace then goes on,
        and its span ends with a later run. The views, which have folded the fact already,
        mark such a run with the requeue it leads to (the fact's ``requeue_reason``)."""
        return any(run["run_sluid"] == r.get("run_sluid") and run.get("requeue_reason")
                   for run in row.get("runs", []))

    def _on_ended(self, r: Mapping[str, Any]) -> None:
        job, end = str(r["job_sluid"]), int(r["time_ms"])
        row = self.views.jobs.get(job) or {}
        state = str(r.get("state", ""))
        attributes = {**self._job_attributes(job), "sluice.state": state,
                      "sluice.exit_code": int(r.get("exit_code", 0))}
        run = next((x for x in row.get("runs", []) if x["run_sluid"] == r.get("run_sluid")), None)
        if run is not None:
            self._span(job, "run", run["run_sluid"], f"run {run.get('restart_count', 0)}",
                       int(run["start_ms"]), end,
                       {**attributes, "sluice.run_sluid": run["run_sluid"],
                        "sluice.nodes": ",".join(run.get("nodes", []))},
                       error="" if state == "COMPLETED" else state)
        if state != "COMPLETED":
            self._failed_ms.setdefault(job, end)
        if r.get("run_sluid") and self._requeue_follows(row, r):
            return
        self._reasons.pop(job, None)
        self._failed_ms.pop(job, None)
        self._span(job, "job", job, f"job {row.get('job_id', '')}",
                   int(row.get("submit_ms") or end), end, attributes,
                   error="" if state == "COMPLETED" else state)

    def _on_rejected(self, r: Mapping[str, Any]) -> None:
        job = str(r["job_sluid"])
        self._span(job, "job", job, "job rejected", int(r["time_ms"]), int(r["time_ms"]),
                   {"sluice.job_sluid": job, "sluice.reason": str(r.get("reason", ""))},
                   error=str(r.get("reason", "")))


_HANDLERS: dict[str, Callable[[JobTracer, Mapping[str, Any]], None]] = {
    "JobPending": JobTracer._on_pending,
    "JobStarted": JobTracer._on_started,
    "RunKillRequested": JobTracer._on_kill,
    "JobEnded": JobTracer._on_ended,
    "JobRequeued": JobTracer._on_requeue,
    "JobRejected": JobTracer._on_rejected,
}

_NEXT_IDS: contextvars.ContextVar[tuple[int, int] | None] = contextvars.ContextVar(
    "sluice_next_ids", default=None)


def make_provider(service_name: str, exporter: Any = None) -> Any:
    """A tracer provider with derived ids, exporting in batches by OTLP/HTTP (or ``exporter``)."""
    from opentelemetry.sdk.resources import Resource  # noqa: PLC0415
    from opentelemetry.sdk.trace import TracerProvider  # noqa: PLC0415
    from opentelemetry.sdk.trace.export import BatchSpanProcessor  # noqa: PLC0415
    from opentelemetry.sdk.trace.id_generator import RandomIdGenerator  # noqa: PLC0415

    class DerivedIds(RandomIdGenerator):
        """Random ids, except for the span being started by :class:`JobTracer`."""

        def generate_trace_id(self) -> int:
            fixed = _NEXT_IDS.get()
            return fixed[0] if fixed else super().generate_trace_id()

        def generate_span_id(self) -> int:
            fixed = _NEXT_IDS.get()
            return fixed[1] if fixed else super().generate_span_id()

    if exporter is None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # noqa: PLC0415
            OTLPSpanExporter,
        )

        exporter = OTLPSpanExporter()
    name = os.environ.get("OTEL_SERVICE_NAME", service_name)
    provider = TracerProvider(resource=Resource.create({"service.name": name}),
                              id_generator=DerivedIds())
    provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=500))
    return provider
