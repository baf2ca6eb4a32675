"""The queue, node and history views: a fold of ledger facts into JSON-ready rows.

Pure: ``Views.apply(name, record)`` changes the rows from one fact and returns the keys it
touched; the service persists those rows. Facts are applied once per ``(shard, shard_seq)`` and
in that order: a fact at or below a shard's last applied sequence is ignored, so a replayed
ledger or a re-delivered batch changes nothing, and a fact that arrives ahead of its shard's
next sequence (the ledger's partitions interleave) is held until the gap is filled. Held facts
live in memory; ``projections.extras`` persists them before the service persists the positions
past them.

Rows:

- job (key ``job_sluid``): id, name, user, account, partition, QOS, time limit and requeue
  policy (as the core resolved them, ``JobQueued``), state (Slurm's base state), ``flags``
  (Slurm's state flags: COMPLETING, EXPEDITING, SPECIAL_EXIT), reason (pending reason or end
  reason), priority, submit/start/end times, nodes, ``alloc`` (node → [CPUs, memory MB, GPUs]
  of the current or last run, from ``JobStarted``), ``requeue_reason`` (of the pending or last
  requeue), and ``runs``: every run with its SLUID, start, end, state, exit code, signal, nodes,
  ``cpus`` (what its allocation held, for sreport; rows folded before it was kept lack it) and
  ``requeue_reason`` (the requeue its end led to, "" if none).
  :func:`projections.job_states.shown_state` gives what squeue shows;
- node (key ``name``): SLUID, state, reason, CPUs, memory, GPUs, partitions, ``block`` (from a
  ``block=<name>`` feature or the block topology in force) and the runs it holds. ``service``
  is the state the ledger announced (``NodeStateChanged``: IDLE = in service, DRAIN, DOWN,
  INVALID_REG); ``state`` is what sinfo would show: the service state, or for a node in service
  IDLE, MIXED or ALLOCATED from the CPUs its runs' allocations hold (as slurmctld derives it).

The views apply no rule of the core: every decision is a field of a fact (``docs/records.md``,
"What the facts decide"). Facts of release v1, which lack those fields, fold as
:mod:`projections.legacy` says.

Refusals never change a row: a ``RequestDenied`` (and a ``JobRejected`` about a job the views
already have) is kept in ``denials`` by subject, where the CLI finds why its request was refused
(``GET /v1/denials/<SLUID>``).

A ``StartsPlanned`` (``squeue --start``) is no job either: ``starts`` keeps the shards' answers
by request (:mod:`projections.starts_view`).

A ``JobTestAnswered`` (``sbatch --test-only``) is no job: it is kept in ``tests`` by the test's
SLUID (the last :data:`TESTS_KEPT`; memory only), where ``GET /v1/decisions`` finds it; no job
list, history or count shows it.

Requeues, as slurmctld shows them. A ``JobEnded`` whose ``job_state`` is ``COMPLETING`` (the
core will requeue the job, for ``requeue_reason``) leaves the job **PENDING + COMPLETING** while
the run's epilogs run, as Slurm's requeue does (``_set_requeued_job_pending_completing``):
squeue shows ``CG``, the job counts as pending and completing, never as finished, and it keeps
the fact's ``held_nodes`` until their ``NodeEpilogCompleted`` (all of them until ``JobRequeued``
when ``defer_release``, Slurm's JOB_EXPEDITING). ``JobRequeued`` makes it PENDING again with its
``pending_reason`` (and EXPEDITING when expedited); requeued by ``RequeueExitHold`` (reason
``SPECIAL_EXIT``) it is PENDING + SPECIAL_EXIT with reason ``JobHeldUser`` until
``JobReleased``.

Memory: with ``retention_ms`` set (the service sets it from ``MinJobAge``), :meth:`Views.evict`
drops ended jobs from ``jobs`` once they ended longer ago than that (``projections.retention``);
``archive`` reads them back for queries (:meth:`Views.lookup`, :meth:`Views.job`,
:meth:`Views.every_job`) and reloads a row when a late fact names it, so the fold gives the same
rows as when everything stays in memory.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from projections.array_ids import array_job_id, array_task, job_number
from projections.legacy import requeued_pending_reason, spec_alloc
from projections.node_rows import config_applied, node_registered, node_state_changed, show_state
from projections.priorities_view import PrioritiesView
from projections.reservation_rows import reservation_deleted, reservation_set
from projections.retention import Archive, expired, track
from projections.shares_view import SharesView
from projections.starts_view import StartsView
from projections.stats import FINISHED
from projections.step_rows import step_ended, step_pending, step_started, step_tasks_exited
from scheduler.records import record_defaults
from schemas.digits import INT_DIGITS, ascii_whole

__all__ = ["ACTIVE_STATES", "LedgerFact", "Touched", "Views"]

DENIALS_KEPT = 20
DENIAL_SUBJECTS_KEPT = 10_000
TESTS_KEPT = 10_000
"""The most test answers (``JobTestAnswered``) the views keep, newest last."""
ACTIVE_STATES = frozenset({"PENDING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED"})
Row = dict[str, Any]
NO_CEILING = 2**63 - 1
CLOCK_AHEAD_MS = 5_000
"""How far ahead of the views' host clock a fact may move the views' clock. Small beside
``MinJobAge`` (300 s): a clock moved by the whole ``CommandTTL`` ahead would still have
evicted every ended job at once. A worker whose clock runs further ahead than this only keeps
ended jobs in ``squeue`` (and memory) that much longer."""


class LedgerFact(Protocol):
    """A fact as :meth:`Views.fold_merged` reads it (``projections.replay.Fact``)."""

    @property
    def name(self) -> str: ...

    @property
    def record(self) -> Row: ...


@dataclass
class Touched:
    """The rows one fact changed."""

    jobs: set[str] = field(default_factory=set)
    nodes: set[str] = field(default_factory=set)


@dataclass
class Views:
    """All rows, and how far each shard has been applied."""

    jobs: dict[str, Row] = field(default_factory=dict)
    nodes: dict[str, Row] = field(default_factory=dict)
    shard_seq: dict[str, int] = field(default_factory=dict)
    job_ids: dict[int, str] = field(default_factory=dict)
    configs: dict[str, Row] = field(default_factory=dict)
    reservations: dict[str, Row] = field(default_factory=dict)
    """Advanced reservations by name (:mod:`projections.reservation_rows`)."""
    last_fact_ms: int = 0
    clock_ceiling_ms: int = NO_CEILING
    """The latest time a fact may move the views' clock (``last_fact_ms``, ``cycle_ms``) to;
    a later fact is folded, but the clock stops there. The service sets it before each batch
    to its host's clock plus :data:`CLOCK_AHEAD_MS`: a fact forged straight onto the ledger
    (PLAINTEXT Kafka) at 2^62 ms had moved the clock for good, so every ended job left
    ``squeue`` and memory at once. Replays (``sluice verify``, audits) keep no ceiling."""
    cycle_ms: dict[str, int] = field(default_factory=dict)
    """Per shard: the time of its last ``CycleCompleted`` (the freshness of the shard itself)."""
    open_cycles: set[str] = field(default_factory=set)
    """Shards whose last folded fact is not a ``CycleCompleted``: one of their cycles is folded
    in part (its facts came in more than one read). Memory only."""
    default_partition: str = "main"
    """The default partition the last cluster ``ConfigApplied`` announced (for v1 facts)."""
    blocks: dict[str, str] = field(default_factory=dict)
    """Node name → base block of the block topology in force (from ``ConfigApplied``)."""

    private_jobs: bool = False
    """Slurm's ``PrivateData=jobs`` (on with ``AuthRequired``): the API shows a job's command
    and working directory only to its owner and to ``privileged`` users."""
    privileged: tuple[str, ...] = ()
    """Operators and administrators of the cluster configuration in force."""
    denials: dict[str, list[Row]] = field(default_factory=dict)
    """Refused requests by subject SLUID (the last :data:`DENIALS_KEPT`; memory only): a
    ``RequestDenied``, or a ``JobRejected`` about a job the views already have. Neither changes
    a job's row."""

    tests: dict[str, Row] = field(default_factory=dict)
    """Answers to ``sbatch --test-only`` by the test's SLUID (the last :data:`TESTS_KEPT`;
    memory only): never a job row."""

    starts: StartsView = field(default_factory=StartsView)
    """Answers to ``squeue --start`` (``StartsPlanned``) by request SLUID and shard, and the
    last plans (memory only; :mod:`projections.starts_view`): never a job row."""
    priorities: PrioritiesView = field(default_factory=PrioritiesView)
    """Answers to ``sprio`` (``PrioritiesComputed``), as ``starts`` (memory only;
    :mod:`projections.priorities_view`): never a job row."""
    shares: SharesView = field(default_factory=SharesView)
    """Answers to ``sshare`` (``SharesComputed``), as ``starts`` (memory only;
    :mod:`projections.shares_view`): never a job row."""
    shard_names: tuple[str, ...] = ()
    """The shards a ``PlanStarts`` (``PlanPriorities``, ``PlanShares``) goes to (all:
    ``Settings.shard_names``); its decision is complete once each answered."""

    array_ids: dict[str, int] = field(default_factory=dict)
    """Array SLUID → the array's job id (its first task's: Slurm's ``ID`` of ``ID_TASK``); a
    cache of the rows (memory only)."""

    held: dict[str, dict[int, tuple[str, Row]]] = field(default_factory=dict)
    """Facts that arrived ahead of their shard's next ``shard_seq``, by shard and sequence."""
    applied: list[tuple[str, Row]] = field(default_factory=list)
    """The facts the last :meth:`apply` folded, in shard order (with the held ones it released)."""

    archive: Archive | None = None
    """Where the rows :meth:`evict` dropped are read back (the service's store); None: none."""
    pause: Callable[[], None] | None = None
    """Called by a long read of the archive (:meth:`every_job`) now and then: the service's
    release of its lock for a moment. None: no pause."""
    retention_ms: int | None = None
    """How long after its end (by the views' clock, ``last_fact_ms``) an ended job stays in
    ``jobs``; None: forever (``sluice verify``, audits and tests fold without a store)."""
    ended: dict[str, int] = field(default_factory=dict)
    """Ended jobs in ``jobs``, oldest change first (SLUID → the views' time of it), when
    ``retention_ms`` is set: what :meth:`evict` walks from the front."""

    def apply(self, name: str, record: dict[str, Any]) -> Touched | None:
        """Fold one fact in ``(shard, shard_seq)`` order.

        The ledger's partitions interleave, so a fact can arrive before an earlier fact of its
        shard: it is held until the gap is filled, then folded together with every held
        successor. Returns the rows changed (empty when the fact was only held), or None for a
        fact already applied or held, or a record that is not a fact. ``applied`` lists the
        facts this call folded.
        """
        self.applied = []
        shard, seq = record.get("shard"), record.get("shard_seq")
        if shard is None or seq is None:
            return None
        last = self.shard_seq.get(shard, 0)
        waiting = self.held.get(shard, {})
        if seq <= last or seq in waiting:
            return None
        touched = Touched()
        if seq > last + 1:
            self.held.setdefault(shard, {})[seq] = (name, record)
            return touched
        self._fold(name, record, touched)
        while seq + 1 in waiting:
            seq += 1
            self._fold(*waiting.pop(seq), touched)
        if shard in self.held and not waiting:
            del self.held[shard]
        return touched

    def evict(self) -> list[str]:
        """Drop from memory the ended jobs no fact changed for ``retention_ms``; their SLUIDs.

        Only once their rows are in the store: the service calls it after persisting a batch.
        """
        if self.retention_ms is None:
            return []
        dropped = []
        for sluid in expired(self.ended, self.last_fact_ms - self.retention_ms):
            row = self.jobs.get(sluid)
            if row is None or row.get("state") in ACTIVE_STATES:
                continue
            del self.jobs[sluid]
            if row.get("job_id") and self.job_ids.get(int(row["job_id"])) == sluid:
                del self.job_ids[int(row["job_id"])]
            self.array_ids.pop(str(row.get("array_job_sluid", "")), None)
            dropped.append(sluid)
        return dropped

    def hold(self, row: Row) -> None:
        """Take ``row`` (a stored job row) into memory: loaded at start or reloaded by a fact."""
        sluid = str(row["job_sluid"])
        self.jobs[sluid] = row
        if row.get("job_id"):
            self.job_ids[int(row["job_id"])] = sluid
        if self.retention_ms is not None:
            track(self.ended, self.jobs, (sluid,), ACTIVE_STATES, None)

    def known(self, sluid: str) -> Row | None:
        """The row of job ``sluid`` for a fold: in memory, else reloaded from the archive."""
        row = self.jobs.get(sluid)
        if row is None and self.archive is not None and sluid:
            row = self.archive.job(sluid)
            if row is not None:
                self.hold(row)
        return row

    def lookup(self, sluid: str) -> Row | None:
        """The row of job ``sluid`` for a query: in memory, else read from the archive
        (without taking it into memory)."""
        row = self.jobs.get(sluid)
        if row is None and self.archive is not None and sluid:
            row = self.archive.job(sluid)
        return row

    def array_tasks(self, array_sluid: str) -> list[Row]:
        """Every task of array ``array_sluid``: the stored ones, and those in memory."""
        found = ({row["job_sluid"]: row for row in self.archive.array_tasks(array_sluid)}
                 if self.archive is not None else {})
        found.update({s: row for s, row in self.jobs.items()
                      if row.get("array_job_sluid") == array_sluid})
        return list(found.values())

    def every_job(self, pausing: bool = False) -> Iterator[Row]:
        """Every job ever folded, one row at a time: the archive's (the service persists every
        batch before it answers a query), else the rows in memory. ``pausing``: a reader
        holding the service's lock (an API answer) lets others in every few hundred rows of
        the archive (:attr:`pause`)."""
        if self.archive is not None:
            yield from self.archive.jobs(self.pause if pausing else None)
        else:
            yield from self.jobs.values()

    def apply_next(self, name: str, record: dict[str, Any], touched: Touched) -> None:
        """:meth:`apply` for a caller that folds a merged ledger (each shard's facts in
        ``shard_seq`` order, ``projections.replay.merge``): the rows the fact changed are added
        to ``touched`` (one set for many facts, not a new one per fact). A fact that is not its
        shard's next (or while facts are held) goes through :meth:`apply`, so the rows are
        the same as with :meth:`apply` whatever the order."""
        shard, seq = record.get("shard"), record.get("shard_seq")
        if self.held or shard is None or seq is None or seq != self.shard_seq.get(shard, 0) + 1:
            changed = self.apply(name, record)
            if changed is not None:
                touched.jobs |= changed.jobs
                touched.nodes |= changed.nodes
            return
        self.applied = []
        self._fold(name, record, touched)

    def fold_merged(self, facts: Iterable[LedgerFact], at_ms: int | None = None,
                    advance: Callable[[int], None] | None = None) -> None:
        """:meth:`apply_next` over a merged ledger (each shard's facts in ``shard_seq`` order,
        ``projections.replay.merge``): every fact decided at or before ``at_ms`` (all when
        None), stopping at the first later one; ``advance`` (a progress bar's) is told of every
        1000 facts folded.

        What :meth:`_fold` does for a shard's next fact is done here in one loop, without two
        calls per fact: the shard's sequence, the views' clock, the open cycles, the fact's
        handler (``applied`` is the last fact, as after :meth:`apply_next`). A fact that is not
        its shard's next, and every fact while facts are held or while ended jobs are tracked
        for eviction (``retention_ms``), goes through :meth:`apply_next`: the rows are the same
        as with :meth:`apply` fact by fact.
        """
        touched = Touched()  # what the facts changed: of no use here, emptied as it goes
        handlers, sequences, open_cycles = _HANDLERS, self.shard_seq, self.open_cycles
        last: tuple[str, Row] | None = None
        for folded, fact in enumerate(facts, 1):
            name, record = fact.name, fact.record
            if at_ms is not None and int(record["time_ms"]) > at_ms:
                break
            shard, seq = record.get("shard"), record.get("shard_seq")
            if (self.held or self.retention_ms is not None or shard is None or seq is None
                    or seq != sequences.get(shard, 0) + 1):
                self.apply_next(name, record, touched)
                last = None
            else:  # _fold, inline
                sequences[shard] = seq
                time_ms = int(record.get("time_ms", 0))
                if time_ms > self.last_fact_ms:
                    time_ms = min(time_ms, self.clock_ceiling_ms)
                    self.last_fact_ms = max(time_ms, self.last_fact_ms)
                if name == "CycleCompleted":
                    self.cycle_ms[shard] = time_ms
                    open_cycles.discard(shard)
                else:
                    open_cycles.add(shard)
                handler = handlers.get(name)
                if handler is not None:
                    handler(self, record, touched)
                last = (name, record)
            if folded % 1000 == 0:
                touched.jobs.clear()
                touched.nodes.clear()
                if advance is not None:
                    advance(1000)
        if last is not None:
            self.applied = [last]

    def _fold(self, name: str, record: Row, touched: Touched) -> None:
        shard = record["shard"]
        self.shard_seq[shard] = record["shard_seq"]
        time_ms = min(int(record.get("time_ms", 0)), self.clock_ceiling_ms)
        self.last_fact_ms = max(self.last_fact_ms, time_ms)
        if name == "CycleCompleted":
            self.cycle_ms[shard] = time_ms
            self.open_cycles.discard(shard)
        else:
            self.open_cycles.add(shard)
        handler = _HANDLERS.get(name)
        if handler is not None:
            if self.retention_ms is None:  # nothing to track: the handler adds to ``touched``
                handler(self, record, touched)
            else:
                changed = Touched()
                handler(self, record, changed)
                # at this fact's time, however facts were held
                track(self.ended, self.jobs, changed.jobs, ACTIVE_STATES, self.last_fact_ms)
                touched.jobs |= changed.jobs
                touched.nodes |= changed.nodes
        self.applied.append((name, record))

    def job(self, ref: str) -> Row | None:
        """A job by SLUID, by numeric id, or an array task as Slurm names it (``ID_TASK``); an
        array's SLUID (what ``sluice submit --array`` minted) names its first task, whose id
        Slurm prints as the array's job id."""
        if ref.isdigit():
            number = job_number(ref)
            return None if number is None else self._by_id(number)
        if "_" in ref:
            return array_task(self._by_id, self.array_tasks, ref)
        row = self.lookup(ref)
        if row is not None or not ref:
            return row
        tasks = self.array_tasks(ref)
        return min(tasks, key=lambda j: int(j["job_id"])) if tasks else None

    def _by_id(self, job_id: int) -> Row | None:
        sluid = self.job_ids.get(job_id)
        if sluid is None and self.archive is not None:
            sluid = self.archive.sluid_of(job_id)
        return None if sluid is None else self.lookup(sluid)


