"""Given facts / when a request / then facts: the core's test idiom.

    given(registered("n1", cpus=4), queued(J1, spec())).when(schedule_pass(), T0).then(...)

Facts passed to ``given`` may carry placeholder meta (:data:`M`); ``given`` re-stamps them with
a gap-free ``shard_seq`` and valid event SLUIDs before evolving them. ``then`` compares the
decided facts with the expected ones field by field, ignoring the meta (which
``test_meta`` checks on its own). The decision fields added in release v2
(:data:`DECISION_FIELDS`) are compared apart, and only where the expected fact sets them: a
scenario written before them says nothing about them (``test_decision_fields`` checks them).
"""

from __future__ import annotations

import dataclasses
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from scheduler import (
    ClusterConfig,
    Fact,
    JobQueued,
    JobSpec,
    JobStarted,
    NodeRegistered,
    NodeStateChanged,
    Request,
    ShardState,
    decide,
    evolve,
    initial_state,
    node_state,
    parse_config,
    schedule,
)
from schemas.sluid import compose, format_sluid

T0 = 1_700_000_000_000
SHARD = "shard-test"
CLUSTER = 7
META_FIELDS = ("event_sluid", "shard", "shard_seq", "time_ms")
DECISION_FIELDS: dict[str, tuple[str, ...]] = {
    "JobQueued": ("partition", "qos", "account", "time_limit_s", "requeue", "cpus_per_node"),
    "JobStarted": ("alloc_cpus", "alloc_mem_mb", "alloc_gpus"),
    "JobEnded": ("job_state", "requeue_reason", "held_nodes", "defer_release"),
    "JobRequeued": ("pending_reason",),
    "ConfigApplied": ("default_partition", "blocks"),
}
"""Per fact: the fields (release v2) that say what the core decided."""
M: dict[str, Any] = {
    "event_sluid": format_sluid(compose(CLUSTER, 1, 0)),
    "shard": SHARD,
    "shard_seq": 0,
    "time_ms": T0,
}


def at(time_ms: int) -> dict[str, Any]:
    """Placeholder meta at a given time."""
    return {**M, "time_ms": time_ms}


def sluid(n: int, ms: int = T0) -> str:
    """A readable test SLUID: cluster 3 (never the shard's), time ``ms``, sequence ``n``."""
    return format_sluid(compose(3, ms, n))


def node_sluid(name: str) -> str:
    """A stable node SLUID per node name (cluster 4), distinct for distinct names: the CRC-32
    of the name picks the millisecond and the sequence (a sum of the characters gave ``a2`` and
    ``b1`` the same SLUID, so a "three-node" cluster of such names had two nodes)."""
    crc = zlib.crc32(name.encode())
    return format_sluid(compose(4, T0 - 10_000 - (crc >> 10), crc & 0x3FF))


def spec(**fields: Any) -> JobSpec:
    """A job spec: user ``alice``, command ``true``, overridden by ``fields``."""
    base: dict[str, Any] = {"user": "alice", "command": ("true",)}
    base.update(fields)
    return JobSpec(**base)


def queued(
    job_sluid: str,
    job_spec: JobSpec | None = None,
    job_id: int = 0,
    time_ms: int = T0,
    **extra: Any,
) -> JobQueued:
    """JobQueued with placeholder meta; ``job_id`` 0 = next in order of ``given``."""
    return JobQueued(
        **at(time_ms), job_sluid=job_sluid, job_id=job_id, spec=job_spec or spec(), **extra
    )


def registered(
    name: str,
    cpus: int = 1,
    mem_mb: int = 0,
    gpus: int = 0,
    gpu_type: str = "",
    partitions: tuple[str, ...] = ("main",),
) -> list[Fact]:
    """A node joining and going IDLE (two facts)."""
    sluid_ = node_sluid(name)
    return [
        NodeRegistered(
            **M,
            node_sluid=sluid_,
            name=name,
            cpus=cpus,
            mem_mb=mem_mb,
            gpus=gpus,
            gpu_type=gpu_type,
            features=(),
            partitions=partitions,
        ),
        NodeStateChanged(**M, node_sluid=sluid_, name=name, state="IDLE"),
    ]


def started(job_sluid: str, names: tuple[str, ...], limit_s: int, job_id: int) -> JobStarted:
    """``JobStarted`` of ``job_sluid`` (job ``job_id``, alice's, in ``main``) on ``names`` with
    a time limit of ``limit_s``; its run SLUID follows from ``job_id``."""
    return JobStarted(
        **M, job_sluid=job_sluid, job_id=job_id, run_sluid=sluid(500 + job_id),
        restart_count=0, nodes=names, node_sluids=tuple(node_sluid(n) for n in names),
        partition="main", user="alice", time_limit_s=limit_s, submit_ms=T0,
    )


def nodes(prefix: str, count: int, **kwargs: Any) -> list[Fact]:
    """``count`` nodes ``prefix1..prefixN`` registered and IDLE."""
    return [f for i in range(1, count + 1) for f in registered(f"{prefix}{i}", **kwargs)]


