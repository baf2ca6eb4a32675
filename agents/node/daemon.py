"""``sluice node``: the slurmd of Sluice.

One daemon is one node. It

1. keeps its node SLUID in its state directory (minted on first start; minted again when the
   shard finds it is another node's, ``NodeSluidInUse``, or refused its registration by this
   daemon's credential under it, ``NodeIdentityChanged``: :meth:`NodeDaemon.run`);
2. positions its command reader on the one ``node-commands`` partition its key hashes to (murmur2,
   like the producers), *before* registering, so no launch can slip past it;
3. registers (``RegisterNode``) and heartbeats on ``sluice.heartbeats``;
4. runs each ``LaunchRun`` addressed to it: the batch host runs the command as a child process in
   its own session with the job's environment and output files; other nodes hold the allocation;
5. runs the prolog before a run and the epilog after it on every node (see ``agents.node.runs``);
6. reports the exit status (``ReportJobExit``), prolog failures (``ReportProlog``) and epilog
   results (``ReportEpilog``); on ``KillRun`` sends SIGTERM to every process of the run and
   SIGKILL after the grace period.

Each process of a run runs under a supervisor, in the run's cgroup v2 where the host gives one
(``--proctrack``: ``auto``, ``cgroup`` or ``pgid``); a killed daemon's runs die with it, and a
restarted daemon kills what is left of earlier runs before it registers (``agents.node.runs``).

The loop sleeps until something needs it (``_pass``): a command (read by a thread,
``agents.node.command_feed``), the end of a run's or step's supervisor (its pidfd), or the next
deadline (heartbeat, a kill's SIGKILL, a script's timeout); an idle node wakes once a heartbeat.
Commands are handled in order, at most once per run SLUID (the replay cache); the reports a
pass produced are flushed together, and only then is the offset of the next command written to
the state directory, so a restarted daemon neither misses nor repeats a launch.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import select
import signal
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agents.auth.command_signature import CommandChecker, Refusal, expiry_of, signature_of
from agents.auth.io_token import open_io_token, open_step_env
from agents.auth.signer import RequestSigner
from agents.health_watch import next_beat_in_s, node_timeout_s
from agents.node.client_conf import job_client_conf
from agents.node.command_feed import CommandFeed, Position
from agents.node.environment import NodeEnv
from agents.node.fence import FENCED, FenceConfigError, HeartbeatLease, fence_interval_s
from agents.node.identity import (
    IDENTITY_FILES,
    credential_expiry_ms,
    credential_of,
    load_or_mint_sluid,
    refused_is_mine,
)
from agents.node.job_env import open_job_env, open_job_script
from agents.node.link_watch import (
    PRODUCER,
    READER,
    READER_CHECK_S,
    LinkWatch,
    let_go,
    replace_after_s,
)
from agents.node.memory import TrimSchedule, release_free_memory
from agents.node.offset_file import OffsetFile
from agents.node.outbox import Outbox
from agents.node.proctrack import CgroupTree, ProctrackError, detect_cgroups, safe_name
from agents.node.runs import RunTable, Scripts
from agents.node.signals import RunSignals
from agents.node.state_gate import StateGate
from agents.node.steps import StepTable
from agents.node.supervisor_server import SupervisorServer
from agents.node.wakeups import Wakeups
from schemas import DecodeError
from schemas.reader import decode
from streams.clients import consumer, node_producer
from streams.dead_letters import DeadLetterWriter
from streams.kafka_native import KafkaError, KafkaException, TopicPartition
from streams.partitioner import partition_for
from streams.settings import Settings
from streams.topics import Topics

if TYPE_CHECKING:
    from agents.auth.daemon_keys import CommandKey

__all__ = ["PROCTRACK_MODES", "FenceConfigError", "NodeDaemon", "NodeResources",
           "ProctrackError"]

PROCTRACK_MODES = ("auto", "cgroup", "pgid")
"""``auto``: cgroup v2 where the host gives one, else ``pgid``; ``cgroup``: refuse to start
without; ``pgid``: supervisor subtree and run marker only."""

log = logging.getLogger(__name__)

_UNREADABLE = frozenset({KafkaError._BAD_MSG, KafkaError._BAD_COMPRESSION})


@dataclass(frozen=True, slots=True)
class NodeResources:
    """What the node offers to the scheduler."""

    cpus: int
    mem_mb: int
    gpus: int = 0
    gpu_type: str = ""
    features: tuple[str, ...] = ()


class NodeDaemon:
    """A node daemon; ``run()`` blocks until ``stop()`` or SIGTERM."""

    def __init__(
        self,
        settings: Settings,
        name: str,
        resources: NodeResources,
        state_dir: Path | None = None,
        heartbeat_s: float = 2.0,
        kill_wait_s: float = 10.0,
        scripts: Scripts | None = None,
        proctrack: str = "auto",
        cgroup_parent: str = "",
    ) -> None:
        self.settings, self.name, self.resources = settings, name, resources
        self.topics = Topics(settings)
        self.state_dir = state_dir or settings.home / "nodes" / name
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.heartbeat_s = heartbeat_s
        # the runs' lease after the newest delivered heartbeat (FenceConfigError if the node
        # timeout and the heartbeat leave none: agents.node.fence)
        self.fence_s = fence_interval_s(node_timeout_s(), heartbeat_s)
        self._lease = HeartbeatLease(self.fence_s, time.monotonic())
        self._fed = self._lease.granted  # the deadline the supervisors were last fed
        self._kept_at = time.monotonic()  # the last _keep_lease: a gap is a stopped daemon
        self._beats_out = 0  # heartbeats sent whose delivery report has not come
        self._registration_lost = False  # a registration librdkafka gave up on: sent again
        self.node_sluid = self._load_or_mint_sluid()
        self._credential_until_ms = credential_expiry_ms(settings)  # a given token's exp
        self._silenced = False  # heartbeats stopped: the token expired (_heartbeat)
        self.cgroups, self.proctrack = self._proctrack(proctrack, cgroup_parent)
        self._producer = node_producer(settings.bootstrap)  # never fails for good: see there
        self._outbox = Outbox(self._producer, RequestSigner(settings, node=name), self.topics,
                              name)  # requests signed: docs/security.md
        self._runs = RunTable(name, self.state_dir, kill_wait_s, self._report, scripts,
                              self.cgroups, waiting=self._beat_if_due,
                              node_env=NodeEnv(settings.cluster, resources.gpus),
                              allow_root=settings.allow_root_jobs,
                              open_env=partial(open_job_env, settings),
                              open_script=partial(open_job_script, settings),
                              client_conf=lambda: job_client_conf(settings, self.state_dir),
                              server=SupervisorServer(self.state_dir),
                              fence_s=max(node_timeout_s(), _FENCE_BEATS * heartbeat_s))
        self._runs.lease = lambda: self._lease.granted - time.monotonic()
        self._steps = StepTable(name, self.state_dir, self._runs, self._report, kill_wait_s,
                                waiting=self._beat_if_due,
                                open_token=partial(open_io_token, settings),
                                open_env=partial(open_step_env, settings))
        self._signals = RunSignals(name, self._runs, self._steps)
        self._checker = CommandChecker(lambda: _command_key(settings), settings.cluster,
                                       self.node_sluid, self.state_dir / "commands.seen")
        self._next_beat = 0.0
        self._stopping = False
        self._renew = False  # the SLUID is another node's: start again under a new one
        self._trim = TrimSchedule()  # the heap's free pages go back once idle (memory.py)
        self._feed: CommandFeed | None = None  # the command reader, while run() runs
        self._key = self.node_sluid.encode()
        self._partition = partition_for(self._key, settings.partitions)
        self._offset_file = OffsetFile(self.state_dir / "commands.offset")
        self._gate = StateGate(self.state_dir)
        self._links = LinkWatch(replace_after_s(), self._broker_answers)  # librdkafka#5301
        self._reader_start: int | None = None  # where the first command reader began
        self._dead_letters = DeadLetterWriter(settings)

    # -- identity and position ------------------------------------------------------------

    def _load_or_mint_sluid(self) -> str:
        """The stored SLUID, or a new one (first start, or another credential: identity.py)."""
        return load_or_mint_sluid(self.state_dir, self.settings.cluster_id,
                                  credential_of(self.settings, self.name))

    def _proctrack(self, mode: str, parent: str) -> tuple[CgroupTree | None, str]:
        """Where the runs' processes are tracked, and a line saying so (ProctrackError when
        ``cgroup`` is asked for and the host gives none)."""
        if mode not in PROCTRACK_MODES:
            raise ProctrackError(f"unknown process tracking {mode!r}: expected one of "
                                 f"{', '.join(PROCTRACK_MODES)}")
        if mode == "pgid":
            return None, "pgid (asked for): supervisor subtree and run marker"
        key = f"{self.name}.{self.node_sluid}" if safe_name(self.name) else self.node_sluid
        tree, reason = detect_cgroups(parent, key)
        if tree is None and mode == "cgroup":
            raise ProctrackError(f"cgroup v2 process tracking is not available: {reason}")
        return tree, reason if tree is not None else f"pgid ({reason})"

    def _new_reader(self) -> Any:
        """A consumer for the node's command partition (assigned by the caller)."""
        return consumer(self.settings.bootstrap, overrides={
            "enable.partition.eof": False, "fetch.wait.max.ms": _FETCH_WAIT_MS})

    def _start_offset(self, reader: Any, attempts: int = 30) -> int:
        """Where to read commands from: the offset file's position; without one (a new
        daemon), or with one that is not a position (a torn or overwritten file), the end of
        the partition. Never its start: a command whose replay-cache entry went with the file
        could run twice, while a command skipped is healed as at any restart (the registration
        ends the runs the shard held here; the heartbeats' reconciliation kills strays)."""
        if self._offset_file.exists():
            try:
                stored = int(self._offset_file.read_bytes().decode("ascii").strip())
            except (UnicodeDecodeError, ValueError):
                stored = -1
            if stored >= 0:
                return stored
            log.warning("node %s: %s holds no offset: reading commands from the partition's "
                        "end", self.name, self._offset_file.path)
        tp = TopicPartition(self.topics.node_commands, self._partition)
        probe = reader
        try:
            for attempt in range(attempts):
                try:
                    _low, high = probe.get_watermark_offsets(tp, timeout=10)
                    return int(high)
                except KafkaException as exc:  # a new topic's leader, a restarting broker
                    if attempt == attempts - 1:
                        raise
                    log.warning("node %s: waiting for the command topic: %s", self.name, exc)
                    time.sleep(min(0.2 * 2**attempt, 2.0))
                    # librdkafka answers from its metadata cache: one read while the new topic
                    # had no leader yet kept answering "Unknown partition" at once, 30 times,
                    # and the daemon ended (seen under `sluice up --nodes 64`). A new client
                    # asks the broker; not `reader.list_topics`, which imports the whole
                    # confluent_kafka package (asyncio, ssl: ~6 MiB of an idle daemon's RSS)
                    if probe is not reader:
                        probe.close()
                    probe = self._new_reader()
        finally:
            if probe is not reader:
                probe.close()
        raise AssertionError("unreachable")

    # -- main loop ------------------------------------------------------------------------

    def run(self) -> bool:
        """Register, then serve commands and heartbeat until stopped. True when the daemon
        stopped because its SLUID is another node's (``RequestRegistration`` naming another
        ``holder``): its identity files are gone and the caller starts a new daemon, which mints
        a new SLUID (a daemon refused so runs nothing)."""
        signal.signal(signal.SIGTERM, lambda *_: self.stop())
        reader, offset = self._assigned_reader()
        log.info("node %s: process tracking: %s", self.name, self.proctrack)
        self._lease = HeartbeatLease(self.fence_s, time.monotonic())
        self._fed = self._lease.granted
        left = self._runs.sweep()
        if left:
            log.warning("node %s: killed the processes left by earlier runs %s", self.name,
                        ", ".join(left))
        self._register()
        log.info("node %s (%s) up, commands from partition %d offset %d",
                 self.name, self.node_sluid, self._partition, offset)
        feed = self._start_feed(reader)
        try:
            while not self._stopping:
                try:
                    self._pass(feed)
                except OSError as exc:  # a write the state directory refused: said, waited
                    if not self._gate.failed(exc):
                        raise
                feed = self._mend_links(feed)
        finally:
            feed = self._feed or feed
            self._feed = None  # stop() no longer writes to its pipe, closed next
            feed.stop()
            self._steps.terminate_all()
            self._runs.terminate_all()
            if self._runs.server is not None:
                self._runs.server.close()
            if self.cgroups is not None:
                with contextlib.suppress(OSError):
                    self.cgroups.node_dir.rmdir()  # only if no run is left in it
            self._producer.flush(10)
            self._offset_file.close()  # (the reader is closed by the feed once it has ended)
        if self._renew:
            self._forget_identity()
        return self._renew

    def _assigned_reader(self) -> tuple[Any, int]:
        """A new command reader assigned at the stored position, and that position. Without
        one: the partition's end for the daemon's first reader, where the first began for a
        reader replacing it (nothing was read since: no command sent meanwhile is skipped)."""
        reader = self._new_reader()
        if self._reader_start is not None and not self._offset_file.exists():
            offset = self._reader_start
        else:
            offset = self._reader_start = self._start_offset(reader)
        reader.assign([TopicPartition(self.topics.node_commands, self._partition, offset)])
        return reader, offset

    def _start_feed(self, reader: Any) -> CommandFeed:
        """The reader's thread, started; it closes the reader once ended."""
        tp = TopicPartition(self.topics.node_commands, self._partition)
        feed = CommandFeed(reader, keep=self._ours, on_end=reader.close,
                           check=lambda r: r.get_watermark_offsets(tp, timeout=10),
                           check_every_s=READER_CHECK_S)
        self._feed = feed
        feed.start()
        return feed

    def _mend_links(self, feed: CommandFeed) -> CommandFeed:
        """Replace the producer or the command reader that librdkafka has cut off for good
        (agents.node.link_watch); the feed to go on with."""
        due = self._links.due(time.monotonic(), self._lease.lapsed_at, feed.answered_at)
        if PRODUCER in due:
            log.warning("node %s: no heartbeat delivered for %.0f s while the broker answers a "
                        "new client (librdkafka lost its brokers after a stall?): replacing the "
                        "producer", self.name, self._links.limit_s + self.fence_s)
            old, self._producer = self._producer, node_producer(self.settings.bootstrap)
            self._outbox.use(self._producer)  # the reports it failed are sent again by it
            let_go(old)
        if READER in due and not self._stopping:
            log.warning("node %s: the command reader got no answer for %.0f s while the broker "
                        "answers a new client: replacing it", self.name, self._links.limit_s)
            feed.stop()  # its thread closes the old reader once its wait ends
            feed = self._start_feed(self._assigned_reader()[0])  # the replay cache refuses
        return feed  # what is read again

    def _broker_answers(self) -> bool:
        """Whether a new client is answered by the broker (the link watch's probe thread)."""
        probe = self._new_reader()
        try:
            probe.get_watermark_offsets(
                TopicPartition(self.topics.node_commands, self._partition), timeout=10)
            return True
        except KafkaException:
            return False
        finally:
            probe.close()

    def _forget_identity(self) -> None:
        """Remove the SLUID and what was read under it: the next daemon mints a new one."""
        for name in IDENTITY_FILES:
            with contextlib.suppress(FileNotFoundError):
                (self.state_dir / name).unlink()

    def _pass(self, feed: CommandFeed) -> None:
        """One pass of the loop: wait until a command arrives, a watched process ends or the
        first deadline (heartbeat, kill escalation, script timeout); then handle the waiting
        commands in order, advance the runs and steps, and heartbeat if due.

        The reports a pass produces go out together: when it handled commands, one flush
        delivers them all (one request in flight: in order; a retry's duplicate is decided as
        a report already had) and only then does the offset file move past those commands,
        so a crash never leaves a handled
        command marked done with its report lost. A crash before that point reads the pass's
        commands again: the replay cache (``commands.seen``, written with one fsync once the
        pass's commands are checked and before any of them runs) refuses those, as it refused
        the one a crash interrupted before. Other nodes' commands on the partition reach the
        loop only as a position (``CommandFeed``), which moves the offset file without a flush."""
        self._wait(feed)
        began = time.monotonic()
        self._producer.poll(0)  # the heartbeats' delivery reports: the runs' lease
        self._keep_lease()  # before the runs' ends are read: a fenced run is reported so
        if not feed.alive():
            raise RuntimeError("the node's command reader ended") from feed.failure
        # a full or read-only state directory: the commands wait (agents.node.state_gate)
        messages = [] if self._gate.refuses() else feed.take(_COMMANDS_A_PASS)
        # an idle pass (the heartbeat's) has none to check: no replay-cache batch for nothing
        done, ours, accepted = self._check_commands(messages) if messages else (None, False, [])
        for name, record in accepted:  # only now: their replay cache is on disk
            self._run_command(name, record)
        self._runs.poll()
        self._steps.poll()
        if done is not None:
            if ours:
                self._flush(10)
            try:
                self._offset_file.write(done)
            except OSError as exc:  # a hint: the replay cache refuses what is read again
                if not self._gate.failed(exc):
                    raise
        self._beat_if_due()
        self._outbox.resend_undelivered()
        self._register_if_lost()
        for run in self._runs.resend_ends(time.monotonic(), 3 * self.heartbeat_s, _END_RESENDS):
            log.warning("node %s: no end of run %s came since its report: sending it again",
                        self.name, run)
        holds = bool(self._runs.running() or self._steps.running())
        if self._trim.after_pass(time.monotonic(), ours, holds):
            release_free_memory()  # idle a while: the heap's free pages go back (memory.py)
        if (busy := time.monotonic() - began) > self.heartbeat_s:
            log.warning("node %s: the loop was busy %.1f s with %d commands (heartbeats late)",
                        self.name, busy, len(messages))

    def _ours(self, message: Any) -> bool:
        """Whether the loop must see ``message`` (in the reader's thread): this node's command,
        or a read error; another node's command only moves the stored offset."""
        return message.error() is not None or message.key() == self._key

    def _wait(self, feed: CommandFeed) -> None:
        """Sleep until a command waits, a run's or step's process ends, or the next deadline
        (the heartbeat's at the latest: an idle node wakes once a heartbeat)."""
        wakeups = Wakeups()
        wakeups.at(self._next_beat)
        wakeups.at(self._trim.at)
        self._runs.watch(wakeups)
        self._steps.watch(wakeups)
        if self._gate.until is not None:  # gated: a stop() must not wait out the back-off
            wakeups.at(min(self._gate.until, time.monotonic() + 1.0))
        due = self._runs.next_fence()
        if due is not None:
            wakeups.at(due)  # to report the runs fenced as such
            if self._beats_out:  # a heartbeat's delivery renews the lease: look for it soon
                wakeups.at(time.monotonic() + min(_DELIVERY_LOOK_S, self.heartbeat_s / 4))
        poller = select.poll()
        if self._gate.until is None:  # commands waiting wake the loop only if it takes them
            poller.register(feed.fileno(), select.POLLIN)
        for fd in wakeups.fds:
            poller.register(fd, select.POLLIN)
        timeout = wakeups.timeout(time.monotonic(), self.heartbeat_s)
        poller.poll(math.ceil(timeout * 1000))

    def stop(self) -> None:
        """Ask the loop to end (runs are terminated on the way out); wakes it, as it may sleep
        up to a heartbeat."""
        self._stopping, self._renew = True, False  # a stop asked for is no restart
        if self._feed is not None:
            self._feed.wake()

    # -- requests out ---------------------------------------------------------------------

    def _register(self) -> None:
        """Send this node's registration (signed) and wait up to 10 s for the broker to take
        it. Its delivery is watched: a registration librdkafka gave up on (its
        ``message.timeout.ms`` passed while the broker was away, or a producer that got no
        producer id while the broker moved leaders) is sent again by a later pass
        (:meth:`_register_if_lost`); without that the daemon heartbeated for ever and its node
        never came into service."""
        r = self.resources
        self._outbox.send(self.topics.requests, self.node_sluid, "RegisterNode", {
            "node_sluid": self.node_sluid, "name": self.name, "cpus": r.cpus,
            "mem_mb": r.mem_mb, "gpus": r.gpus, "gpu_type": r.gpu_type,
            "features": list(r.features), "boot_ms": int(time.time() * 1000),
        }, delivered=self._registration_delivered)
        self._flush(10)

    def _registration_delivered(self, ok: bool) -> None:
        """The delivery report of a registration (from ``poll``/``flush``)."""
        if not ok:
            self._registration_lost = True

    def _register_if_lost(self) -> None:
        """Send the registration again when the broker never took it. Not while the node
        runs jobs: a run means the shard took a registration of this daemon, and one more
        would end its runs as a reboot (``_register_again``)."""
        if not self._registration_lost:
            return
        self._registration_lost = False
        if self._runs.running():
            return
        log.warning("node %s: its registration was not delivered: sending it again", self.name)
        self._register()

    def _register_again(self, why: str) -> None:
        """The shard refused this node's registration and asks again (the configuration
        changed, or a node went down). A node holding runs was registered: the request is not
        for it (registering again would end its runs as a reboot)."""
        if self._runs.running():
            log.warning("node %s: asked to register again (%s) while it runs jobs: ignored",
                        self.name, why)
            return
        log.info("node %s: registering again: %s", self.name, why)
        self._register()

    def _renew_identity(self, holder: str) -> None:
        """This daemon's SLUID is node ``holder``'s (both minted it in the same millisecond):
        stop, to start again under a new one (:meth:`run`). A daemon running jobs was
        registered under it: the request is not for it."""
        if self._runs.running():
            log.warning("node %s: told that SLUID %s is node %s's while it runs jobs: ignored",
                        self.name, self.node_sluid, holder)
            return
        log.warning("node %s: SLUID %s is node %s's (minted in the same millisecond): "
                    "starting again under a new one", self.name, self.node_sluid, holder)
        self._renew, self._stopping = True, True  # the loop ends after this pass

    def _renew_credential(self, refused: str) -> None:
        """The shard refused a registration of this node's SLUID by ``refused`` because the
        node is registered by another identity (``NodeIdentityChanged``). When that is this
        daemon's credential (restarted with another one, its state directory older than
        ``node.credential`` or moved to another host), stop, to start again under a new SLUID
        (:meth:`run`): the old one falls silent and goes ``DOWN``, which lets the new one in.
        Another identity's refusal (forged under this SLUID) leaves this daemon as it is."""
        credential = credential_of(self.settings, self.name)
        if not refused_is_mine(refused, credential):
            log.info("node %s: a registration of its SLUID by %s was refused: not this daemon's "
                     "(%s), ignored", self.name, refused[:128], credential)
            return
        if self._runs.running():
            log.warning("node %s: told its registration by %s was refused while it runs jobs: "
                        "ignored", self.name, refused[:128])
            return
        log.warning("node %s: its registration by %s was refused (SLUID %s is registered by "
                    "another identity): starting again under a new SLUID", self.name,
                    refused[:128], self.node_sluid)
        self._renew, self._stopping = True, True  # the loop ends after this pass

    def _beat_if_due(self) -> None:
        """Heartbeat if it is time (also called while a run's supervisor starts)."""
        self._producer.poll(0)
        if time.monotonic() >= self._next_beat:
            self._heartbeat()  # its send polls the producer again (Outbox.send)
            self._next_beat = time.monotonic() + next_beat_in_s(time.time(), self.heartbeat_s)

    def _flush(self, timeout_s: float) -> None:
        """Deliver what is queued (up to ``timeout_s``: a broker that is away), feeding the
        supervisors' lifelines every second meanwhile, so a wait on the broker is never taken
        for a stopped daemon (fencing: ``_FENCE_BEATS``); their lease still ends as the
        heartbeats' deliveries say (a broker out of reach: :meth:`_keep_lease`)."""
        deadline = time.monotonic() + timeout_s
        while self._producer.flush(min(1.0, max(deadline - time.monotonic(), 0.0))) > 0:
            self._keep_lease()
            if time.monotonic() >= deadline:
                return

    def _heartbeat(self) -> None:
        """Send a heartbeat, unless the token this daemon was given has expired: every request
        it sends is then refused (``CredentialExpired``), its runs' end reports too, while
        heartbeats, which carry no credential, kept the node in service. Seen in a fault
        round (2026-12-07): a job that completed there ended ``NODE_FAIL`` (its report
        refused), was requeued and ran again, and the node took new jobs to lose the same way,
        for ever. Silent, the node goes ``DOWN`` one node timeout later (its runs requeued
        once, fenced here) and stays so until the daemon is started with a valid token, as a
        slurmd that cannot authenticate is ``NOT_RESPONDING``."""
        until = self._credential_until_ms
        if until is not None and time.time() * 1000 >= until:
            if not self._silenced:
                log.error("node %s: its token (SLUICE_JWT) expired at %s: every request it "
                          "sends is refused; heartbeats stopped, so the node goes DOWN. Start "
                          "the daemon with a new one ('sluice token --node %s')", self.name,
                          time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(until / 1000)),
                          self.name)
                self._silenced = True
            self._keep_lease()
            return
        self._keep_lease()
        sent_at = time.monotonic()
        self._beats_out += 1
        self._outbox.send(self.topics.heartbeats, self.node_sluid, "NodeHeartbeat", {
            "node_sluid": self.node_sluid, "name": self.name,
            "time_ms": int(time.time() * 1000), "runs": self._runs.running(),
            "exited": self._runs.exited(), "paused": self._gate.problem,
        }, delivered=partial(self._beat_delivered, sent_at))

    def _beat_delivered(self, sent_at: float, ok: bool) -> None:
        """The delivery report of the heartbeat sent at ``sent_at`` (from ``poll``/``flush``):
        taken by the broker (``ok``: the runs' lease moves), or given up."""
        self._beats_out = max(self._beats_out - 1, 0)
        if ok:
            self._lease.delivered(sent_at)

    def _keep_lease(self) -> None:
        """Feed the supervisors the runs' lease (``agents.node.fence``) when the delivered
        heartbeats moved it; a run whose own deadline (the lease plus its fence horizon: 0 for
        an expedited job, the requeue delay for a requeueable one, none for a job not
        requeued) has passed — no heartbeat delivered for that long: a daemon cut off from the
        broker, or a loop stalled — is being killed by its supervisors, is marked fenced so
        that its end is reported so (``ReportJobExit.fenced``; its job steps' ends
        ``ReportStepExit.fenced``), and is fed no more."""
        now = time.monotonic()
        was = self._lease.lapsed_at
        left = self._lease.grant(now)
        stalled, self._kept_at = now - self._kept_at, now
        if self._lease.lapsed_at is not None and was is None:
            why = (f"this daemon did not run for {stalled:.0f} s (stopped, or starved of CPU)"
                   if stalled > self.fence_s else "the broker is out of reach")
            log.error("node %s: no heartbeat delivered for %g s (%s): each run is killed at "
                      "its fence horizon past that, before its job can start elsewhere (at "
                      "once for an expedited job, after the requeue delay for a requeueable "
                      "one, never for a job not requeued)", self.name, self.fence_s, why)
        elif self._lease.lapsed_at is None and was is not None:
            log.warning("node %s: heartbeats delivered again %.1f s after the lease ran out",
                        self.name, now - was)
        def detail(horizon: float) -> str:
            return (f"{FENCED}: no heartbeat of node {self.name} was delivered for "
                    f"{self.fence_s + horizon:g} s (cut off from the broker)")

        marked = self._runs.fence(now, detail)
        if marked:
            log.error("node %s: runs fenced: %s", self.name, ", ".join(marked))
        steps = self._steps.fence(detail)  # after the runs: their lease_over is set now
        if steps:
            log.error("node %s: job steps fenced: %s", self.name, ", ".join(steps))
        if self._lease.granted != self._fed:
            self._fed = self._lease.granted
            self._runs.feed(left)
            self._steps.feed(left)

    def _report(self, name: str, launch: dict[str, Any], fields: dict[str, Any]) -> None:
        """Send a ReportJobExit, ReportProlog, ReportEpilog or ReportStepExit for one run."""
        self._outbox.send(self.topics.requests, launch.get("job_sluid") or self.node_sluid, name, {
            "job_sluid": launch.get("job_sluid", ""), "run_sluid": launch["run_sluid"],
            "node_sluid": self.node_sluid, "node_name": self.name, **fields,
        })  # delivered with the pass's other reports (see _pass)

    # -- commands in ----------------------------------------------------------------------

    def _refused(self, name: str, record: dict[str, Any], refusal: tuple[str, str],
                 signature: bytes | None) -> None:
        """A command that failed its checks runs nothing; the refusal is logged and reported
        (``ReportCommandRefused`` → the ``NodeCommandRefused`` fact). A ``LaunchRun`` refused
        as expired, of a run this daemon never started, carries its signed expiry: the shard
        that decides the refusal before that time knows this node's clock runs ahead, drains
        the node and requeues the run (docs/node-daemon.md, "A clock that runs ahead")."""
        reason, detail = refusal
        run_sluid = str(record.get("run_sluid", ""))[:64]
        log.error("node %s: refused a %s for run %s: %s (%s)", self.name, name, run_sluid,
                  reason, detail)
        expiry_ms = 0
        if reason == Refusal.EXPIRED and name == "LaunchRun" and not self._runs.knows(run_sluid):
            expiry_ms = expiry_of(signature)
            log.error("node %s: a launch the workers signed to expire at %d ms was refused as "
                      "expired: is this host's clock ahead?", self.name, expiry_ms)
        self._outbox.send(self.topics.requests, self.node_sluid, "ReportCommandRefused", {
            "node_sluid": self.node_sluid, "node_name": self.name, "command": name[:64],
            "run_sluid": run_sluid,
            "reason": reason, "detail": detail[:512], "expiry_ms": expiry_ms,
        })  # flushed before the offset file moves past the command (see _pass)

    def _check_commands(self, messages: list[Any],
                        ) -> tuple[int | None, bool, list[tuple[str, dict[str, Any]]]]:
        """Check a pass's messages in order, their replay cache written once at the end (one
        fsync); returns the offset past them, whether any was this node's, and the commands
        that may run, in order. A refused command is reported, an unreadable one dead-lettered."""
        done: int | None = None
        ours = False
        accepted: list[tuple[str, dict[str, Any]]] = []
        with self._checker.batch():
            for message in messages:
                if isinstance(message, Position):  # skipped: other nodes' commands
                    done = message.offset
                    continue
                ours = True
                error = message.error()
                if error is None:
                    why = self._checked(message.key(), message.value(),
                                        signature_of(message.headers()), accepted)
                    if why is not None:
                        self._dead_letters.write(message, f"Undecodable: {why}")
                    done = (message.offset() or 0) + 1
                elif _unreadable(error):
                    self._dead_letters.write(message, f"UnreadableBatch: {error}")
        return done, ours, accepted

    def _checked(self, key: bytes | None, value: bytes | None, signature: bytes | None,
                 accepted: list[tuple[str, dict[str, Any]]]) -> str | None:
        """Add one command to ``accepted`` if its signature holds (docs/security.md); returns
        why it is a dead letter, if it is one of ours and unreadable."""
        if key is None or key.decode(errors="replace") != self.node_sluid or not value:
            return None  # another node's command on the same partition
        try:
            name, record = decode(value)
        except DecodeError as exc:
            log.error("node %s: undecodable command: %s", self.name, exc)
            return str(exc)
        if record.get("node_name") not in (None, "", self.name):
            log.warning("node %s: a %s for node %s under this node's SLUID %s: not ours",
                        self.name, name, record.get("node_name"), self.node_sluid)
            return None  # another daemon minted the same SLUID (the shard asks it for another)
        refused = self._checker.check(value, signature, str(record.get("node_sluid", "")),
                                      str(record.get("run_sluid", "")), int(time.time() * 1000))
        if refused is not None:
            self._refused(name, record, refused, signature)
        else:
            accepted.append((name, record))
        return None

    def _run_command(self, name: str, record: dict[str, Any]) -> None:
        if name == "LaunchRun":
            self._runs.launch(record)
        elif name == "KillRun":
            self._steps.kill_run(record["run_sluid"], record.get("reason", ""))
            self._runs.kill(record["run_sluid"], record.get("reason", ""), record)
        elif name == "SignalRun":
            self._signals.deliver(record)
        elif name == "SetRunLimit":
            self._runs.set_limit(str(record["run_sluid"]), int(record.get("time_limit_s") or 0))
        elif name == "LaunchStep":
            self._steps.launch(record)
        elif name == "KillStep":
            self._steps.kill(record["run_sluid"], record["step_sluid"], record.get("reason", ""))
        elif name == "RequestRegistration":
            holder = str(record.get("holder", ""))
            refused = str(record.get("refused", ""))
            if not holder:
                self._register_again(str(record.get("reason", "")))
            elif holder != self.name:
                self._renew_identity(holder)
            elif refused:
                self._renew_credential(refused)
        else:
            log.warning("node %s: ignoring a %s on node-commands", self.name, name)