_SPEC_DEFAULTS = {"user": "", **record_defaults("JobSpec")}
"""A spec's schema defaults (the generated JobSpec's), for records that lack fields."""


def _job_queued(v: Views, r: Row, t: Touched) -> None:
    try:  # a decoded spec has every field: read it as it is (no copy with the defaults)
        row = _described(v, r, r["spec"])
    except KeyError:  # a spec that lacks fields (built by hand): the schema's defaults
        row = _described(v, r, {**_SPEC_DEFAULTS, **r["spec"]})
    known = v.known(r["job_sluid"])
    if known is not None and known.get("state") == "PENDING" and known.get("job_id") == r["job_id"]:
        known.update(row)  # an update of a pending job: its state, hold, runs stay
        t.jobs.add(r["job_sluid"])
        return
    if known is not None and known.get("state") == "REJECTED":
        _keep_refusal(v, known)  # another submission drew the SLUID: its refusal stays findable
    # The job's row is what the fact describes, then its state: set one key at a time into
    # the same dict (a dict display of more than 15 entries is built one entry at a time
    # anyway, and a second dict merged with ``**`` would copy the 35 described again).
    row["state"] = "PENDING"
    row["reason"] = "None"
    row["priority"] = 0
    row["flags"] = []
    row["submit_ms"] = r["time_ms"]
    row["start_ms"] = 0
    row["end_ms"] = 0
    row["nodes"] = []
    row["run_sluid"] = ""
    row["exit_code"] = 0
    row["signal"] = 0
    row["runs"] = []
    row["array_job_sluid"] = r.get("array_job_sluid", "")
    row["array_task_id"] = r.get("array_task_id", -1)
    row["array_job_id"] = array_job_id(v.array_tasks, v.array_ids, r)
    row["restart_count"] = 0
    row["submitter"] = r.get("submitter", "")  # an administrator who submitted it for the user
    row["nonce"] = r.get("nonce", 0)  # the submission's: whose decision this is (decisions.py)
    v.jobs[r["job_sluid"]] = row
    v.job_ids[r["job_id"]] = r["job_sluid"]
    t.jobs.add(r["job_sluid"])


