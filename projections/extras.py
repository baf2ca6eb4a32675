"""Everything ``sluice projections`` adds to the views: metrics, notifications, traces, routes.

``cli.services`` calls :func:`mount` after building the service and its HTTP server and before
``service.run()``. In order, it

1. restores what the service does not persist itself: what the views learnt from
   ``ConfigApplied`` facts (default partition, node blocks) and the facts they hold until a
   gap in their shard's sequence is filled (the ledger's partitions
   interleave; see ``Views.apply``);
2. mounts the OpenMetrics routes (``projections.metrics``) and starts the ledger-lag monitor;
3. mounts ``/v1/partitions`` (nodes grouped by partition and state, with their blocks),
   ``/v1/history`` (every run of every job, like sacct) and ``/v1/usage`` (the runs of a
   window and the nodes' state timelines, for sreport: ``projections.usage``);
4. recovers and starts the job-start notifier (``projections.notifications``); with
   ``SLUICE_JOBCOMP=1`` it also writes Slurm jobcomp/kafka JSON;
5. when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set, exports job-lifecycle traces
   (``projections.otel``);
6. unless ``SLUICE_RELAY=0``, mounts ``POST /v1/requests`` (``projections.relay``: a
   client's request produced by the API's warm producer, answered with its decision) and
   starts its producer.

One listener is registered on the service: :class:`Dispatcher`. It runs in the service's thread
under its lock, persists held facts and configuration knowledge, and passes every fact the
views actually folded, in shard order, to metrics, notifications and traces. A metrics or trace
error is logged and ignored; a notification error (its RocksDB write) stops the service, which
then resumes from its stored positions.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Mapping
from typing import Any

from projections.exposition import Family
from projections.metrics import FactMetrics, LagMonitor, MetricsRoutes
from projections.notifications import Notifier
from projections.relay import RequestRelay
from projections.service import ProjectionService
from projections.usage import usage
from streams.admin import ensure_topics
from streams.settings import Settings
from streams.topics import Topics

__all__ = ["Dispatcher", "Extras", "mount"]

log = logging.getLogger(__name__)

_CONFIG_KEY = b"extras:views-config"
Listener = Callable[[str, dict[str, Any], int], None]


class Extras:
    """The parts :func:`mount` started, for tests and for a clean stop."""

    def __init__(self, metrics: FactMetrics, lag: LagMonitor, notifier: Notifier | None,
                 tracer: Any, relay: RequestRelay | None = None) -> None:
        self.metrics, self.lag, self.notifier, self.tracer = metrics, lag, notifier, tracer
        self.relay = relay

    def stop(self) -> None:
        """Stop the background threads."""
        self.lag.stop()
        if self.relay is not None:
            self.relay.stop()
        if self.notifier is not None:
            self.notifier.stop()


def mount(api: Any, service: ProjectionService, settings: Settings,
          env: Mapping[str, str] | None = None) -> Extras:
    """Attach metrics, notifications and traces to ``service`` and their routes to ``api``."""
    source = os.environ if env is None else env
    _restore(service)
    metrics = FactMetrics(service.views)
    lag = LagMonitor(service)
    relay = RequestRelay(service, settings) if settings.relay else None

    def extra() -> list[Family]:
        held = held_families(service.views)
        return held if relay is None else [*held, relay.refused.family()]

    MetricsRoutes(service, metrics, lag, extra=extra).mount(api)
    subscribers: list[Listener] = [_guarded("metrics", metrics.on_fact)]
    api.route("/v1/partitions", _json(service, partitions_summary))
    api.route("/v1/history", _json(service, history))
    api.route("/v1/usage", _json(service, usage))
    notifier = None
    if source.get("SLUICE_NOTIFICATIONS", "1") != "0":
        jobcomp = source.get("SLUICE_JOBCOMP", "0") == "1"
        if jobcomp:
            ensure_topics(settings.bootstrap, Topics(settings).jobcomp_catalogue(),
                          settings.replication)
        notifier = Notifier(settings, service.store, service.views, jobcomp=jobcomp)
        notifier.recover()
        subscribers.append(notifier.on_fact)
        notifier.start()
    tracer = None
    from projections.otel import enabled  # noqa: PLC0415

    if enabled(source):
        from projections.otel import JobTracer  # noqa: PLC0415

        tracer = JobTracer.from_environment(service.views)
        subscribers.append(_guarded("traces", tracer.on_fact))
    service.listeners.append(Dispatcher(service, subscribers))
    if relay is not None:
        api.post_route("/v1/requests", relay)
        relay.start()
    return Extras(metrics, lag, notifier, tracer, relay)


class Dispatcher:
    """The service listener: persists held facts, then hands on every folded fact.

    A held fact is written to the store before the service persists the positions past it. Once
    released, its key is deleted only after the service has persisted the views that include it
    (its stored ``shard_seq`` reached it); deleting earlier could lose the fact in a crash.
    """

    def __init__(self, service: ProjectionService, subscribers: list[Listener]) -> None:
        self.service, self.subscribers = service, subscribers
        self._released: list[tuple[str, int]] = []

    def __call__(self, name: str, record: dict[str, Any], timestamp_ms: int) -> None:
        views, store = self.service.views, self.service.store
        applied = list(views.applied)
        puts: dict[bytes, bytes] = {}
        if not applied:
            puts[_held_key(record)] = json.dumps([name, record]).encode()
        self._released += [(r["shard"], r["shard_seq"]) for _n, r in applied if r is not record]
        if any(n == "ConfigApplied" for n, _r in applied):
            puts[_CONFIG_KEY] = json.dumps({
                "default_partition": views.default_partition, "blocks": views.blocks,
                "private_jobs": views.private_jobs, "privileged": list(views.privileged),
            }).encode()
        deletes = self._persisted_releases() if self._released else []
        if puts or deletes:
            store.write(puts, deletes)
        for fact_name, fact in applied:
            for subscriber in self.subscribers:
                subscriber(fact_name, fact, timestamp_ms)

    def _persisted_releases(self) -> list[bytes]:
        meta = self.service.store.get(b"meta")
        stored = json.loads(meta)["shard_seq"] if meta is not None else {}
        done = [(s, q) for s, q in self._released if q <= stored.get(s, 0)]
        if done:
            self._released = [(s, q) for s, q in self._released if q > stored.get(s, 0)]
        return [_held_key({"shard": s, "shard_seq": q}) for s, q in done]


def _held_key(record: Mapping[str, Any]) -> bytes:
    return f"extras:held:{record['shard']}:{int(record['shard_seq']):020d}".encode()


def held_families(views: Any) -> list[Family]:
    """``sluice_projection_held_facts{shard}``: facts waiting for a gap in their shard."""
    family = Family("sluice_projection_held_facts",
                    "Facts received ahead of a gap in their shard's sequence, not yet applied")
    for shard, waiting in sorted(views.held.items()):
        family.add(len(waiting), (("shard", shard),))
    return [family]


def _guarded(what: str, listener: Listener) -> Listener:
    def call(name: str, record: dict[str, Any], timestamp_ms: int) -> None:
        try:
            listener(name, record, timestamp_ms)
        except Exception:
            log.exception("%s: could not apply %s", what, name)
    return call


def _restore(service: ProjectionService) -> None:
    views = service.views
    raw = service.store.get(_CONFIG_KEY)
    if raw is not None:
        saved = json.loads(raw)  # older stores also hold requeue rules: no longer needed
        views.default_partition = saved["default_partition"]
        views.blocks = dict(saved["blocks"])
        views.private_jobs = bool(saved.get("private_jobs", False))
        views.privileged = tuple(saved.get("privileged", ()))
    stale = []
    for key, value in service.store.items(b"extras:held:"):
        name, record = json.loads(value)
        if record["shard_seq"] > views.shard_seq.get(record["shard"], 0):
            views.held.setdefault(record["shard"], {})[record["shard_seq"]] = (name, record)
        else:
            stale.append(key)
    if stale:
        service.store.write({}, stale)


def _json(service: ProjectionService,
          build: Callable[[Any, Mapping[str, list[str]]], dict[str, Any]]) -> Any:
    def handle(_path: str, query: Mapping[str, list[str]]) -> tuple[int, str, bytes]:
        with service.lock:
            payload = build(service.views, query)
            payload["freshness"] = service.freshness()
        return 200, "application/json", json.dumps(payload).encode()
    return handle


def _wanted(query: Mapping[str, list[str]], key: str) -> set[str]:
    return {v for item in query.get(key, []) for v in item.split(",") if v}


def partitions_summary(views: Any, query: Mapping[str, list[str]]) -> dict[str, Any]:
    """Nodes grouped by partition and state (sinfo's default view), with their blocks."""
    wanted = _wanted(query, "partition")
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for name in sorted(views.nodes):
        node = views.nodes[name]
        for partition in node.get("partitions", []) or [""]:
            if wanted and partition not in wanted:
                continue
            group = groups.setdefault((partition, node.get("state", "UNKNOWN")),
                                      {"nodes": [], "blocks": set(), "cpus": 0, "gpus": 0})
            group["nodes"].append(name)
            if node.get("block"):
                group["blocks"].add(node["block"])
            group["cpus"] += int(node.get("cpus", 0))
            group["gpus"] += int(node.get("gpus", 0))
    rows = [{"partition": partition, "state": state, "count": len(g["nodes"]),
             "nodes": g["nodes"], "blocks": sorted(g["blocks"]), "cpus": g["cpus"],
             "gpus": g["gpus"]}
            for (partition, state), g in sorted(groups.items())]
    return {"partitions": rows, "default_partition": views.default_partition}


def history(views: Any, query: Mapping[str, list[str]]) -> dict[str, Any]:
    """Every run of every job (sacct's view); filters ``user``, ``job`` (ids or SLUIDs)."""
    users, jobs = _wanted(query, "user"), _wanted(query, "job")
    out = []
    # named jobs are looked up one by one; otherwise every job ever, one stored row at a time
    named = (views.lookup(ref) if not ref.isdigit() else views.job(ref) for ref in sorted(jobs))
    rows = ({row["job_sluid"]: row for row in named if row is not None}.values() if jobs
            else views.every_job(pausing=True))
    for job in rows:
        if users and job.get("user") not in users:
            continue
        base = {k: job.get(k) for k in ("job_id", "job_sluid", "name", "user", "account",
                                         "partition", "submit_ms")}
        if not job.get("runs"):
            out.append({**base, "run_sluid": "", "state": job.get("state"), "start_ms": 0,
                        "end_ms": job.get("end_ms", 0), "exit_code": job.get("exit_code", 0),
                        "nodes": []})
        for run in job.get("runs", []):
            out.append({**base, **run})
    out.sort(key=lambda r: (r.get("job_id") or 0, r.get("start_ms") or 0))
    return {"runs": out}
