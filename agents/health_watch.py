"""The health agent's judgement, without faust: who is silent, who answers again, and when the
observer itself cannot tell.

A :class:`HealthWatch` is told of every heartbeat (:meth:`HealthWatch.heard`) and asked, on
each timer tick, which nodes to report (:meth:`HealthWatch.check`). Times are seconds of the
shell's wall clock, passed in (tests pass their own). The rules, in the order they apply:

0. **Times.** A heartbeat counts at the time its node sent it (``time_ms``, never later than
   its arrival, nor earlier than a tenth of the timeout before it: ``HealthAgent._alive_ms``,
   so a node whose clock runs behind is not taken for silent), and a node is judged only up to
   what the observer has seen of its heartbeat partition: the send time of the agent's last
   probe to come back through it, or of the newest heartbeat read from it (capped at its
   arrival), since a partition is read in order. A partition that brought a heartbeat since the
   last round is not probed (:meth:`HealthWatch.probe_partitions`): on an idle cluster the
   heartbeats are the probes, and a probe goes only where a watched node fell quiet (not heard
   for half a timeout: :meth:`HealthWatch.quiet_partitions`), plus one when nothing came
   through for half of ``blind_s``, so that the stream is known to flow (rule 2).
   A consumer that lags behind, or reads a backlog in bursts, therefore sees no false silence.
1. **Grace after the observer's own gaps.** A node is judged only on heartbeats that could have
   reached the observer: its silence counts from the latest of its last heartbeat, the moment
   this watch first saw its entry (a worker start or a failover: a new owner of the table's
   partition inherits old times), and the end of the observer's last gap. A gap is a tick that
   comes more than ``stall_s`` after the one before (an event-loop stall, SIGSTOP, a suspended
   VM: Slurm's grace after a controller restart), or a heartbeat that ends a blind spell.
2. **Blind, not everyone dead.** The agent sends itself a probe through the heartbeat topic
   (:meth:`HealthWatch.probe_heard` when it comes back). While nothing came through for
   ``blind_s`` (no probe, no heartbeat), the observer is blind (a broker outage, a stuck
   consumer): nobody is judged, and sight resumes with the next record, from which rule 1
   counts. Until the first probe has come back, "nothing came through" means no heartbeat from
   any of two or more watched nodes (a single node's silence is its own).
3. **Silent nodes** (silent for ``timeout_s`` or more) are reported with how many of the watched
   nodes fell silent at once with each (silent for at least half the timeout, so deaths a
   moment apart count together, and last heard within a timeout of its last heartbeat, so a
   node that died long before does not), of how many watched then (not counting those already
   silent a timeout before it), so the core can tell a suspected partition from a failure
   (``NodeFailureGuardShare``); a node is reported again every ``report_again_s`` while it
   stays silent.
4. **Answering again.** A heartbeat from a node this watch reported, or one that arrives more
   than ``timeout_s`` after the node's previous heartbeat, asks for a ``NodeResponding``.
"""

from __future__ import annotations

import logging
import os
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DEFAULT_TIMEOUT_S", "CheckResult", "HealthWatch", "Silent", "check_interval_s",
           "heartbeat_interval_s", "next_beat_in_s", "node_timeout_s", "store_due"]

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 10.0
"""``SLUICE_NODE_TIMEOUT``'s default (Slurm's ``SlurmdTimeout`` is 300 s)."""


def node_timeout_s() -> float:
    """``SLUICE_NODE_TIMEOUT``: seconds of silence after which a node is reported failed (the
    worker's health agent) and a third of which a node daemon heartbeats by default."""
    text = os.environ.get("SLUICE_NODE_TIMEOUT", "")
    try:
        value = float(text) if text else DEFAULT_TIMEOUT_S
    except ValueError:
        value = 0.0
    if not value > 0 or value == float("inf"):
        log.error("SLUICE_NODE_TIMEOUT=%r is not a positive number of seconds; using %g",
                  text, DEFAULT_TIMEOUT_S)
        return DEFAULT_TIMEOUT_S
    return value


