"""Everything ``sluice projections`` adds to the views: metrics, notifications, traces, routes.

``cli.services`` calls :func:`mount` after building the service and its HTTP server and before
``service.run()``. In order, it

1. restores what the views learnt from configurations (default partition, node blocks), which
   the service does not persist itself, and keeps it up to date;
2. mounts the OpenMetrics routes (``projections.metrics``) and starts the ledger-lag monitor;
3. mounts ``/v1/partitions`` (nodes grouped by partition and state, with their blocks) and
   ``/v1/history`` (every run of every job, like sacct);
4. recovers and starts the job-start notifier (``projections.notifications``); with
   ``SLUICE_JOBCOMP=1`` it also writes Slurm jobcomp/kafka JSON;
5. when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set, exports job-lifecycle traces
   (``projections.otel``).

Listeners run in the service's thread under its lock, in this order: the config keeper,
metrics, notifications, traces. A metrics or trace error is logged and ignored; a notification
error (its RocksDB write) stops the service, which then resumes from its stored positions.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Mapping
from typing import Any

from projections.metrics import FactMetrics, LagMonitor, MetricsRoutes
from projections.notifications import Notifier
from projections.service import ProjectionService
from streams.admin import ensure_topics
from streams.settings import Settings
from streams.topics import Topics

__all__ = ["Extras", "mount"]

log = logging.getLogger(__name__)

_CONFIG_KEY = b"extras:views-config"
Listener = Callable[[str, dict[str, Any], int], None]


class Extras:
    """The parts :func:`mount` started, for tests and for a clean stop."""

    def __init__(self, metrics: FactMetrics, lag: LagMonitor, notifier: Notifier | None,
                 tracer: Any) -> None:
        self.metrics, self.lag, self.notifier, self.tracer = metrics, lag, notifier, tracer

    def stop(self) -> None:
        """Stop the background threads."""
        self.lag.stop()
        if self.notifier is not None:
            self.notifier.stop()


def mount(api: Any, service: ProjectionService, settings: Settings,
          env: Mapping[str, str] | None = None) -> Extras:
    """Attach metrics, notifications and traces to ``service`` and their routes to ``api``."""
    source = os.environ if env is None else env
    _keep_config(service)
    metrics = FactMetrics(service.views)
    lag = LagMonitor(service)
    MetricsRoutes(service, metrics, lag).mount(api)
    service.listeners.append(_guarded("metrics", metrics.on_fact))
    api.route("/v1/partitions", _json(service, partitions_summary))
    api.route("/v1/history", _json(service, history))
    lag.start()
    notifier = None
    if source.get("SLUICE_NOTIFICATIONS", "1") != "0":
        jobcomp = source.get("SLUICE_JOBCOMP", "0") == "1"
        if jobcomp:
            ensure_topics(settings.bootstrap, Topics(settings).jobcomp_catalogue(),
                          settings.replication)
        notifier = Notifier(settings, service.store, service.views, jobcomp=jobcomp)
        notifier.recover()
        service.listeners.append(notifier.on_fact)
        notifier.start()
    tracer = None
    from projections.otel import enabled  # noqa: PLC0415

    if enabled(source):
        from projections.otel import JobTracer  # noqa: PLC0415

        tracer = JobTracer.from_environment(service.views)
        service.listeners.append(tracer.on_fact)
    return Extras(metrics, lag, notifier, tracer)


def _guarded(what: str, listener: Listener) -> Listener:
    def call(name: str, record: dict[str, Any], timestamp_ms: int) -> None:
        try:
            listener(name, record, timestamp_ms)
        except Exception:
            log.exception("%s: could not apply %s", what, name)
    return call


def _keep_config(service: ProjectionService) -> None:
    raw = service.store.get(_CONFIG_KEY)
    if raw is not None:
        saved = json.loads(raw)
        service.views.default_partition = saved["default_partition"]
        service.views.blocks = dict(saved["blocks"])

    def keep(name: str, _record: dict[str, Any], _ts: int) -> None:
        if name == "ConfigApplied":
            service.store.write({_CONFIG_KEY: json.dumps({
                "default_partition": service.views.default_partition,
                "blocks": service.views.blocks}).encode()})

    service.listeners.append(keep)


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
    for job in views.jobs.values():
        if users and job.get("user") not in users:
            continue
        if jobs and job.get("job_sluid") not in jobs and str(job.get("job_id")) not in jobs:
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
