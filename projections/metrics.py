"""The OpenMetrics exporter of the projections: Slurm's routes and names, plus ``sluice_*``.

Routes (mounted on the views' HTTP server by ``projections.extras``):

- ``/metrics/jobs``, ``/metrics/nodes``, ``/metrics/partitions``, ``/metrics/jobs-users-accts``:
  exactly Slurm 25.11's families (``projections.slurm_metrics``);
- ``/metrics/scheduler``: the sdiag families the ledger can tell (cycle count and depth, queue
  length, job counters since start); cycle times come from the worker (``agents.metrics``);
- ``/metrics/sluice``: Sluice's own (ledger lag per partition, facts, latencies, queue, blocks);
- ``/metrics``: all of the above but ``jobs-users-accts`` (Slurm serves an index there; one
  scrape is simpler, and every name and label is the same);
- ``/livez``, ``/healthz``, ``/readyz``: probes; ``/readyz`` is 503 until the views caught up.

Gauges are computed from the views when scraped, under the service lock. Counters and
histograms are fed by :meth:`FactMetrics.on_fact`, a listener of the projection service called
once per newly applied fact, so after a restart they count from zero (Prometheus handles the
reset), and a ``--rebuild`` counts the whole ledger again. Latencies come from the facts' own
times (decision times), never from when the projection saw them, so a rebuild observes the same
values a live run did.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import KafkaError, TopicPartition

from agents.group_watch import GroupWatch, close_in_background, rejoin_limit_s
from projections.exposition import CONTENT_TYPE, Counter, Family, Histogram, gauge, render
from projections.service import ProjectionService
from projections.slurm_metrics import (
    Snapshot,
    jobs_families,
    nodes_families,
    partitions_families,
    users_accounts_families,
)
from projections.views import Views
from streams.clients import consumer
from streams.state_dir import FULL, READ_ONLY, alarm

__all__ = ["FactMetrics", "LagMonitor", "MetricsRoutes"]

log = logging.getLogger(__name__)

LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200,
                   21600, 86400)
APPLY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
_FAILED_ENDS = frozenset({"FAILED", "NODE_FAIL", "TIMEOUT", "BOOT_FAIL", "OUT_OF_MEMORY",
                          "DEADLINE", "PREEMPTED"})
_MAX_TRACKED_FAILURES = 100_000
Response = tuple[int, str, bytes]


class FactMetrics:
    """Counters and histograms fed by ledger facts (a projection-service listener)."""

    def __init__(self, views: Views, clock: Callable[[], float] = time.time) -> None:
        self.views = views
        self.clock = clock
        self.facts = Counter("sluice_ledger_facts_total",
                             "Facts applied by the projections, by shard and fact type",
                             ("shard", "fact"))
        self.queue_wait = Histogram(
            "sluice_job_queue_wait_seconds",
            "Submit to first start of a job (decision times), by partition",
            LATENCY_BUCKETS, ("partition",))
        self.restart_latency = Histogram(
            "sluice_job_restart_latency_seconds",
            "First sign of a run's failure to the start of the next run, by partition and "
            "whether the requeue was expedited", LATENCY_BUCKETS, ("partition", "expedited"))
        self.apply_delay = Histogram(
            "sluice_projection_apply_delay_seconds",
            "Time from a fact's write to the ledger to its application in the views",
            APPLY_BUCKETS)
        self.job_ends = Counter("sluice_job_ends_total", "Runs that ended, by partition and state",
                                ("partition", "state"))
        self.requeues = Counter("sluice_job_requeues_total",
                                "Runs restarted after a failure, by partition and expedited",
                                ("partition", "expedited"))
        self.cycles = Counter("sluice_scheduling_cycles_total",
                              "Scheduling cycles that wrote facts (CycleCompleted), by shard",
                              ("shard",))
        self.cycle_requests = Counter(
            "sluice_scheduling_cycle_requests_total",
            "Inbox records decided in cycles that wrote facts, by shard", ("shard",))
        self.sdiag: dict[str, int] = dict.fromkeys(
            ("submitted", "started", "completed", "canceled", "failed"), 0)
        self.last_cycle: dict[str, dict[str, int]] = {}
        self._failure_ms: dict[str, int] = {}
        self._expedited: dict[str, None] = {}
        """Jobs whose pending requeue was expedited (oldest first, at most the cap)."""

    def on_fact(self, name: str, record: dict[str, Any], timestamp_ms: int) -> None:
        """Count one newly applied fact (called under the service lock, after the views)."""
        shard = str(record.get("shard", ""))
        self.facts.inc(shard, name)
        if timestamp_ms > 0:
            self.apply_delay.observe(max(self.clock() - timestamp_ms / 1000, 0.0))
        handler = _FACT_HANDLERS.get(name)
        if handler is not None:
            handler(self, record)

    def _partition(self, job_sluid: str) -> str:
        job = self.views.jobs.get(job_sluid)
        return str(job.get("partition", "")) if job else ""

    def _failed(self, record: Mapping[str, Any], expedited: bool = False) -> None:
        job = str(record.get("job_sluid", ""))
        if not job:
            return
        if expedited:
            if job not in self._expedited and len(self._expedited) >= _MAX_TRACKED_FAILURES:
                self._expedited.pop(next(iter(self._expedited)))
            self._expedited[job] = None
        if job not in self._failure_ms:
            if len(self._failure_ms) >= _MAX_TRACKED_FAILURES:
                self._failure_ms.pop(next(iter(self._failure_ms)))
            self._failure_ms[job] = int(record.get("time_ms", 0))

    def _job_queued(self, record: Mapping[str, Any]) -> None:
        self.sdiag["submitted"] += 1

    def _job_started(self, record: Mapping[str, Any]) -> None:
        self.sdiag["started"] += 1
        job, partition = str(record["job_sluid"]), str(record.get("partition", ""))
        start = int(record["time_ms"])
        if int(record.get("restart_count", 0)) == 0:
            submit = int(record.get("submit_ms") or start)
            self.queue_wait.observe(max(start - submit, 0) / 1000, partition)
            return
        failed = self._failure_ms.pop(job, None)
        expedited = "true" if job in self._expedited else "false"
        self._expedited.pop(job, None)
        self.requeues.inc(partition, expedited)
        if failed is not None:
            self.restart_latency.observe(max(start - failed, 0) / 1000, partition, expedited)

    def _run_kill_requested(self, record: Mapping[str, Any]) -> None:
        if record.get("reason") == "NODE_FAIL":
            self._failed(record)

    def _job_ended(self, record: Mapping[str, Any]) -> None:
        state = str(record.get("state", ""))
        if record.get("run_sluid"):
            self.job_ends.inc(self._partition(str(record["job_sluid"])), state)
        if state == "COMPLETED":
            self.sdiag["completed"] += 1
        elif state == "CANCELLED":
            self.sdiag["canceled"] += 1
        else:
            self.sdiag["failed"] += 1
        if state in _FAILED_ENDS:
            self._failed(record)

    def _job_expediting(self, record: Mapping[str, Any]) -> None:
        self._failed(record, expedited=True)

    def _job_requeued(self, record: Mapping[str, Any]) -> None:
        self._failed(record, expedited=bool(record.get("expedite")))

    def _cycle_completed(self, record: Mapping[str, Any]) -> None:
        shard = str(record.get("shard", ""))
        self.cycles.inc(shard)
        requests = int(record.get("inbox_to", 0)) - int(record.get("inbox_from", 0)) + 1
        self.cycle_requests.inc(shard, amount=max(requests, 0))
        self.last_cycle[shard] = {
            "pending": int(record.get("pending", 0)), "running": int(record.get("running", 0)),
            "started": int(record.get("started", 0)), "time_ms": int(record.get("time_ms", 0)),
        }

    def families(self) -> list[Family]:
        """The fact-fed ``sluice_*`` families."""
        return [self.facts.family(), self.queue_wait.family(), self.restart_latency.family(),
                self.apply_delay.family(), self.job_ends.family(), self.requeues.family(),
                self.cycles.family(), self.cycle_requests.family()]

    def scheduler_families(self) -> list[Family]:
        """Slurm's ``/metrics/scheduler`` families the ledger can tell."""
        cycles = int(sum(self.cycles.value(shard) for shard in self.last_cycle))
        depth = int(sum(self.cycle_requests.value(shard) for shard in self.last_cycle))
        last = self.last_cycle.values()
        return [
            gauge("slurm_schedule_cycle_cnt", "Scheduling cycle count", cycles),
            gauge("slurm_schedule_cycle_depth", "Processed jobs depth total", depth),
            gauge("slurm_sched_mean_depth_cycle", "Mean depth of scheduling cycles",
                  depth // cycles if cycles else 0),
            gauge("slurm_schedule_queue_len", "Jobs pending queue length",
                  sum(c["pending"] for c in last)),
            gauge("slurm_sdiag_jobs_submitted", "Jobs submitted since reset",
                  self.sdiag["submitted"]),
            gauge("slurm_sdiag_jobs_started", "Jobs started since reset", self.sdiag["started"]),
            gauge("slurm_sdiag_jobs_completed", "Jobs completed since reset",
                  self.sdiag["completed"]),
            gauge("slurm_sdiag_jobs_canceled", "Jobs canceled since reset",
                  self.sdiag["canceled"]),
            gauge("slurm_sdiag_jobs_failed", "Jobs failed since reset", self.sdiag["failed"]),
            gauge("slurm_sdiag_jobs_pending", "Jobs pending at timestamp",
                  sum(c["pending"] for c in last)),
            gauge("slurm_sdiag_jobs_running", "Jobs running at timestamp",
                  sum(c["running"] for c in last)),
            gauge("slurm_sdiag_job_states_ts", "Job states timestamp",
                  max((c["time_ms"] for c in last), default=0) // 1000),
            gauge("slurm_sched_stats_timestamp", "Statistics snapshot timestamp",
                  int(self.clock())),
        ]


_FACT_HANDLERS: dict[str, Callable[[FactMetrics, Mapping[str, Any]], None]] = {
    "JobQueued": FactMetrics._job_queued,
    "JobStarted": FactMetrics._job_started,
    "RunKillRequested": FactMetrics._run_kill_requested,
    "JobEnded": FactMetrics._job_ended,
    "JobExpediting": FactMetrics._job_expediting,
    "JobRequeued": FactMetrics._job_requeued,
    "CycleCompleted": FactMetrics._cycle_completed,
}


class LagMonitor:
    """Measures how far the views are behind the ledger, per ledger partition, when a scrape
    asks (:attr:`lag`), at most once every ``interval_s`` (a younger measurement is served
    again). Nothing else reads it: a thread that measured every 5 s cost an idle views process
    ~10 wake-ups and ~1.5 ms of CPU a second in its own and its consumer's threads (a metadata
    request, a ``ListOffsets`` a partition and, at a transaction marker, a 0.2 s read), and
    a scrape comes every 15 to 60 s (issue 17). The consumer is made at the first scrape.

    Lag = the partition's last stable offset minus the next offset the views will apply. Each
    committed transaction leaves a control marker that takes an offset but is never delivered,
    so a small raw lag is checked by reading at the views' position: only delivered records
    count.

    A consumer librdkafka has cut off for good (confluentinc/librdkafka#5301, after a broker
    stall; ``agents.group_watch``) fails every measurement, and the lag gauges kept their last
    value for as long as the views ran. When measurements have failed for
    ``SLUICE_WORKER_REJOIN_TIMEOUT`` (60 s) while the broker answers a new client, the consumer
    is replaced.
    """

    def __init__(self, service: ProjectionService, interval_s: float = 5.0,
                 clock: Callable[[], float] = time.monotonic,
                 watch: GroupWatch | None = None) -> None:
        self.service = service
        self.interval_s = interval_s
        self._clock = clock
        self._watch = watch or GroupWatch("lag monitor", service.settings.bootstrap,
                                          rejoin_limit_s(), symptom="its measurements failing")
        self._lag: dict[int, int] = {}
        self._measured_at: float | None = None
        self._reader: Any = None
        self._stopped = False
        self._lock = threading.Lock()

    @property
    def lag(self) -> dict[int, int]:
        """Every ledger partition's lag, measured now unless measured within ``interval_s``
        (the last measurement while the broker does not answer). Never call it holding the
        views' lock: :meth:`measure_now` first, then read :attr:`last`."""
        return self.measure_now()

    @property
    def last(self) -> dict[int, int]:
        """The last measurement, without asking the broker."""
        return self._lag

    def measure_now(self) -> dict[int, int]:
        """:attr:`lag`'s measurement (at most one an ``interval_s``)."""
        with self._lock:
            now = self._clock()
            if self._stopped or (self._measured_at is not None
                                 and now - self._measured_at < self.interval_s):
                return self._lag
            self._measured_at = now
            try:
                if self._reader is None:
                    self._reader = consumer(self.service.settings.bootstrap)
                self._lag = self.measure(self._reader, self.service.topics.events)
            except Exception as exc:  # the broker may be restarting; try again later
                log.debug("lag monitor: %s", exc)
                if self._reader is not None and self._watch.lasting(True):
                    close_in_background(self._reader, self._watch.what)
                    self._reader = None  # a new one at the next measurement
            else:
                self._watch.lasting(False)
            return self._lag

    def stop(self) -> None:
        """Close the consumer; :attr:`lag` measures no more."""
        with self._lock:
            self._stopped = True
            if self._reader is not None:
                self._reader.close()
                self._reader = None

    def measure(self, reader: Any, topic: str) -> dict[int, int]:
        """One measurement of every partition's lag."""
        partitions = sorted(reader.list_topics(topic, timeout=5).topics[topic].partitions)
        with self.service.lock:
            applied = dict(self.service.positions)
        out = {}
        for p in partitions:
            _low, high = reader.get_watermark_offsets(TopicPartition(topic, p), timeout=5,
                                                      cached=False)
            position = applied.get(p, 0)
            raw = max(high - position, 0)
            out[p] = raw if raw == 0 or raw > 2 else self._delivered(reader, topic, p, position)
        return out

    @staticmethod
    def _delivered(reader: Any, topic: str, partition: int, position: int) -> int:
        """How many records a read-committed reader gets from ``position`` (at most 2)."""
        reader.assign([TopicPartition(topic, partition, position)])
        count = 0
        for message in reader.consume(num_messages=2, timeout=0.2):
            error = message.error()
            if error is None:
                count += 1
            elif error.code() != KafkaError._PARTITION_EOF:
                log.debug("lag monitor read: %s", error)
        reader.unassign()
        return count


class MetricsRoutes:
    """Renders every route of the exporter from one service's views and listeners."""

    def __init__(self, service: ProjectionService, facts: FactMetrics,
                 lag: LagMonitor | None = None,
                 extra: Callable[[], list[Family]] | None = None) -> None:
        self.service, self.facts, self.lag = service, facts, lag
        self.extra = extra

    def mount(self, api: Any) -> None:
        """Mount every route on ``api`` (an ``ApiServer``)."""
        sections: dict[str, Callable[[], list[Family]]] = {
            "/metrics/jobs": lambda: jobs_families(self.service.views),
            "/metrics/nodes": lambda: nodes_families(self.service.views),
            "/metrics/partitions": lambda: partitions_families(self.service.views),
            "/metrics/jobs-users-accts": lambda: users_accounts_families(self.service.views),
            "/metrics/scheduler": self.facts.scheduler_families,
        }
        for path, build in sections.items():
            api.route(path, self._handler(build))
        api.route("/metrics/sluice", self._handler(self.sluice_families, lag=True))
        api.route("/metrics", self._handler(self.all_families, lag=True))
        for probe in ("/livez", "/healthz"):
            api.route(probe, lambda _p, _q: (200, "text/plain", b"ok\n"))
        api.route("/readyz", self._ready)

    def _handler(self, build: Callable[[], list[Family]], *,
                 lag: bool = False) -> Callable[..., Response]:
        """A route rendering ``build()`` under the views' lock. A route that shows the ledger
        lag has it measured first, outside that lock: the measurement asks the broker (a
        metadata request, a ``ListOffsets`` and up to a 0.2 s read a partition, timeouts of
        5 s), and under the lock it held every API answer, every decision's wait and the
        ledger's folding for 2.7 s a scrape, which anyone could ask every 5 s (red team)."""
        def handle(_path: str, _query: Mapping[str, list[str]]) -> Response:
            if lag and self.lag is not None:
                self.lag.measure_now()
            with self.service.lock:
                body = render(build())
            return 200, CONTENT_TYPE, body
        return handle

    def _ready(self, _path: str, _query: Mapping[str, list[str]]) -> Response:
        if self.service.caught_up.is_set():
            return 200, "text/plain", b"ready\n"
        return 503, "text/plain", b"catching up with the ledger\n"

    def all_families(self) -> list[Family]:
        """Everything ``/metrics`` serves."""
        snap = Snapshot(self.service.views)
        return [*jobs_families(snap), *nodes_families(snap), *partitions_families(snap),
                *self.facts.scheduler_families(), *self.sluice_families(snap)]

    def sluice_families(self, snap: Snapshot | None = None) -> list[Family]:
        """Sluice's own families: freshness, lag, queue by reason, blocks, and the fact-fed."""
        views, service = self.service.views, self.service
        snap = snap or Snapshot(views)
        lag = Family("sluice_projection_lag_records",
                     "Ledger records not yet applied to the views, by ledger partition")
        for partition, records in sorted((self.lag.last if self.lag else {}).items()):
            lag.add(records, (("ledger_partition", str(partition)),))
        seq = Family("sluice_projection_shard_seq", "Last shard_seq applied, by shard")
        for shard, value in sorted(views.shard_seq.items()):
            seq.add(value, (("shard", shard),))
        held = Family("sluice_projection_jobs_in_memory",
                      "Job rows the views hold in memory (active, and ended within MinJobAge)")
        held.add(len(views.jobs), ())
        store = Family("sluice_projection_store_memory_bytes",
                       "Bytes the views' RocksDB holds in memory, by kind (bounded by its options)")
        for kind, size in sorted(service.store.memory().items()):
            store.add(size, (("kind", kind),))
        families = [
            lag, held, store,
            gauge("sluice_projection_caught_up", "1 once the views caught up with the ledger",
                  1 if service.caught_up.is_set() else 0),
            gauge("sluice_state_dir_full", "1 while the views' state directory refuses writes "
                  "for want of space (ENOSPC: consuming paused)", alarm.count(FULL)),
            gauge("sluice_state_dir_read_only", "1 while the views' state directory is "
                  "read-only or not writable (EROFS, EACCES: consuming paused)",
                  alarm.count(READ_ONLY)),
            gauge("sluice_projection_last_fact_timestamp_seconds",
                  "Decision time of the newest fact applied", views.last_fact_ms / 1000),
            seq,
            *_shard_families(self.facts.last_cycle),
            *_cycle_age_families(views.cycle_ms, self.facts.clock()),
            *_queue_families(views, self.facts.clock()),
            *_block_families(snap),
            *self.facts.families(),
        ]
        if self.extra is not None:
            families += self.extra()
        return families


def _shard_families(last_cycle: Mapping[str, Mapping[str, int]]) -> list[Family]:
    pending = Family("sluice_shard_jobs_pending", "Pending jobs at the shard's last cycle")
    running = Family("sluice_shard_jobs_running", "Running jobs at the shard's last cycle")
    for shard, cycle in sorted(last_cycle.items()):
        pending.add(cycle["pending"], (("shard", shard),))
        running.add(cycle["running"], (("shard", shard),))
    return [pending, running]


def _cycle_age_families(cycle_ms: Mapping[str, int], now_s: float) -> list[Family]:
    """How old each shard's last ``CycleCompleted`` is: a shard that stalls stops closing
    cycles (an idle one still closes one every 10 s, ``scheduler.cycle.IDLE_CLOSE_MS``)."""
    age = Family("sluice_shard_cycle_age_seconds",
                 "Seconds since the shard's last CycleCompleted, by the views' clock")
    last = Family("sluice_shard_last_cycle_timestamp_seconds",
                  "Decision time of the shard's last CycleCompleted")
    for shard, ms in sorted(cycle_ms.items()):
        age.add(round(max(now_s - ms / 1000, 0.0), 3), (("shard", shard),))
        last.add(ms / 1000, (("shard", shard),))
    return [age, last]


def _queue_families(views: Views, now_s: float) -> list[Family]:
    by_reason: dict[tuple[str, str], int] = {}
    oldest: dict[str, int] = {}
    for job in views.jobs.values():
        if job.get("state") != "PENDING" or "COMPLETING" in job.get("flags", ()):
            continue  # a requeue still waiting for its epilogs is not queued yet
        submit = int(job.get("submit_ms", 0))
        # a job of several partitions (-p a,b) waits in each: counted in each, never under
        # its list, which the submitter orders (equal tiers): n partitions made n! labels
        for partition in _partitions(str(job.get("partition", ""))):
            key = (partition, str(job.get("reason", "None")))
            by_reason[key] = by_reason.get(key, 0) + 1
            oldest[partition] = min(oldest.get(partition, submit), submit)
    reasons = Family("sluice_partition_jobs_pending_reason",
                     "Pending jobs by partition and pending reason")
    for (partition, reason), count in sorted(by_reason.items()):
        reasons.add(count, (("partition", partition), ("reason", reason)))
    age = Family("sluice_partition_oldest_pending_age_seconds",
                 "Age of the oldest pending job, by partition")
    for partition, submit in sorted(oldest.items()):
        age.add(max(now_s - submit / 1000, 0.0), (("partition", partition),))
    return [reasons, age]


def _partitions(text: str) -> list[str]:
    """The partitions of a job's ``partition`` (one name, or a list: ``a,b``)."""
    if "," not in text:
        return [text]
    return list(dict.fromkeys(name.strip() for name in text.split(",") if name.strip()))


def _block_families(snap: Snapshot) -> list[Family]:
    counts: dict[tuple[str, str], int] = {}
    gpus: dict[str, list[int]] = {}
    for node in snap.nodes:
        block = node.block or "none"
        key = (block, node.base)
        counts[key] = counts.get(key, 0) + 1
        totals = gpus.setdefault(block, [0, 0])
        totals[0] += node.gpus
        totals[1] += node.gpus_alloc
    nodes = Family("sluice_block_nodes", "Nodes by block (\"none\" outside blocks) and base state")
    for (block, state), count in sorted(counts.items()):
        nodes.add(count, (("block", block), ("state", state)))
    total = Family("sluice_block_gpus", "GPUs by block")
    alloc = Family("sluice_block_gpus_alloc", "GPUs allocated to jobs, by block")
    for block, (all_gpus, used) in sorted(gpus.items()):
        total.add(all_gpus, (("block", block),))
        alloc.add(used, (("block", block),))
    return [nodes, total, alloc]