@dataclass(frozen=True)
class SchedulePass:
    """A pseudo-request: run one scheduling pass."""


def schedule_pass() -> SchedulePass:
    return SchedulePass()


def strip(fact: Fact) -> tuple[str, dict[str, Any]]:
    """A fact without its meta and its decision fields, for comparison."""
    values = {f.name: getattr(fact, f.name) for f in dataclasses.fields(fact)}
    for name in (*META_FIELDS, *DECISION_FIELDS.get(type(fact).__name__, ())):
        values.pop(name)
    return type(fact).__name__, values


def decisions(fact: Fact, said_only: bool = False) -> dict[str, Any]:
    """The decision fields of ``fact`` (only those off their defaults with ``said_only``)."""
    name = type(fact).__name__
    out = {}
    for spec in dataclasses.fields(fact):
        if spec.name not in DECISION_FIELDS.get(name, ()):
            continue
        value = getattr(fact, spec.name)
        default = (
            spec.default_factory()  # type: ignore[misc]
            if spec.default is dataclasses.MISSING
            else spec.default
        )
        if not said_only or value != default:
            out[spec.name] = value
    return out


def restamp(state: ShardState, fact: Fact) -> Fact:
    """Give a placeholder fact the next meta of ``state``."""
    seq = state.shard_seq + 1
    ms = max(fact.time_ms, state.now_ms)
    event = format_sluid(compose(CLUSTER, ms, seq % 1024))
    changes: dict[str, Any] = {
        "event_sluid": event,
        "shard": state.shard,
        "shard_seq": seq,
        "time_ms": ms,
    }
    if isinstance(fact, JobQueued) and fact.job_id == 0:
        changes["job_id"] = state.meta.next_job_id
    return dataclasses.replace(fact, **changes)


class Scenario:
    """A state built from given facts, ready for one request."""

    def __init__(self, facts: tuple[Fact | list[Fact], ...], config: ClusterConfig | None):
        self.state = initial_state(SHARD, CLUSTER, config)
        for item in facts:
            for fact in item if isinstance(item, list) else [item]:
                self.state = evolve(self.state, restamp(self.state, fact))

    def when(self, request: Request | SchedulePass, now_ms: int = T0) -> Outcome:
        if isinstance(request, SchedulePass):
            decided = schedule(self.state, now_ms)
        else:
            decided = decide(self.state, request, now_ms)
        # every decision's facts are numbered one after another in the order returned (a
        # handler that built them in another order left a repeated number in the ledger, which
        # replay refuses: h3, 2026-12-07); the shard's cycle refuses it too (FactOrderError)
        first = self.state.meta.shard_seq + 1
        numbers = [fact.shard_seq for fact in decided]
        assert numbers == list(range(first, first + len(decided))), (
            f"facts numbered {numbers}, expected from {first} in the order returned: "
            f"{[type(fact).__name__ for fact in decided]}")
        return Outcome(self.state, decided)


class Outcome:
    """The facts a request led to, with assertions."""

    def __init__(self, state: ShardState, facts: list[Fact]) -> None:
        self.state, self.facts = state, facts
        self._folded = False

    def then(self, *expected: Fact) -> Outcome:
        got = [strip(f) for f in self.facts]
        want = [strip(f) for f in expected]
        assert len(got) == len(want), f"expected {len(want)} facts, got {len(got)}:\n" + "\n".join(
            map(str, got)
        )
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            assert g == w, f"fact {i} differs:\n got  {g}\n want {w}"
        for i, (g, w) in enumerate(zip(self.facts, expected, strict=True)):
            said = decisions(w, said_only=True)
            assert {k: decisions(g)[k] for k in said} == said, f"fact {i}'s decision differs"
        return self

    def then_nothing(self) -> Outcome:
        return self.then()

    def then_kinds(self, *kinds: type) -> Outcome:
        assert [type(f) for f in self.facts] == list(kinds), [type(f).__name__ for f in self.facts]
        return self

    def matching(self, kind: type) -> list[Any]:
        return [f for f in self.facts if isinstance(f, kind)]

    def evolved(self) -> ShardState:
        """The state after the facts (folded once, however often this is called)."""
        if not self._folded:
            for fact in self.facts:
                self.state = evolve(self.state, fact)
            self._folded = True
        return self.state

    def then_nodes(self, **states: str) -> Outcome:
        """Evolve the facts; each named node then shows the given (derived) state."""
        state = self.evolved()
        shown = {name: node_state(state, name) for name in states}
        assert shown == states, shown
        return self

    def check(self, predicate: Callable[[list[Fact]], bool]) -> Outcome:
        assert predicate(self.facts), self.facts
        return self


def given(*facts: Fact | list[Fact], config: ClusterConfig | str | None = None) -> Scenario:
    """A scenario whose state is the fold of ``facts`` (under ``config``: object or YAML)."""
    if isinstance(config, str):
        config = parse_config(config)
    return Scenario(facts, config)
