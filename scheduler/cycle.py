"""One scheduling cycle: ``run_cycle(state, requests, inbox)`` → :class:`CycleResult`.

The shard runner, ``sluice verify`` and the simulator all run this function, so the cycle that
is verified is the cycle that ran. In order:

1. each request is decided at ``max(state.now_ms, its time)`` (the clock never goes back) and
   its facts are folded with ``evolve`` (node commands derived right after each fact);
2. one scheduling pass (``schedule``) at the cycle's time, its facts folded the same way;
3. the cycle closes with a ``CycleCompleted`` fact when :func:`cycle_closes` says so.

**The close rule** (:func:`cycle_closes`), one for every caller: a cycle closes when it has
something to record or the close itself changes the state — the cycle has inbox records to
account for and decided facts (the ledger must say which inbox offsets its facts came from) or
its shard's last close is :data:`IDLE_CLOSE_MS` old (a quiet shard shows it is alive), or an
ended job is due to be purged (MinJobAge), or fair-share usage is due to accrue. A simulation
has no inbox (``inbox`` None): its cycles close only for a purge or an accrual and count
themselves (``inbox_from`` = ``inbox_to`` = the last closed cycle + 1). A closed cycle changes
no scheduling decision by itself, so both give the same schedule.

**A request can fail, the cycle cannot.** When deciding a request, encoding its facts (with the
shell's ``encode``, before anything is folded: encode first, then write) or folding them
raises, that request alone becomes a refusal with reason ``InternalError`` — a ``JobRejected``
for a submission, a ``RequestDenied`` for any other request — and the cycle goes on with the
next one. A request whose facts were partly folded is rolled back first: the state is rebuilt
with the shell's ``reload`` (the state at the start of the cycle) and the facts of the requests
before it are folded again (deterministic, so the same state). When the scheduling pass raises
(or its facts do not encode or fold), the cycle emits no pass (``pass_failed``) and closes as
usual; the next cycle tries again. Every failure is returned (:class:`Failure`, with the
request's inbox position) for the shell to log and count. Without ``reload`` a failure while
folding is raised (the simulator: its own inputs, nothing to protect).

Pure: no clock, no I/O; ``encode``, ``reload`` and ``observe`` are the shell's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, NamedTuple, TypeVar

from scheduler.access.identity import Attributed
from scheduler.commands import node_commands
from scheduler.decide import decide, request_nonce
from scheduler.evolve import evolve
from scheduler.jobs.retention import cycle_changes_state
from scheduler.records import (
    CloseCycle,
    Fact,
    JobRejected,
    JobTestAnswered,
    NodeCommand,
    Request,
    RequestDenied,
    SubmitJob,
    TestSubmitJob,
)
from scheduler.schedule import schedule
from scheduler.shard.reasons import RejectionReason
from scheduler.shard.stamp import Stamper
from scheduler.shard.state import ShardState

__all__ = [
    "CycleResult",
    "FactOrderError",
    "Failure",
    "InboxRange",
    "Timed",
    "cycle_closes",
    "run_cycle",
]

T = TypeVar("T")

IDLE_CLOSE_MS = 10_000
"""A shard with an inbox closes a cycle at least this often, decided or not, so the age of its
last ``CycleCompleted`` tells the views that it is alive (``sluice status``, the
``sluice_shard_cycle_age_seconds`` metric and its alert)."""

DETAIL_MAX = 1000
"""Characters of an exception's text kept in an ``InternalError`` fact's detail."""


class FactOrderError(RuntimeError):
    """A decision's facts are not numbered one after another in the order it returned them:
    kept, the ledger would hold a gap or a number twice (replay refuses it). The cycle rolls
    back and refuses the request (``InternalError``) instead."""


class InboxRange(NamedTuple):
    """The inbox records a cycle applies: partition and first/last offset (inclusive)."""

    partition: int
    first: int
    last: int


class Timed(NamedTuple):
    """One request of a cycle, with its inbox position and its (record) time."""

    position: int
    time_ms: int
    request: Request


@dataclass(frozen=True, slots=True)
class Failure:
    """A request (or the pass, ``position`` -1) that raised; the shell logs it."""

    position: int
    request: str
    stage: str  # decide | encode | fold | refuse | pass
    error: BaseException


@dataclass(slots=True)
class CycleResult(Generic[T]):
    """What one cycle did: the new state, its facts and node commands (and their encodings,
    empty without ``encode``), the failures, whether the pass failed and the cycle closed."""

    state: ShardState
    now_ms: int
    facts: list[Fact]
    commands: list[NodeCommand]
    encoded_facts: list[T]
    encoded_commands: list[T]
    failures: list[Failure]
    pass_failed: bool = False
    closed: bool = False


def cycle_closes(state: ShardState, now_ms: int, decided: bool,
                 inbox: InboxRange | None) -> bool:
    """The close rule (see the module docstring)."""
    if inbox is not None and (decided or now_ms - state.meta.cycle_ms >= IDLE_CLOSE_MS):
        return True
    return cycle_changes_state(state, now_ms)


class _Cycle(Generic[T]):
    """The running cycle: the result so far and the shell's hooks (a simulation runs this
    some 100,000 times per trace: the common path does no work it does not need)."""

    __slots__ = ("encode", "observe", "out", "reload", "with_commands")

    def __init__(self, state: ShardState, encode: Callable[[Any], T] | None,
                 reload: Callable[[], ShardState] | None,
                 observe: Callable[[ShardState, Fact], None] | None, commands: bool) -> None:
        self.out: CycleResult[T] = CycleResult(state, state.now_ms, [], [], [], [], [])
        self.encode, self.reload, self.observe = encode, reload, observe
        self.with_commands = commands

    def encoded(self, items: Sequence[Any]) -> list[T] | None:
        encode = self.encode
        return None if encode is None else [encode(item) for item in items]

    def keep(self, facts: list[Fact], encoded: list[T] | None) -> None:
        """Fold ``facts`` and keep them (with their encodings and node commands); on an
        exception roll the state back and re-raise."""
        out = self.out
        state, observe, with_commands = out.state, self.observe, self.with_commands
        commands: list[NodeCommand] = []
        try:
            seq = state.meta.shard_seq
            for fact in facts:
                seq += 1
                if fact.shard_seq != seq:  # a handler that built its facts out of order
                    raise FactOrderError(f"{type(fact).__name__} is numbered {fact.shard_seq} "
                                         f"where the next fact of shard {state.meta.shard} is "
                                         f"{seq}: its facts were built in another order")
                state = evolve(state, fact)
                if with_commands:
                    commands += node_commands(state, fact)
                if observe is not None:
                    observe(state, fact)
            written = self.encoded(commands) if commands else None
        except Exception:
            self.roll_back()
            raise
        out.state = state
        out.facts += facts
        if commands:
            out.commands += commands
            if written:
                out.encoded_commands += written
        if encoded:
            out.encoded_facts += encoded

    def roll_back(self) -> None:
        """The state at the start of the cycle with the kept facts folded again."""
        if self.reload is None:
            return
        state = self.reload()
        for fact in self.out.facts:
            state = evolve(state, fact)
        self.out.state = state

    def request(self, item: Timed, now_ms: int) -> None:
        stage = "decide"
        try:
            facts = decide(self.out.state, item.request, now_ms)
            if facts:
                stage = "encode"
                encoded = self.encoded(facts)
                stage = "fold"
                self.keep(facts, encoded)
        except Exception as error:
            if stage == "fold" and self.reload is None:
                raise
            name = type(getattr(item.request, "request", item.request)).__name__
            self.out.failures.append(Failure(item.position, name, stage, error))
            try:
                refusal = internal_error(self.out.state, item.request, now_ms, error)
                self.keep(refusal, self.encoded(refusal))
            except Exception as again:  # even the refusal cannot be written: log only
                self.out.failures.append(Failure(item.position, name, "refuse", again))

    def scheduling_pass(self, now_ms: int) -> None:
        stage = "pass"
        try:
            facts = schedule(self.out.state, now_ms)
            if facts:
                stage = "encode"
                encoded = self.encoded(facts)
                stage = "fold"
                self.keep(facts, encoded)
        except Exception as error:
            if stage == "fold" and self.reload is None:
                raise
            self.out.failures.append(Failure(-1, "schedule", stage, error))
            self.out.pass_failed = True


def run_cycle(
    state: ShardState,
    requests: Sequence[Timed],
    inbox: InboxRange | None,
    now_ms: int = 0,
    *,
    encode: Callable[[Any], T] | None = None,
    reload: Callable[[], ShardState] | None = None,
    observe: Callable[[ShardState, Fact], None] | None = None,
    commands: bool = True,
) -> CycleResult[T]:
    """Run one cycle (see the module docstring); ``state`` is updated in place.

    Request *i* is decided at the latest of ``state.now_ms`` and the times of requests 0..i;
    the pass and the close at the latest of those and ``now_ms`` (the batch's time: an inbox
    record that is not a request still moves the clock; a simulator's wake-up has no request).
    ``encode`` turns a fact or node command into what the shell writes (it must raise on what
    cannot be written); ``reload`` gives the state as it was when the cycle began (for a
    roll-back); ``observe`` sees each fact with the state right after it; ``commands`` False
    skips node commands (the simulator answers facts itself).
    """
    cycle: _Cycle[T] = _Cycle(state, encode, reload, observe, commands)
    now = state.now_ms
    for item in requests:
        now = max(now, item.time_ms)
        cycle.request(item, now)
    now = max(now, now_ms)
    cycle.scheduling_pass(now)
    out = cycle.out
    if cycle_closes(out.state, now, bool(out.facts), inbox):
        last = out.state.meta.inbox_offset + 1
        close = CloseCycle(
            inbox_partition=inbox.partition if inbox is not None else 0,
            inbox_from=inbox.first if inbox is not None else last,
            inbox_to=inbox.last if inbox is not None else last,
        )
        facts = decide(out.state, close, now)
        cycle.keep(facts, cycle.encoded(facts))
        out.closed = True
    out.now_ms = now
    return out


def internal_error(state: ShardState, request: Request, now_ms: int,
                   error: BaseException) -> list[Fact]:
    """The refusal of a request whose decision raised: ``JobRejected`` for a submission,
    ``JobTestAnswered`` for a test,
    ``RequestDenied`` for anything else, reason ``InternalError``, the exception as detail."""
    reason = RejectionReason.INTERNAL_ERROR
    text = f"{type(error).__name__}: {error}"[:DETAIL_MAX]
    detail = text.encode("utf-8", "replace").decode("utf-8")
    meta = Stamper(state, now_ms).meta()
    requester = ""
    if isinstance(request, Attributed):  # decided for a verified identity: name the request
        requester, request = request.identity.user, request.request
    if isinstance(request, SubmitJob):
        return [JobRejected(**meta, job_sluid=request.job_sluid, reason=reason.name,
                            detail=detail, retryable=reason.retryable, nonce=request.nonce)]
    if isinstance(request, TestSubmitJob):
        return [JobTestAnswered(**meta, job_sluid=request.job_sluid, nonce=request.nonce,
                                user=request.spec.user, reason=reason.name, detail=detail)]
    return [RequestDenied(**meta, request=type(request).__name__,
                          subject_sluid=_subject(request),
                          requester=requester or _text(request, "user"),
                          reason=reason.name, detail=detail, nonce=request_nonce(request))]


def _subject(request: Request) -> str:
    for name in ("job_sluid", "node_sluid", "config_sluid", "request_sluid", "name"):
        value = _text(request, name)
        if value:
            return value
    return ""


def _text(request: Request, name: str) -> str:
    value = getattr(request, name, "")
    return value.encode("utf-8", "replace").decode("utf-8") if isinstance(value, str) else ""