def heartbeat_interval_s(timeout_s: float) -> float:
    """A node daemon's default heartbeat interval: a third of the node timeout, as slurmctld
    pings each node every ``SlurmdTimeout / 3``: two heartbeats may be lost or late before a
    node is reported, and an idle cluster's heartbeat traffic is no more than that needs
    (its cost is proportional to it, docs/benchmarks.md)."""
    return timeout_s / 3


def next_beat_in_s(now_s: float, interval_s: float) -> float:
    """How long a node daemon waits for its next heartbeat: until the next multiple of
    ``interval_s`` on the wall clock (``now_s``), so never longer than the interval.

    Every node of a cluster then heartbeats at the same instants, as slurmctld pings all its
    nodes in one sweep every ``SlurmdTimeout / 3``: the worker reads the heartbeats of a round
    in a few fetches instead of one fetch each, spread over the interval (issue 17: that round
    trip per heartbeat was most of an idle worker's CPU). Failure detection is unchanged: a
    heartbeat still follows the one before within the interval (only the first, at the
    start, may come sooner)."""
    return interval_s - now_s % interval_s if interval_s > 0 else 0.0


def store_due(stored: dict[str, Any] | None, name: str, partition: int, sent_ms: int,
              refresh_ms: int) -> bool:
    """Whether the health agent writes a heartbeat to its table (and the table's changelog): a
    node's first, one that changes its name or partition, or one ``refresh_ms`` (half the
    timeout) newer than the stored time. The others only update the agent's memory
    (``agents.health_seen``), which the deadline check reads: a heartbeat costs a
    changelog record about once per half timeout, not each time (issue 17). A new owner of the
    partition reads a stored time at most that old, and judges a node from its own first sight
    of it anyway (rule 1)."""
    return (stored is None or stored.get("name") != name
            or int(stored.get("partition", -1)) != partition
            or sent_ms - int(stored["seen_ms"]) >= refresh_ms)


CHECK_INTERVAL_S = 0.5
"""The check interval of a 5 s timeout (:func:`check_interval_s`)."""


def check_interval_s(timeout_s: float) -> float:
    """How often to check deadlines (and probe each heartbeat partition) for a node timeout:
    a tenth of it, between 0.1 and 1 s. Detection then lags the timeout by at most a tenth,
    and an idle worker with the default 10 s timeout checks once a second, not twice."""
    return min(1.0, max(0.1, timeout_s / 10))


REPORT_AGAIN_S = 30.0


@dataclass(frozen=True, slots=True)
class Silent:
    """A node to report: its SLUID, name, how long it has been silent, and how many of the
    watched nodes fell silent at once with it, of how many (rule 3, :class:`_AtOnce`)."""

    node_sluid: str
    name: str
    silent_s: float
    silent_nodes: int = 1
    watched_nodes: int = 1


@dataclass(frozen=True, slots=True)
class CheckResult:
    """One check: the nodes to report now; with reports, the widest silence among them (its
    at-once and watched counts), else how many nodes are silent of how many watched."""

    report: tuple[Silent, ...] = ()
    silent: int = 0
    watched: int = 0
    blind: bool = False
    stalled_s: float = 0.0


