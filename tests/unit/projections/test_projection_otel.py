"""Job lifecycle traces: one trace per job, a span per run, ids derived from SLUIDs."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest
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


def test_a_requeued_job_is_one_trace_whose_job_span_ends_with_its_last_run() -> None:
    b = LedgerBuilder()
    b.node("n1")
    b.node("n2")
    job = b.queued(requeue="expedite")
    first = b.started(job, ["n1"])
    b.advance(5_000)
    b.kill(job, first, "NODE_FAIL", ["n1"])
    b.ended(job, first, "NODE_FAIL")
    b.expediting(job, first)
    b.requeued(job, first, expedite=True)
    b.advance(1_000)
    second = b.started(job, ["n2"], restart_count=1)
    b.advance(2_000)
    b.ended(job, second, "COMPLETED")

    spans = traced(b)
    names = sorted(s.name for s in spans)

    assert names == ["job 1", "queued", "requeued", "run 0", "run 1"]
    assert {s.context.trace_id for s in spans} == {trace_id_of(job)}
    root = next(s for s in spans if s.name == "job 1")
    assert root.status.status_code.name == "UNSET"
    assert (root.end_time - root.start_time) == 8_000 * 1_000_000
    requeued = next(s for s in spans if s.name == "requeued")
    assert (requeued.end_time - requeued.start_time) == 1_000 * 1_000_000


def test_a_run_requeued_by_its_exit_code_does_not_end_the_job_span() -> None:
    b = LedgerBuilder()
    b.config("cluster", "RequeueExit: 3\n")
    b.node("n1")
    job = b.queued()
    first = b.started(job, ["n1"])
    b.advance(5_000)
    b.ended(job, first, "FAILED", exit_code=3)
    b.epilog(job, first, "n1")
    b.requeued(job, first, "REQUEUE_EXIT", begin_time_ms=b.now_ms + 121_000)
    b.advance(121_000)
    second = b.started(job, ["n1"], restart_count=1)
    b.advance(2_000)
    b.ended(job, second, "COMPLETED")

    spans = traced(b)

    assert sorted(s.name for s in spans) == ["job 1", "queued", "requeued", "run 0", "run 1"]
    root = next(s for s in spans if s.name == "job 1")
    assert (root.end_time - root.start_time) == 128_000 * 1_000_000


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


class OtlpReceiver:
    """A minimal OTLP/HTTP trace receiver on a free loopback port."""

    def __init__(self) -> None:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )

        self.spans: list[Any] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                for resource in request.resource_spans:
                    service = next(a.value.string_value for a in resource.resource.attributes
                                   if a.key == "service.name")
                    for scope in resource.scope_spans:
                        receiver.spans += [(service, s) for s in scope.spans]
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.end_headers()

            def log_message(self, *_: Any) -> None:
                return

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_spans_are_exported_by_otlp_http_to_the_configured_endpoint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    receiver = OtlpReceiver()
    try:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        b = LedgerBuilder()
        b.node("n1")
        job = b.queued()
        run = b.started(job, ["n1"])
        b.advance(1_000)
        b.ended(job, run, "COMPLETED")
        views = Views()
        provider = make_provider("sluice-projections")
        tracer = JobTracer(views, provider.get_tracer("sluice"))
        for name, record in b.facts:
            if views.apply(name, record) is not None:
                tracer.on_fact(name, record, 0)
        provider.force_flush()

        import agents.metrics as worker_metrics
        from agents.shard_runner import BatchStats

        monkeypatch.setattr(worker_metrics, "_tracer", [])
        worker_metrics.observe_batch("c1", BatchStats(requests=2, facts=3, decide_s=0.001,
                                                      publish_s=0.004, persist_s=0.001))
        assert worker_metrics._tracer[0] is not None, "tracing is on with an endpoint"
        deadline = time.monotonic() + 10
        while len(receiver.spans) < 7 and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        receiver.stop()

    names = sorted((service, span.name) for service, span in receiver.spans)
    assert ("sluice-projections", "job 1") in names and ("sluice-projections", "run 0") in names
    assert ("sluice-worker", "scheduling cycle") in names
    assert {n for s, n in names if s == "sluice-worker"} == {
        "scheduling cycle", "decide", "publish", "persist"}
    job_span = next(s for _, s in receiver.spans if s.name == "job 1")
    assert int.from_bytes(job_span.trace_id, "big") == trace_id_of(job)