def _described(v: Views, r: Row, spec: Row) -> Row:
    """What a ``JobQueued`` says of the job (its ids, the core's decisions, else the spec's
    fields): the head of a new job's row, or what an update of a pending job sets."""
    get = r.get  # the core's decisions; "" or 0 in a v1 fact: the spec as written
    described = {
        "job_id": r["job_id"], "job_sluid": r["job_sluid"],
        "name": spec["name"], "user": spec["user"],
        "account": get("account") or spec["account"],
        "partition": get("partition") or spec["partition"] or v.default_partition,
        "qos": get("qos") or spec["qos"],
        "nodes_min": spec["nodes_min"], "gpus_per_node": spec["gpus_per_node"],
        "cpus_per_task": spec["cpus_per_task"], "ntasks": spec["ntasks"],
        "cpus_per_node": get("cpus_per_node", 0),
        "time_limit_s": get("time_limit_s") or spec["time_limit_s"],
        "workdir": spec["workdir"], "command": list(spec["command"]),
        "nodes_max": spec["nodes_max"], "mem_per_node_mb": spec["mem_per_node_mb"],
        "exclusive": spec["exclusive"], "gpu_type": spec["gpu_type"],
        "requeue": get("requeue") or spec["requeue"],
        "dependency": spec["dependency"], "begin_ms": spec["begin_time_ms"],
        "nice": spec["nice"], "comment": spec["comment"], "gpus": spec["gpus"],
        "ntasks_per_node": spec["ntasks_per_node"], "mem_per_cpu_mb": spec["mem_per_cpu_mb"],
        "constraint": spec["constraint"], "nodelist": spec["nodelist"],
        "exclude": spec["exclude"], "signal_spec": spec["signal"],
        "array_limit": _array_limit(spec.get("array") or ""),
        "mail_type": spec["mail_type"],
        "mail_user": spec["mail_user"], "output": spec["output"], "error": spec["error"],
        "reservation": spec.get("reservation", ""),
        "admin_comment": spec.get("admin_comment", ""), "extra": spec.get("extra", ""),
    }
    if spec.get("script"):  # the batch script (sluice show job --script); not in job lists
        described["script"] = spec["script"]
    return described


