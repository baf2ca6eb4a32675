"""Node health: heartbeats in; ``NodeFailed`` and ``NodeResponding`` into the node's shard.

Each node daemon heartbeats on ``sluice.heartbeats`` (keyed by node SLUID). The agent
(:class:`HealthAgent`, run on a thread of every worker by ``agents.health_loop``) keeps the last
heartbeat of every node of the heartbeat partitions it owns in a table
(``agents.health_store``: the compacted heartbeats topic is its log, a local RocksDB its copy),
and checks those nodes each ``check_interval_s`` with a
:class:`agents.health_watch.HealthWatch`, which holds the rules:

- a node silent for ``SLUICE_NODE_TIMEOUT`` seconds (default 10; Slurm's SlurmdTimeout is 300)
  is reported with ``NodeFailed`` (carrying how many of the watched nodes were silent in the
  same check, for the core's mass-failure guard), and again every 30 s while it stays silent;
- silence is counted only over time the agent could see: after its own stall (a tick late by
  half a timeout), a start or failover (entries it has not watched before), or a blind spell
  (nothing, not even the probe it sends itself through each heartbeat partition it owns, came
  through the topic for half a timeout: a broker outage), it waits one full timeout of fresh
  heartbeats before judging anyone;
- a heartbeat from a node it reported, or after a silence longer than the timeout, is forwarded
  as ``NodeResponding`` (with the runs the heartbeat lists): the core decides whether the node
  returns to service (``ReturnToService``) and kills runs it no longer holds there;
- so is a heartbeat listing a run stuck after its exit, and every node's heartbeat at least
  every ``SLUICE_RUNS_RECONCILE_S`` (:class:`agents.health_runs.RunsForwarding`): the core ends
  the runs it holds there that the node no longer runs (``scheduler.nodes.missing_runs``).
- a node whose heartbeats ran ahead of their arrival by more than ``CommandTTL`` several in a
  row (:class:`agents.health_clock.ClockAheadWatch`: its clock is so far ahead that it refuses
  every command as expired) is reported with ``NodeClockAhead``, once per episode, and the core
  drains it (``scheduler.nodes.clock_ahead``); ahead by more than half of it, a warning is
  logged.

A record on the heartbeats topic that is not a ``NodeHeartbeat`` (garbage, truncated, another
record) goes to the dead letters with its reason (:func:`read_heartbeat`), as the intake's do.

The core decides what a report means (DOWN and NODE_FAIL, or ``NodeSuspected``); reporting twice
is harmless: the core ignores a NodeFailed for a node that is already down.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from agents.health_clock import DEFAULT_BEATS, Ahead, ClockAheadWatch
from agents.health_runs import RunsForwarding, reconcile_s
from agents.health_seen import MISSING, SeenNodes
from agents.health_store import HealthStore
from agents.health_watch import (
    DEFAULT_TIMEOUT_S,
    CheckResult,
    HealthWatch,
    check_interval_s,
    node_timeout_s,
    store_due,
)
from agents.loop_thread import install_loop
from agents.metrics import observe_health
from schemas import DecodeError, decode, encode

if TYPE_CHECKING:
    from agents.app import WorkerContext

__all__ = ["DEFAULT_TIMEOUT_S", "PROBE_NAME", "HealthAgent", "install_health", "node_timeout_s",
           "read_heartbeat"]

log = logging.getLogger(__name__)

_SKEW_LOG_EVERY_MS = 60_000
"""At most one line a minute about heartbeats read long after their send time."""

OLDER_KEPT_TIMEOUTS = 3
"""An older incarnation of a node name is watched until it is this many node timeouts older
than the newest (``agents.health_seen``): judged once, not reported for ever."""

PROBE_NAME = "sluice-health-probe"
"""The ``name`` of the agent's own probe on the heartbeat topic (its ``node_sluid`` is "")."""


def read_heartbeat(value: Any) -> dict[str, Any] | str:
    """The ``NodeHeartbeat`` in ``value``, or why it is none (a dead letter's reason)."""
    if not isinstance(value, bytes):
        return "EmptyRecord: the record has no value"
    try:
        name, beat = decode(value)
    except DecodeError as exc:
        return f"Undecodable: {exc}"
    if name != "NodeHeartbeat":
        return f"NotAHeartbeat: a {name} on the heartbeats topic"
    return beat