_FETCH_WAIT_MS = 10_000
"""How long the broker holds the command reader's fetch of an empty partition (librdkafka's
``fetch.wait.max.ms``, 500 ms by default). A fetch is answered as soon as a record is there
(``fetch.min.bytes`` is 1), so a command reaches an idle node no later; the reader only asks
again every 10 s instead of every half second while nothing comes (issue 17)."""
_COMMANDS_A_PASS = 64
"""At most this many commands a pass (then the runs, the flush and the heartbeat)."""

_DELIVERY_LOOK_S = 0.25
"""While a heartbeat's delivery report has not come and runs are held, the loop looks for it
this often (a quarter heartbeat at most): the lease it renews reaches the supervisors then,
not a heartbeat later."""
_FENCE_BEATS = 3
"""A run's supervisor kills it when the daemon has not fed its lifeline (every delivered
heartbeat) for the node timeout (``SLUICE_NODE_TIMEOUT``, and never less than this many
heartbeats) plus the run's fence horizon, after which the scheduler may start the job elsewhere
(fencing a stopped or hung daemon's runs, docs/node-daemon.md); sooner when the run's lease runs
out, which only delivered heartbeats renew (``agents.node.fence``: a stopped or cut-off daemon);
never for a job that is not requeued (no horizon)."""
_END_RESENDS = 5
"""How often a run's end report is sent again while no ``TERMINATE`` answers it, one node
timeout (three heartbeats) apart (``RunTable.resend_ends``); after that the shard's
missing-run rule ends the run (docs/node-daemon.md, "Runs the node no longer runs")."""


def _command_key(settings: Settings) -> CommandKey:
    """The command key, loaded at the first command: an idle node that has run nothing has not
    imported ``cryptography`` (about 10 MiB of its memory, issue 17)."""
    from agents.auth.daemon_keys import load_command_key  # noqa: PLC0415 - see above

    return load_command_key(settings)


def _unreadable(error: KafkaError | None) -> bool:
    """True for librdkafka's errors about a fetched record it cannot read."""
    return error is not None and error.code() in _UNREADABLE


def detect_resources() -> NodeResources:
    """This host's CPUs and memory (for a daemon started without explicit sizes)."""
    mem_kb = 0
    meminfo = Path("/proc/meminfo")
    if meminfo.exists():
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_kb = int(line.split()[1])
    return NodeResources(cpus=os.cpu_count() or 1, mem_mb=mem_kb // 1024)