def _request_denied(v: Views, r: Row, t: Touched) -> None:
    del t  # a refused request changes no row
    _remember_denial(v, r.get("subject_sluid", ""), {
        "event_sluid": r["event_sluid"], "time_ms": r["time_ms"], "request": r["request"],
        "requester": r.get("requester", ""), "reason": r["reason"], "detail": r.get("detail", ""),
        "nonce": r.get("nonce", 0),
    })


def _remember_denial(v: Views, subject: str, row: Row) -> None:
    kept = v.denials.setdefault(subject, [])
    kept.append(row)
    del kept[:-DENIALS_KEPT]
    if len(v.denials) > DENIAL_SUBJECTS_KEPT:
        del v.denials[next(iter(v.denials))]


def _job_test_answered(v: Views, r: Row, t: Touched) -> None:
    del t  # a test changes no row
    v.tests.pop(r["job_sluid"], None)  # a test answered again moves to the end
    v.tests[r["job_sluid"]] = {
        key: r.get(key, default) for key, default in (
            ("job_sluid", ""), ("nonce", 0), ("user", ""), ("job_id", 0), ("start_ms", 0),
            ("nodes", ""), ("cpus", 0), ("partition", ""), ("reason", ""), ("detail", ""),
            ("time_ms", 0))
    }
    if len(v.tests) > TESTS_KEPT:
        del v.tests[next(iter(v.tests))]