@dataclass(slots=True)
class HealthWatch:
    """The judgement of one health agent (see the module for the rules)."""

    timeout_s: float
    started_s: float
    stall_s: float = 0.0
    blind_s: float = 0.0
    report_again_s: float = REPORT_AGAIN_S
    judge_from_s: float = field(init=False)
    last_tick_s: float = field(init=False)
    last_heard_s: float = field(init=False)
    probing: bool = field(init=False, default=False)
    blind: bool = field(init=False, default=False)
    noticed: dict[str, float] = field(init=False, default_factory=dict)
    reported: dict[str, float] = field(init=False, default_factory=dict)
    horizon: dict[int, float] = field(init=False, default_factory=dict)
    fresh: set[int] = field(init=False, default_factory=set)

    def __post_init__(self) -> None:
        """Defaults: a gap or a blind spell is half a timeout (at least two ticks)."""
        if self.timeout_s <= 0:
            raise ValueError(f"the node timeout must be positive, not {self.timeout_s}")
        half = max(self.timeout_s / 2, 2 * check_interval_s(self.timeout_s))
        self.stall_s = self.stall_s or half
        self.blind_s = self.blind_s or half
        self.judge_from_s = self.started_s  # nobody is judged before one timeout of sight
        self.last_tick_s = self.started_s
        self.last_heard_s = self.started_s

    def probe_heard(self, now_s: float, partition: int = -1, sent_s: float | None = None) -> None:
        """The agent's own probe (sent at ``sent_s``) came back through heartbeat partition
        ``partition``: the stream flows, and everything sent there before ``sent_s`` is seen."""
        self.probing = True
        self._flowing(now_s)
        if sent_s is not None:
            self.horizon[partition] = max(self.horizon.get(partition, sent_s), sent_s)

    def probe_partitions(self, owned: Iterable[int], watched: Iterable[int],
                         now_s: float) -> list[int]:
        """The heartbeat partitions to probe this round: each owned one that holds a watched
        node and brought no heartbeat since the last round, else (none such) the lowest owned
        one when nothing came through for half of ``blind_s``, so that something comes back
        before the observer would count itself blind while the stream flows. On an idle
        cluster that is one probe a round of heartbeats, not one a check (issue 17): a probe
        is a produce and a fetch in the worker, and it only says what the round's heartbeats
        said already."""
        owned = sorted(set(owned))
        wanted = [p for p in owned if p in set(watched) and p not in self.fresh]
        self.fresh.clear()
        if wanted:
            return wanted
        return owned[:1] if now_s - self.last_heard_s >= self.blind_s / 2 else []

    def quiet_partitions(self, entries: Mapping[str, tuple[str, float]], now_s: float,
                         partitions: Mapping[str, int]) -> list[int]:
        """The heartbeat partitions of the watched nodes (``node SLUID → (name, last heartbeat
        time)``) not heard for half a timeout: where a probe may be needed (rule 0). The nodes
        of an idle cluster heartbeat together every third of a timeout (``next_beat_in_s``), so
        between two rounds every partition is without news; probing them all each check was
        six probes a second through the topic for nothing (issue 17). A node that fell silent
        is quiet from half a timeout on, so its partition is probed every check before it
        could be judged, and it is judged as soon as before."""
        return sorted({partitions[node] for node, (_name, seen_s) in entries.items()
                       if node in partitions and now_s - seen_s >= self.timeout_s / 2})

    def _flowing(self, now_s: float) -> None:
        if self.blind or now_s - self.last_heard_s > self.blind_s:
            self.judge_from_s = max(self.judge_from_s, now_s)  # sight resumes now
            self.blind = False
        self.last_heard_s = max(self.last_heard_s, now_s)

    def heard(
        self, node_sluid: str, previous_seen_s: float | None, now_s: float,
        seen_s: float | None = None, partition: int | None = None,
    ) -> bool:
        """A heartbeat of ``node_sluid`` sent at ``seen_s`` (default: ``now_s``) arrived at
        ``now_s`` through heartbeat ``partition`` (if known: it moves that partition's horizon,
        as a probe would); True if it answers again (NodeResponding)."""
        self._flowing(now_s)
        seen_s = now_s if seen_s is None else seen_s
        if partition is not None:
            sent_s = min(seen_s, now_s)
            self.horizon[partition] = max(self.horizon.get(partition, sent_s), sent_s)
            self.fresh.add(partition)
        was_reported = self.reported.pop(node_sluid, None) is not None
        gap = previous_seen_s is not None and seen_s - previous_seen_s > self.timeout_s
        return was_reported or gap

    def check(
        self,
        entries: Mapping[str, tuple[str, float]],
        now_s: float,
        partitions: Mapping[str, int] | None = None,
    ) -> CheckResult:
        """Judge the watched nodes (``node SLUID → (name, last heartbeat time)``) at ``now_s``;
        a node whose heartbeat partition is known (``partitions``) is judged up to what the
        observer has seen of that partition (the send time of its last probe back)."""
        stalled_s = now_s - self.last_tick_s
        self.last_tick_s = now_s
        if stalled_s > self.stall_s:
            self.judge_from_s = max(self.judge_from_s, now_s)
        else:
            stalled_s = 0.0
        for gone in set(self.noticed) - set(entries):
            del self.noticed[gone]  # revoked: a later assignment is a new start for it
        for node in entries:
            self.noticed.setdefault(node, now_s)
        watched = len(entries)
        if (self.probing or watched >= 2) and now_s - self.last_heard_s > self.blind_s:
            self.blind = True
        if self.blind:
            return CheckResult(watched=watched, blind=True, stalled_s=stalled_s)
        silent: list[tuple[str, str, float, float]] = []  # node, name, silent for, last beat
        quiet: list[float] = []  # last beats of the nodes silent for half a timeout or more
        for node, (name, seen_s) in sorted(entries.items()):
            since = max(seen_s, self.noticed[node], self.judge_from_s)
            seen_until = now_s
            if partitions is not None and (p := partitions.get(node, -1)) in self.horizon:
                seen_until = min(now_s, self.horizon[p])  # a lagging consumer sees the past
            if seen_until - since >= self.timeout_s / 2:
                quiet.append(seen_s)
            if seen_until - since >= self.timeout_s:
                silent.append((node, name, seen_until - seen_s, seen_s))
        due = [
            s for s in silent
            if now_s - self.reported.get(s[0], -self.report_again_s) >= self.report_again_s
        ]
        if not due:
            return CheckResult((), len(silent), watched, stalled_s=stalled_s)
        at_once = _AtOnce(quiet, [seen_s for _name, seen_s in entries.values()], self.timeout_s)
        report = tuple(Silent(node, name, silent_s, *at_once.counts(seen_s))
                       for node, name, silent_s, seen_s in due)
        for s in report:
            self.reported[s.node_sluid] = now_s
        widest = max(report, key=lambda s: (s.silent_nodes, -s.watched_nodes))
        return CheckResult(report, widest.silent_nodes, widest.watched_nodes, stalled_s=stalled_s)