class HealthAgent:
    """The health agent's shell state and steps, without Kafka: told of each heartbeat read
    (:meth:`heard`, or :meth:`fold` for one read back only to rebuild the table) and asked to
    check the deadlines (:meth:`check`); it sends through the two callables it is given
    (``send(kind, node name, record)`` into the node's shard, ``probe(partition, value)`` onto
    the heartbeats topic). ``agents.health_loop`` runs it on a thread of the worker."""

    def __init__(self, table: HealthStore, timeout_s: float, started_s: float,
                 send: Callable[[str, str, dict[str, Any]], None],
                 probe: Callable[[int, bytes], None], *, command_ttl_s: float = 300.0,
                 clock_ahead_beats: int = DEFAULT_BEATS) -> None:
        self.table = table
        self.watch = HealthWatch(timeout_s, started_s=started_s)
        self.refresh_ms = int(timeout_s * 1000 / 2)
        self.interval_s = check_interval_s(timeout_s)
        self.seen = SeenNodes(reload_every=round(timeout_s / 2 / self.interval_s),
                              older_kept_s=OLDER_KEPT_TIMEOUTS * timeout_s)
        self.runs_sync = RunsForwarding(stuck_s=timeout_s, again_s=timeout_s,
                                        reconcile_s=reconcile_s(timeout_s))
        self.owned: set[int] = set()
        self.clock = ClockAheadWatch(int(command_ttl_s * 1000), clock_ahead_beats)
        self.skew_allowance_ms = int(timeout_s * 1000 / 10)
        """How long before its arrival a heartbeat may count at most (``_alive_ms``)."""
        self.skew_warn_ms = int(timeout_s * 1000 / 2)
        self.skewed: set[str] = set()
        """The nodes whose heartbeats were read half a timeout after their send time since
        the last line logged about them (at ``skew_logged_ms``)."""
        self.skew_logged_ms = -_SKEW_LOG_EVERY_MS
        self._send = send
        self._probe = probe
        self.paused: dict[str, str] = {}
        """The ``paused`` each node's heartbeats last said (forwarded when it changes)."""

    # -- ownership ----------------------------------------------------------------------------

    def assigned(self, partitions: Iterable[int]) -> None:
        """The worker now owns these heartbeat partitions too."""
        self.owned |= set(partitions)
        self.seen.forget()
        self.runs_sync.forget()
        self.clock.forget()
        self.paused.clear()

    def revoked(self, partitions: Iterable[int]) -> None:
        """These heartbeat partitions are no longer the worker's."""
        self.owned -= set(partitions)
        self.seen.forget()
        self.runs_sync.forget()
        self.clock.forget()
        self.paused.clear()

    # -- heartbeats ---------------------------------------------------------------------------

    def fold(self, beat: dict[str, Any], partition: int, now_ms: int) -> None:
        """A heartbeat read back only to rebuild the table (another owner, or this worker
        before a restart, handled it already): the table learns it, nothing else does."""
        node = beat["node_sluid"]
        if not node:
            return
        sent_ms = min(int(beat["time_ms"]), now_ms)
        if store_due(self.table.get(node), beat["name"], partition, sent_ms, self.refresh_ms):
            self.table.put(node, {"name": beat["name"], "seen_ms": sent_ms,
                                  "partition": partition})

    def heard(self, beat: dict[str, Any], partition: int, now_ms: int) -> None:
        """A heartbeat (or the agent's own probe) read from heartbeat ``partition``."""
        node, name, runs, exited = (beat["node_sluid"], beat["name"], list(beat["runs"]),
                                    list(beat.get("exited") or ()))
        if not node:
            if name == PROBE_NAME:
                self.watch.probe_heard(now_ms / 1000, partition, int(beat["time_ms"]) / 1000)
            return  # a heartbeat needs a node SLUID
        seen = self.seen
        stored = seen.stored(node)
        if stored is MISSING:  # not read since the assignment changed
            stored = self.table.get(node)
            seen.wrote(node, stored)
        assert stored is None or isinstance(stored, dict)
        sent_ms = min(int(beat["time_ms"]), now_ms)  # when the node was alive, by its clock
        alive_ms = self._alive_ms(node, name, sent_ms, now_ms)
        previous_ms = seen.heard(node, alive_ms)
        previous_s = previous_ms / 1000 if previous_ms is not None else None
        if store_due(stored, name, partition, alive_ms, self.refresh_ms):
            entry = {"name": name, "seen_ms": alive_ms, "partition": partition}
            self.table.put(node, entry)
            seen.wrote(node, entry)
        answers = self.watch.heard(node, previous_s, now_ms / 1000, alive_ms / 1000, partition)
        if answers:
            log.info("node %s (%s) answers again", name, node)
        due = self.runs_sync.due(node, exited, now_ms / 1000)  # first: it tracks `exited`
        paused = str(beat.get("paused") or "")
        if self.paused.get(node, "") != paused:  # a node that paused or resumed taking commands
            log.warning("node %s (%s): %s", name, node, f"takes no commands: state directory "
                        f"{paused}" if paused else "takes commands again")
            due = True
        if paused:
            self.paused[node] = paused
        else:
            self.paused.pop(node, None)
        if answers or due:
            if due and not answers:
                log.debug("node %s (%s): forwarding its runs (%d, %d exited)", name, node,
                          len(runs), len(exited))
            self.runs_sync.forwarded(node, now_ms / 1000)
            self._send("NodeResponding", name, {
                "node_sluid": node, "name": name, "runs": runs, "exited": exited,
                "time_ms": now_ms, "sent_ms": sent_ms, "answers": answers, "paused": paused})
        self._clock_ahead(node, name, int(beat["time_ms"]), now_ms)

    def _clock_ahead(self, node: str, name: str, time_ms: int, now_ms: int) -> None:
        """Warn about, or report, a node whose heartbeats run ahead (``agents.health_clock``)."""
        clock = self.clock
        verdict = clock.heard(node, time_ms, now_ms)
        if verdict is Ahead.NOTHING:
            return
        ttl_s = clock.ttl_ms / 1000
        if verdict is Ahead.WARN:
            log.warning("node %s (%s): its heartbeats run %.1f s ahead of this worker's clock, "
                        "more than half of CommandTTL (%.0f s): its commands expire early there",
                        name, node, (time_ms - now_ms) / 1000, ttl_s)
            return
        ahead_ms = clock.least_ahead_ms(node)
        log.warning("node %s (%s): %d heartbeats in a row ran ahead of this worker's clock by "
                    "more than CommandTTL (%.0f s; at least %.1f s): it refuses every command "
                    "as expired; reporting it to be drained", name, node, clock.beats, ttl_s,
                    ahead_ms / 1000)
        self._send("NodeClockAhead", name, {"node_sluid": node, "name": name,
                                            "ahead_ms": ahead_ms, "time_ms": now_ms})

    def _alive_ms(self, node: str, name: str, sent_ms: int, now_ms: int) -> int:
        """When a heartbeat sent at ``sent_ms`` (the node's clock) and read at ``now_ms`` shows
        its node alive: its send time, but never more than ``skew_allowance_ms`` before its
        arrival. A node whose clock runs behind the worker's by more than the timeout sent
        heartbeats that all looked old: it was reported failed at every check and answered
        again at every heartbeat (DOWN and back every 3 s, killing the runs it started in
        between). The cost: a heartbeat read late (a lagging reader) keeps its node alive up
        to the lag less the allowance longer. Heartbeats read half a timeout or more after
        their send time are logged at most once a minute, with how many nodes sent them (a
        backlog read after a restart makes every node's look late once)."""
        alive_ms = max(sent_ms, now_ms - self.skew_allowance_ms)
        behind_ms = now_ms - sent_ms
        if behind_ms > self.skew_warn_ms:
            self.skewed.add(node)
            if now_ms - self.skew_logged_ms >= _SKEW_LOG_EVERY_MS:
                log.warning("%d node(s) sent heartbeats read half a timeout or more later, "
                            "e.g. %s (%s): sent %.1f s before it was read (its clock behind "
                            "the worker's, or this reader lagging); such a heartbeat counts "
                            "%.1f s before its arrival", len(self.skewed), name, node,
                            behind_ms / 1000, self.skew_allowance_ms / 1000)
                self.skew_logged_ms = now_ms
                self.skewed.clear()
        return alive_ms

    # -- the check ----------------------------------------------------------------------------

    def check(self, now_ms: int) -> CheckResult:
        """Judge the watched nodes at ``now_ms`` (the shell's clock), probe the heartbeat
        partitions that need it, and report the silent nodes."""
        watch, seen = self.watch, self.seen
        if seen.reload_due():
            seen.reload(self.table.items(self.owned))
        entries, partitions = seen.entries()
        was_blind = watch.blind
        result = watch.check(entries, now_ms / 1000, partitions)
        _log_check(result, watch.timeout_s, was_blind=was_blind)
        quiet = watch.quiet_partitions(entries, now_ms / 1000, partitions)
        probes = watch.probe_partitions(self.owned, quiet, now_ms / 1000)
        if probes:
            value = encode("NodeHeartbeat", {"node_sluid": "", "name": PROBE_NAME,
                                             "time_ms": now_ms, "runs": []})
            for partition in probes:
                self._probe(partition, value)
        for silent in result.report:
            record = {"node_sluid": silent.node_sluid, "name": silent.name,
                      "reason": f"no heartbeat for {silent.silent_s:.1f} s", "time_ms": now_ms,
                      "silent_nodes": silent.silent_nodes, "watched_nodes": silent.watched_nodes}
            log.warning("node %s (%s) missed its heartbeat deadline (%d of %d nodes silent)",
                        silent.name, silent.node_sluid, silent.silent_nodes,
                        silent.watched_nodes)
            self._send("NodeFailed", silent.name, record)
        return result


def install_health(context: WorkerContext, session_timeout_s: float) -> None:
    """Register the health loop (``agents.health_loop``) as a service of the worker's app."""
    from agents.health_loop import health_loop  # noqa: PLC0415 - health_loop imports this

    settings = context.settings
    install_loop(context.app, "health",
                 lambda: health_loop(settings, session_timeout_s=session_timeout_s))


def _log_check(result: CheckResult, timeout_s: float, *, was_blind: bool) -> None:
    observe_health(result.silent, result.watched, blind=result.blind)
    if result.blind and not was_blind:
        log.warning("health agent is blind: nothing came through the heartbeat topic for %.1f s "
                    "(broker or consumer); judging nobody until it does", timeout_s / 2)
    elif was_blind and not result.blind:
        log.warning("health agent sees again: judging nobody for %.1f s", timeout_s)
    if result.stalled_s:
        log.warning("health agent stalled %.1f s: judging nobody for %.1f s", result.stalled_s,
                    timeout_s)
    if result.report and result.silent >= 2:
        log.warning("%d of %d watched nodes silent at once: a suspected partition if more than "
                    "NodeFailureGuardShare", result.silent, result.watched)