def _starts_planned(v: Views, r: Row, t: Touched) -> None:
    del t  # a plan changes no row
    v.starts.fold(r)


def _priorities_computed(v: Views, r: Row, t: Touched) -> None:
    del t  # an answer changes no row
    v.priorities.fold(r)


def _shares_computed(v: Views, r: Row, t: Touched) -> None:
    del t  # an answer changes no row
    v.shares.fold(r)


def _job_rejected(v: Views, r: Row, t: Touched) -> None:
    """A refused submission of a new SLUID is a ``REJECTED`` row; a refusal about a job (or
    job array) the views have is a denial (an update, a duplicate, a colliding submission:
    ``SluidInUse``), the job unchanged. Either keeps the refused submission's nonce, by which
    its client finds it (:mod:`projections.decisions`)."""
    sluid = r["job_sluid"]
    known = v.known(sluid)
    if (known is not None and known.get("job_id")) or (known is None and sluid in v.array_ids):
        _remember_denial(v, sluid, {  # a refused request about a queued job or array
            "event_sluid": r["event_sluid"], "time_ms": r["time_ms"], "request": "",
            "requester": "", "reason": r["reason"], "detail": r.get("detail", ""),
            "nonce": r.get("nonce", 0),
        })
        return
    if known is not None and known.get("nonce", 0) != r.get("nonce", 0):
        _keep_refusal(v, known)  # two refused submissions under one SLUID: both findable
    v.jobs[sluid] = {
        "job_id": 0, "job_sluid": sluid, "name": "", "user": "", "account": "",
        "partition": "", "qos": "", "state": "REJECTED", "reason": r["reason"],
        "detail": r.get("detail", ""), "priority": 0, "flags": [], "submit_ms": r["time_ms"],
        "start_ms": 0, "end_ms": r["time_ms"], "nodes": [], "run_sluid": "", "runs": [],
        "exit_code": 0, "signal": 0, "nonce": r.get("nonce", 0),
    }
    t.jobs.add(sluid)


