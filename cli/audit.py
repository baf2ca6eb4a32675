"""``sluice audit`` and ``sluice verify``: the ledger, read back (``sluice replay``, which
``run`` also takes, is ``cli.replay``).

- ``sluice audit JOB`` prints every fact of a job with the reason for each decision
  (``projections.audit``).
- ``sluice verify`` re-runs the core over the recorded shard inbox and compares its decisions
  with the ledger; it exits 1 on any divergence. The bar is zero.

How ``verify`` re-decides one shard: fold the shard's facts in ``shard_seq`` order; every
``CycleCompleted`` closes a batch and names the inbox offsets it applied (``inbox_from``..
``inbox_to``). For each batch, from the state the recorded facts before it folded to, run the
cycle the shard ran — ``scheduler.run_cycle`` over the inbox records of the range, with the
same inbox range and the same Avro check of every fact — and compare the facts field by field
with the recorded ones. ``verify`` therefore checks the code that runs, close rule included
(``scheduler.cycle_closes``). Inbox records between two batches were applied by cycles that
decided nothing and did not close; they are run as one cycle too and must give no fact. A
divergent batch is reported, and the state is re-synchronised from the recorded facts (from
the last checkpoint) so later batches are still checked. Batches whose inbox records are gone
(the inbox keeps 7 days) are folded, not checked, and counted as such.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, TextIO

from confluent_kafka import TopicPartition

import scheduler
from agents.auth.seal import SealChecker, worker_secret
from agents.inbox_records import open_inbox_record
from agents.shard_runner import InboxRecord
from cli import replay
from cli.arg_parser import Parser
from cli.client import Client
from cli.dead_letters_shown import dead_letters, letter_line
from cli.progress import progress
from projections.audit import AuditEntry, audit_job, find_job
from projections.replay import Fact, LedgerGapError, by_shard, paused_gc, read_facts
from schemas import encode
from streams.clients import consumer
from streams.settings import Settings
from streams.topics import Topics

__all__ = ["ShardReport", "run", "verify"]


def _parser(command: str) -> argparse.ArgumentParser:
    parser = Parser(prog=f"sluice {command}")
    if command == "audit":
        parser.description = "every fact of a job with the reason for each decision"
        parser.add_argument("job", help="job id or job SLUID")
        parser.add_argument("--json", action="store_true")
    else:
        parser.description = "re-decide the recorded inbox with the core and compare"
        parser.add_argument("--shard", default="", help="one shard (default: every shard)")
        parser.add_argument("--json", action="store_true")
    return parser


def run(argv: Sequence[str], out: TextIO = sys.stdout,
        settings: Settings | None = None) -> int:
    """Entry point; ``argv[0]`` is ``replay``, ``audit`` or ``verify``."""
    command = argv[0]
    try:
        if command == "replay":
            return replay.run(argv, out, settings)
        args = _parser(command).parse_args(list(argv[1:]))
        settings = settings or Settings.from_env()
        if command == "audit":
            return _audit(args, settings, out)
        try:
            return _verify(args, settings, out)
        except FileNotFoundError as exc:  # no worker secret here: the inbox cannot be opened
            print(f"sluice verify: {exc}", file=sys.stderr)
            return 2
    except LedgerGapError as exc:  # a fact missing or there twice: say so, no traceback
        print(f"sluice {command}: the ledger is not whole: {exc} (a shard's facts must be "
              "numbered without gaps or repeats; docs/replay-and-audit.md)", file=sys.stderr)
        return 1


def _audit(args: argparse.Namespace, settings: Settings, out: TextIO) -> int:
    facts = read_facts(settings)
    job = find_job(facts, args.job)
    # requests keyed by the SLUID that the intake could not read never reached the ledger:
    # the views keep their dead letters (what this user may see of them)
    letters = dead_letters(Client(settings), job or args.job)
    if job is None and not letters:
        print(f"sluice audit: no job {args.job} in the ledger", file=sys.stderr)
        return 1
    entries = []
    if job is not None:
        with paused_gc():
            entries = audit_job(facts, job)
    if args.json:
        json.dump([{"time_ms": e.time_ms, "shard": e.shard, "shard_seq": e.seq,
                    "fact": e.name, "why": e.text, "record": e.record} for e in entries]
                  + [{"time_ms": x.get("time_ms", 0), "fact": "DeadLettered",
                      "why": letter_line(x), "record": x} for x in letters],
                  out, indent=2)
        out.write("\n")
        return 0
    if job is None:
        print(f"# {args.job}: not in the ledger (the intake could not read the request)",
              file=out)
    else:
        job_id = _job_id(entries)
        named = f"job {job_id} ({job})" if job_id else (
            job if args.job == job else f"job {args.job} ({job})")  # never queued: no job id
        print(f"# {named}: {len(entries)} facts", file=out)
    for entry in entries:
        print(entry.line(), file=out)
    for letter in letters:
        print(letter_line(letter), file=out)
    return 0


def _job_id(entries: list[AuditEntry]) -> int:
    """The job id the job was queued as (0: never queued, a refused submission): the header
    names it whether the audit was asked by id or by SLUID."""
    return next((int(e.record.get("job_id") or 0) for e in entries if e.name == "JobQueued"), 0)


def _verify(args: argparse.Namespace, settings: Settings, out: TextIO) -> int:
    facts = read_facts(settings)
    cycles = sum(1 for f in facts if f.name == "CycleCompleted")
    with paused_gc(), progress(cycles, "verify", "cycle", quiet=args.json) as advance:
        reports = verify(settings, facts, only=args.shard or None, advance=advance)
    if args.json:
        json.dump([asdict(r) for r in reports], out, indent=2)
        out.write("\n")
    else:
        for report in reports:
            for line in report.lines():
                print(line, file=out)
    return 1 if any(r.divergences for r in reports) else 0


# -- verify ------------------------------------------------------------------------------------


@dataclass
class ShardReport:
    """What ``verify`` found for one shard."""

    shard: str
    cycles: int = 0
    checked: int = 0
    unavailable: int = 0
    requests: int = 0
    facts: int = 0
    between: int = 0
    divergences: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0

    def lines(self) -> list[str]:
        head = (f"shard {self.shard}: {self.checked} of {self.cycles} cycles re-decided "
                f"({self.requests} inbox records, {self.facts} facts; {self.between} records "
                f"between cycles) in {self.seconds:.2f}s: {len(self.divergences)} divergence(s)")
        if self.unavailable:
            head += f"; {self.unavailable} cycle(s) not checked (inbox records gone)"
        out = [head]
        for d in self.divergences:
            out.append(f"  DIVERGENCE at {d['where']}: {d['what']}")
            out.append(f"    recorded:   {d['recorded']}")
            out.append(f"    re-decided: {d['redecided']}")
        return out


def verify(settings: Settings, facts: list[Fact], only: str | None = None,
           advance: Callable[[int], None] | None = None) -> list[ShardReport]:
    """Re-decide every shard's recorded inbox (see the module docstring); ``advance`` is
    told of each cycle checked (a progress bar's)."""
    shards = by_shard(facts)
    names = settings.shard_names()
    reports = []
    for shard in sorted(shards):
        if only and shard != only:
            continue
        if shard not in names:
            reports.append(ShardReport(shard, divergences=[{
                "where": "configuration", "what": f"shard {shard} is not one of {names}",
                "recorded": "", "redecided": ""}]))
            continue
        reports.append(_verify_shard(settings, shard, names.index(shard), shards[shard],
                                     advance))
    return reports


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _copy(state: Any) -> Any:
    return scheduler.restore_state(scheduler.state_meta(state), dict(state.jobs),
                                   dict(state.nodes))


class _Shard:
    """One shard's state, with a checkpoint to re-synchronise after a divergence."""

    CHECKPOINT_EVERY = 200

    def __init__(self, settings: Settings, shard: str, index: int, facts: list[Fact]) -> None:
        self.index, self.facts, self.cluster_id = index, facts, settings.cluster_id
        self.state = scheduler.initial_state(shard, settings.cluster_id)
        self.folded = 0
        self.checkpoint = (_copy(self.state), 0)
        self.cycles = 0
        self.secret = worker_secret(settings.home, create=False)
        self.seals = SealChecker()

    def fold_to(self, end: int) -> None:
        """Fold the recorded facts up to (not including) position ``end``."""
        for fact in self.facts[self.folded:end]:
            self.state = scheduler.evolve(self.state, scheduler.from_record(fact.name,
                                                                              fact.record))
        self.folded = end
        self.cycles += 1
        if self.cycles % self.CHECKPOINT_EVERY == 0:
            self.checkpoint = (_copy(self.state), self.folded)

    def resync(self, end: int) -> None:
        """After a divergence: the state is the fold of the recorded facts up to ``end``."""
        state, position = self.checkpoint
        self.state, self.folded = _copy(state), position
        self.fold_to(end)

    def state_at(self, position: int) -> Any:
        """A fresh state: the fold of the recorded facts before ``position`` (a roll-back)."""
        state, at = self.checkpoint
        state = _copy(state)
        if at > position:
            state, at = scheduler.initial_state(self.state.meta.shard, self.cluster_id), 0
        for fact in self.facts[at:position]:
            state = scheduler.evolve(state, scheduler.from_record(fact.name, fact.record))
        return state

    def decide_batch(self, records: list[InboxRecord], position: int) -> list[Any]:
        """The shard runner's cycle over ``records`` (``scheduler.run_cycle``, the same call
        with the same inbox range and the same Avro check); ``position`` is where the batch's
        facts start in the recorded ones (its roll-back point)."""
        requests = []
        now = self.state.now_ms
        for record in records:  # opened as the runner opens them (agents.inbox_records)
            opened = open_inbox_record(record, self.secret, self.seals, now)
            if isinstance(opened, str):
                continue
            request, stamp_ms = opened
            now = max(now, stamp_ms)
            requests.append(scheduler.Timed(record.offset, stamp_ms, request))
        inbox = (scheduler.InboxRange(self.index, records[0].offset, records[-1].offset)
                 if records else None)
        result = scheduler.run_cycle(self.state, requests, inbox, now, encode=_encode,
                                     reload=lambda: self.state_at(position))
        self.state = result.state
        return list(result.facts)


def _encode(obj: Any) -> bytes:
    """The shard's check before it writes: the record must encode with its Avro schema."""
    return encode(*scheduler.as_record(obj))


def _verify_shard(settings: Settings, shard: str, index: int, facts: list[Fact],
                  advance: Callable[[int], None] | None = None) -> ShardReport:
    started = time.perf_counter()
    report = ShardReport(shard)
    ends = [i for i, f in enumerate(facts) if f.name == "CycleCompleted"]
    first = min((int(facts[i].record["inbox_from"]) for i in ends), default=0)
    last = max((int(facts[i].record["inbox_to"]) for i in ends), default=-1)
    inbox, log_start = _read_inbox(settings, index, last + 1)
    replica = _Shard(settings, shard, index, facts)
    previous_to, position = min(first, log_start) - 1, 0
    for end in ends:
        if advance is not None:
            advance(1)
        cycle = facts[end].record
        low, high = int(cycle["inbox_from"]), int(cycle["inbox_to"])
        report.cycles += 1
        if low < log_start:
            replica.fold_to(end + 1)
            report.unavailable += 1
            previous_to, position = high, end + 1
            continue
        between = [r for r in inbox if previous_to < r.offset < low]
        if between:
            report.between += len(between)
            extra = replica.decide_batch(between, position)
            if extra:
                where = f"inbox {between[0].offset}..{between[-1].offset} (between cycles)"
                _diverged(report, where,
                          "records outside any recorded batch decided to facts", [], extra)
                replica.resync(position)
        batch = [r for r in inbox if low <= r.offset <= high]
        report.requests += len(batch)
        recorded = [(f.name, _plain(f.record)) for f in facts[position:end + 1]]
        redecided = [scheduler.as_record(f) for f in replica.decide_batch(batch, position)]
        report.facts += len(recorded)
        report.checked += 1
        if [(n, _plain(r)) for n, r in redecided] != recorded:
            _diverged(report, f"inbox {low}..{high} (shard_seq {facts[position].seq}.."
                      f"{facts[end].seq})", "the batch decides differently", recorded, redecided)
            replica.resync(end + 1)
        else:
            replica.folded, replica.cycles = end + 1, replica.cycles + 1
            if replica.cycles % replica.CHECKPOINT_EVERY == 0:
                replica.checkpoint = (_copy(replica.state), replica.folded)
        previous_to, position = high, end + 1
    if position < len(facts):
        _diverged(report, f"shard_seq {facts[position].seq}..", "facts after the last "
                  "CycleCompleted (a batch that was never closed)", [], [])
    report.seconds = time.perf_counter() - started
    return report


def _diverged(report: ShardReport, where: str, what: str, recorded: list[Any],
              redecided: list[Any]) -> None:
    first = next((i for i, (a, b) in enumerate(zip(recorded, redecided, strict=False))
                  if a != _plain_pair(b)), min(len(recorded), len(redecided)))
    report.divergences.append({
        "where": where, "what": f"{what}; first difference at fact {first} "
                                f"({len(recorded)} recorded, {len(redecided)} re-decided)",
        "recorded": recorded[first] if first < len(recorded) else None,
        "redecided": _plain_pair(redecided[first]) if first < len(redecided) else None,
    })


def _plain_pair(pair: Any) -> Any:
    name, record = pair if isinstance(pair, tuple) else scheduler.as_record(pair)
    return (name, _plain(record))


def _read_inbox(settings: Settings, index: int,
                end: int) -> tuple[list[InboxRecord], int]:
    """Records ``[log start, end)`` of one inbox partition, as the worker read them."""
    topic = Topics(settings).shard_inbox
    reader = consumer(settings.bootstrap, overrides={"isolation.level": "read_uncommitted"})
    out: list[InboxRecord] = []
    try:
        low, high = reader.get_watermark_offsets(TopicPartition(topic, index), timeout=10)
        end = min(end, high)
        if end <= low:
            return out, low
        reader.assign([TopicPartition(topic, index, low)])
        while True:
            messages: list[Any] = reader.consume(num_messages=5000, timeout=0.1)
            if not messages:
                position = reader.position([TopicPartition(topic, index)])[0].offset
                if position >= end:
                    return out, low
                continue
            for message in messages:
                if message.error() is not None:
                    continue
                offset = int(message.offset())
                if offset >= end:
                    return out, low
                headers = tuple((k, bytes(v or b"")) for k, v in message.headers() or ())
                out.append(InboxRecord(offset, int(message.timestamp()[1]),
                                       bytes(message.value() or b""), headers))
                if offset + 1 >= end:
                    return out, low
    finally:
        reader.close()