class _AtOnce:
    """Who fell silent "at once" with a node, and who was watched then (rule 3).

    For a node whose last heartbeat was at ``t``: the silent nodes (silent for half a timeout
    or more) whose last heartbeat is within one timeout of ``t`` fell silent with it, and the
    watched nodes are those heard since ``t`` minus one timeout — a node already silent
    before that had died before, and is neither part of this silence nor of the nodes it is a
    share of. So a node that died an hour ago, or an old incarnation of a node whose daemon
    started again under a new SLUID, does not make a later single death look like a
    partition; and the nodes of a partition that lasts keep counting together (their last
    heartbeats stay as close as they were), so the suspicion holds as long as the silence.
    """

    def __init__(self, quiet: list[float], everyone: list[float], timeout_s: float) -> None:
        self.quiet, self.everyone, self.timeout_s = sorted(quiet), sorted(everyone), timeout_s

    def counts(self, seen_s: float) -> tuple[int, int]:
        """(silent at once with, watched when) a node last heard at ``seen_s``."""
        low, high = seen_s - self.timeout_s, seen_s + self.timeout_s
        together = bisect_right(self.quiet, high) - bisect_left(self.quiet, low)
        watched = len(self.everyone) - bisect_left(self.everyone, low)
        return max(1, together), max(1, watched)