def _keep_refusal(v: Views, row: Row) -> None:
    """Keep the refusal a ``REJECTED`` row stood for as a denial of its SLUID, before a later
    submission under the same SLUID takes the row (a collision: each client finds its own)."""
    _remember_denial(v, row["job_sluid"], {
        "event_sluid": "", "time_ms": row.get("end_ms", 0), "request": "", "requester": "",
        "reason": row.get("reason", ""), "detail": row.get("detail", ""),
        "nonce": row.get("nonce", 0),
    })


def _with_job(
    fn: Callable[[Views, Row, Row, Touched], None],
) -> Callable[[Views, Row, Touched], None]:
    def handler(v: Views, r: Row, t: Touched) -> None:
        sluid = r["job_sluid"]
        job = v.jobs.get(sluid)  # in memory (the usual case), else :meth:`Views.known`
        if job is None:
            job = v.known(sluid)
            if job is None:
                return
        fn(v, job, r, t)
        t.jobs.add(sluid)
    return handler


@_with_job
def _job_pending(v: Views, job: Row, r: Row, t: Touched) -> None:
    job["reason"], job["priority"] = r["reason"], r.get("priority", job["priority"])
    if r["reason"] == "ReservationDeleted" or (
            "RESV_DEL_HOLD" in job["flags"] and r["reason"] not in _HOLD_REASONS):
        _resv_del_hold(job, r["reason"] == "ReservationDeleted")


_HOLD_REASONS = frozenset(("JobHeldAdmin", "JobHeldUser"))


def _resv_del_hold(job: Row, held: bool) -> None:
    """Slurm's ``RESV_DEL_HOLD`` flag: a pending job held because its reservation is gone
    (squeue shows it ``RD``) until it is released (the shard takes the reservation off it) or
    its reservation changed (``scontrol update Reservation=``); another hold keeps it, as the
    job state's flag stays in Slurm."""
    flags = [f for f in job["flags"] if f != "RESV_DEL_HOLD"]
    job["flags"] = sorted([*flags, "RESV_DEL_HOLD"]) if held else flags


@_with_job
def _job_started(v: Views, job: Row, r: Row, t: Touched) -> None:
    if job["runs"]:  # a previous run whose nodes the ledger never gave back
        _release(v, job, job["runs"][-1], None, t)
    nodes = list(r["nodes"])
    run_sluid, time_ms, restarts = r["run_sluid"], r["time_ms"], r.get("restart_count", 0)
    segments, alloc = r.get("segments", []), _alloc(v, job, r, nodes)
    # one key at a time (a job.update(...) with keywords builds an 11-entry dict first); a
    # key the row lacks is added in this order
    job["state"] = "RUNNING"
    job["reason"] = "None"
    job["start_ms"] = time_ms
    job["nodes"] = nodes
    job["run_sluid"] = run_sluid
    job["segments"] = segments
    job["restart_count"] = restarts
    job["kill_reason"] = ""
    job["flags"] = []
    job["alloc"] = alloc
    if r.get("priority"):  # the priority it started with, as Slurm shows (0: a v7 fact)
        job["priority"] = r["priority"]
    job["defer_release"] = False
    if r.get("partition"):
        if "," in job["partition"]:  # -p a,b: the list comes back with a requeue
            job["partition_list"] = job["partition"]
        job["partition"] = r["partition"]
    job["runs"].append({
        "run_sluid": run_sluid, "restart_count": restarts,
        "start_ms": time_ms, "end_ms": 0, "state": "RUNNING", "exit_code": 0,
        "signal": 0, "nodes": nodes.copy(), "requeue_reason": "",
        "cpus": sum(share[0] for share in alloc.values()),  # sreport: each run's own CPUs
    })
    rows, job_id, touch = v.nodes, job["job_id"], t.nodes.add
    for node in nodes:
        row = rows.get(node)
        if row is not None:
            row["runs"] = [*row["runs"], run_sluid]
            row["jobs"] = [*row["jobs"], job_id]
            show_state(v, row)
            touch(node)


def _alloc(v: Views, job: Row, r: Row, nodes: list[str]) -> dict[str, list[int]]:
    """Node → [CPUs, memory MB, GPUs] of the run: the fact's, else (v1) the spec's."""
    cpus, mem, gpus = r.get("alloc_cpus", ()), r.get("alloc_mem_mb", ()), r.get("alloc_gpus", ())
    if len(cpus) == len(mem) == len(gpus) == len(nodes) and nodes:  # the lengths are equal
        return {n: [c, m, g] for n, c, m, g in zip(nodes, cpus, mem, gpus)}  # noqa: B905
    return {n: spec_alloc(job, v.nodes.get(n)) for n in nodes}


@_with_job
def _run_kill_requested(v: Views, job: Row, r: Row, t: Touched) -> None:
    if job["state"] == "RUNNING" and r.get("run_sluid", job["run_sluid"]) == job["run_sluid"]:
        job["flags"] = sorted({*job["flags"], "COMPLETING"})
        job["kill_reason"] = r["reason"]


@_with_job
def _run_signalled(v: Views, job: Row, r: Row, t: Touched) -> None:
    """The run's last signal (scancel -s, the --signal warning), for ``show job``."""
    if r.get("run_sluid", job["run_sluid"]) == job["run_sluid"]:
        job["last_signal"] = {"signal": r["signal"], "scope": r["scope"],
                              "reason": r["reason"], "requester": r.get("requester", ""),
                              "time_ms": r["time_ms"]}


