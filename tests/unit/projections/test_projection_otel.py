"""Job lifecycle traces: one trace per job, a span per run, ids derived from SLUIDs."""

from __future__ import annotations

from typing import Any

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from projections.otel import JobTracer, enabled, make_provider, span_id_of, trace_id_of, traceparent
from projections.views import Views
from tests.unit.projections.ledger_builder import LedgerBuilder


def traced(builder: LedgerBuilder) -> list[Any]:
    exporter = InMemorySpanExporter()
    provider = make_provider("test", exporter)
    views = Views()
    tracer = JobTracer(views, provider.get_tracer("test"))
    for name, record in builder.facts:
        if views.apply(name, record) is not None:
            tracer.on_fact(name, record, builder.now_ms)
    provider.force_flush()
    return list(exporter.get_finished_spans())


def test_tracing_is_off_without_an_otlp_endpoint() -> None:
    assert not enabled({})
    assert enabled({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"})
    assert not enabled({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_SDK_DISABLED": "true"})


def test_a_job_is_one_trace_with_queued_and_run_spans_under_the_job_span() -> None:
    b = LedgerBuilder()
    b.node("n1")
    job = b.queued(name="train")
    b.pending(job, "Resources")
    b.advance(4_000)
    run = b.started(job, ["n1"])
    b.advance(60_000)
    b.ended(job, run, "COMPLETED")

    spans = {s.name: s for s in traced(b)}

    assert set(spans) == {"queued", "run 0", "job 1"}
    root = spans["job 1"]
    assert root.context.trace_id == trace_id_of(job)
    assert root.context.span_id == span_id_of("job", job)
    assert root.parent is None
    for child in ("queued", "run 0"):
        assert spans[child].context.trace_id == trace_id_of(job)
        assert spans[child].parent.span_id == root.context.span_id
    assert spans["run 0"].context.span_id == span_id_of("run", run)
    assert (spans["queued"].end_time - spans["queued"].start_time) == 4_000 * 1_000_000
    assert (root.end_time - root.start_time) == 64_000 * 1_000_000
    assert [e.name for e in spans["queued"].events] == ["pending: Resources"]
    assert traceparent(job, run) == f"00-{trace_id_of(job):032x}-{span_id_of('run', run):016x}-01"


def test_a_failed_run_is_an_error_span() -> None:
    b = LedgerBuilder()
    b.node("n1")
    job = b.queued()
    run = b.started(job, ["n1"])
    b.advance(1_000)
    b.ended(job, run, "FAILED", exit_code=2)

    spans = {s.name: s for s in traced(b)}

    assert spans["run 0"].status.status_code.name == "ERROR"
    assert spans["run 0"].attributes["sluice.exit_code"] == 2