@_with_job
def _time_limit_changed(v: Views, job: Row, r: Row, t: Touched) -> None:
    """scontrol update TimeLimit= of a running job: the limit (and so its end) shown."""
    if r["run_sluid"] == job["run_sluid"]:
        job["time_limit_s"] = r["time_limit_s"]


@_with_job
def _job_details_changed(v: Views, job: Row, r: Row, t: Touched) -> None:
    """scontrol update JobName=/Comment=/MailType=/MailUser=/ArrayTaskThrottle=/Nice=/Requeue=/
    AdminComment=/Extra= of a running job: shown (nice, requeue, AdminComment and Extra when the
    fact changed them: an older fact has none)."""
    if r["run_sluid"] == job["run_sluid"]:
        for key in ("name", "comment", "mail_type", "mail_user"):
            job[key] = r[key]
        for key in ("nice", "requeue", "admin_comment", "extra"):
            if key in r.get("changed", ()):
                job[key] = r[key]
        if r["array"]:
            job["array_limit"] = _array_limit(r["array"])


@_with_job
def _job_ended(v: Views, job: Row, r: Row, t: Touched) -> None:
    run_sluid = r.get("run_sluid", "")
    run = _run(job, run_sluid)
    time_ms, exit_code, signal = r["time_ms"], r.get("exit_code", 0), r.get("signal", 0)
    if run is not None and run["end_ms"] == 0:  # one key at a time: no keywords' dict
        state = r["state"]
        run["end_ms"] = time_ms
        run["state"] = state
        run["exit_code"] = exit_code
        run["signal"] = signal
    current = job["state"] == "RUNNING" and bool(run_sluid) and run_sluid == job["run_sluid"]
    job["end_ms"] = time_ms
    job["exit_code"] = exit_code
    job["signal"] = signal
    job["reason"] = r.get("reason") or "None"
    decided = r.get("job_state", "")
    if current and (decided == "COMPLETING" or (not decided and r["state"] == "REQUEUED")):
        _requeue_pending(job, run, str(r.get("requeue_reason", "")))
        job["defer_release"] = bool(r.get("defer_release", False))
        if decided:
            kept = set(r.get("held_nodes", ()))
            free = [n for n in job["nodes"] if n not in kept]
        else:  # v1 REQUEUED: the nodes that are DOWN are free
            free = [n for n in job["nodes"] if _service(v.nodes.get(n)) == "DOWN"]
        _release(v, job, run, free, t)
        return
    job["state"] = r["state"]
    job["flags"] = []
    if job["runs"]:  # the run, or (a cancel while a requeue waited) the run that was completing
        _release(v, job, run or job["runs"][-1], None, t)


def _requeue_pending(job: Row, run: Row | None, reason: str) -> None:
    """The job waits for its run's epilogs, then is requeued: Slurm's PENDING + COMPLETING."""
    job.update(state="PENDING", requeue_reason=reason)
    job["flags"] = sorted({*(f for f in job["flags"] if f == "EXPEDITING"), "COMPLETING"})
    if run is not None:
        run["requeue_reason"] = reason


def _run(job: Row, run_sluid: str) -> Row | None:
    run: Row
    if run_sluid:
        for run in reversed(job["runs"]):
            if run["run_sluid"] == run_sluid:
                return run
    return None


def _service(row: Row | None) -> str:
    return "" if row is None else str(row.get("service", row.get("state", "")))


def _release(v: Views, job: Row, run: Row | None, names: list[str] | None, t: Touched) -> None:
    """Give back the nodes ``names`` (all the run's nodes when None) that ``run`` still holds."""
    if run is None:
        return
    rows, run_sluid, job_id, touch = v.nodes, run["run_sluid"], job["job_id"], t.nodes.add
    for name in run["nodes"] if names is None else names:
        row = rows.get(name)
        if row is None:
            continue
        runs = row["runs"]
        if runs.count(run_sluid) == 1:  # the usual case, _cut inline (a call less per node)
            runs = runs.copy()
            runs.remove(run_sluid)
        else:
            runs = _cut(runs, run_sluid)
            if runs is None:  # the node does not hold the run
                continue
        row["runs"] = runs
        jobs = row["jobs"]
        if jobs.count(job_id) == 1:
            jobs = jobs.copy()
            jobs.remove(job_id)
            row["jobs"] = jobs
        else:
            row["jobs"] = _without(jobs, job_id)
        show_state(v, row)
        touch(name)


def _without(items: list[Any], item: Any) -> list[Any]:
    """A new list of ``items`` but every ``item`` (a node's runs or jobs: SLUIDs and ids)."""
    cut = _cut(items, item)
    return items[:] if cut is None else cut


def _cut(items: list[Any], item: Any) -> list[Any] | None:
    """A new list of ``items`` but every ``item``; None when there is none.

    The usual single occurrence is deleted from a copy (scans in C, no Python loop per item,
    one new list)."""
    count = items.count(item)
    if count == 1:
        cut = items.copy()
        cut.remove(item)
        return cut
    return None if count == 0 else [x for x in items if x != item]


def _completing(job: Row, run_sluid: str) -> bool:
    """Whether ``job`` waits for the epilogs of run ``run_sluid`` before its requeue."""
    return (job["state"] == "PENDING" and "COMPLETING" in job["flags"]
            and bool(run_sluid) and job["run_sluid"] == run_sluid)


@_with_job
def _node_epilog_completed(v: Views, job: Row, r: Row, t: Touched) -> None:
    run = _run(job, r["run_sluid"])
    if run is None or run is not job["runs"][-1] or job["run_sluid"] != r["run_sluid"]:
        return
    if job["state"] in FINISHED and r.get("ok"):
        # a v1 ledger: only an awaited epilog is reported ok, the core is requeueing this run
        _requeue_pending(job, run, "")
    if _completing(job, r["run_sluid"]) and not job.get("defer_release"):
        _release(v, job, run, [r["name"]], t)


@_with_job
def _job_held(v: Views, job: Row, r: Row, t: Touched) -> None:
    job["priority"] = 0
    if "RESV_DEL_HOLD" in job["flags"] and not r.get("admin"):
        return  # the shard's ReservationDeleted outranks a user's hold (Slurm's order)
    job["reason"] = "JobHeldAdmin" if r.get("admin") else "JobHeldUser"


@_with_job
def _job_priority_set(v: Views, job: Row, r: Row, t: Touched) -> None:
    """scontrol update Priority= by an operator: the priority the scheduler orders by."""
    if job["state"] == "PENDING":
        job["priority"] = r["priority"]


@_with_job
def _job_released(v: Views, job: Row, r: Row, t: Touched) -> None:
    job["reason"] = "None"
    job["flags"] = [f for f in job["flags"] if f not in ("SPECIAL_EXIT", "RESV_DEL_HOLD")]


@_with_job
def _job_expediting(v: Views, job: Row, r: Row, t: Touched) -> None:
    run = _run(job, r["run_sluid"])
    if job["state"] in FINISHED:
        if run is None or run is not job["runs"][-1] or job["run_sluid"] != r["run_sluid"]:
            return
        # a v1 ledger: the core expedites only a run whose requeue is pending
        _requeue_pending(job, run, "NODE_FAIL" if r.get("trigger") == "NODE_FAIL"
                         else "EXIT_NONZERO")
    if _completing(job, r["run_sluid"]):
        job["defer_release"] = True  # expedited: every node is kept until the requeue
    job["flags"] = sorted({*job["flags"], "EXPEDITING"})


@_with_job
def _job_requeued(v: Views, job: Row, r: Row, t: Touched) -> None:
    reason = r.get("pending_reason") or requeued_pending_reason(r)
    run = _run(job, r["run_sluid"])
    if run is not None:
        run["requeue_reason"] = r["reason"]
        _release(v, job, run, None, t)
    # pending again: no start (the run keeps its own: sacct), eligible at the requeue's begin
    # time (scontrol's EligibleTime; 0: at once, from the submit time the fact resets)
    job.update(state="PENDING", reason=reason, nodes=[], run_sluid="", start_ms=0, end_ms=0,
               begin_ms=r["begin_time_ms"], restart_count=r["restart_count"],
               requeue_reason=r["reason"], kill_reason="", defer_release=False)
    if r["held"]:
        job["priority"] = 0
    if job.get("partition_list") and not r["expedite"]:  # -p a,b waits under its list again
        job["partition"] = job["partition_list"]
    flags = {"EXPEDITING"} if r["expedite"] else set()
    if r["reason"] == "SPECIAL_EXIT":  # Slurm's job_hold_requeue: JOB_SPECIAL_EXIT, held
        flags.add("SPECIAL_EXIT")
    job["flags"] = sorted(flags)


def _node_suspected(v: Views, r: Row, t: Touched) -> None:
    row = v.nodes.get(r["name"])
    if row is not None:
        row["suspect"] = r["reason"]  # shown as Slurm's NO_RESPOND flag; state and runs stay
        t.nodes.add(r["name"])


_HANDLERS: dict[str, Callable[[Views, Row, Touched], None]] = {
    "JobExpediting": _job_expediting,
    "JobRequeued": _job_requeued,
    "JobQueued": _job_queued,
    "JobRejected": _job_rejected,
    "JobTestAnswered": _job_test_answered,
    "StartsPlanned": _starts_planned,
    "PrioritiesComputed": _priorities_computed,
    "SharesComputed": _shares_computed,
    "RequestDenied": _request_denied,
    "JobPending": _job_pending,
    "JobStarted": _job_started,
    "RunKillRequested": _run_kill_requested,
    "RunSignalled": _run_signalled,
    "TimeLimitChanged": _time_limit_changed,
    "JobDetailsChanged": _job_details_changed,
    "JobEnded": _job_ended,
    "JobHeld": _job_held,
    "JobPrioritySet": _job_priority_set,
    "JobReleased": _job_released,
    "NodeEpilogCompleted": _node_epilog_completed,
    "NodeRegistered": node_registered,
    "NodeStateChanged": node_state_changed,
    "NodeSuspected": _node_suspected,
    "ConfigApplied": config_applied,
    "ReservationSet": reservation_set,
    "ReservationDeleted": reservation_deleted,
    "StepPending": _with_job(lambda v, job, r, t: step_pending(job, r)),
    "StepStarted": _with_job(lambda v, job, r, t: step_started(job, r)),
    "StepTasksExited": _with_job(lambda v, job, r, t: step_tasks_exited(job, r)),
    "StepEnded": _with_job(lambda v, job, r, t: step_ended(job, r)),
}


def _array_limit(text: str) -> int:
    """The limit on an array's running tasks (``1-9%2`` → 2; 0 = none)."""
    limit = text.rpartition("%")[2] if "%" in text else ""
    return ascii_whole(limit, INT_DIGITS) or 0
