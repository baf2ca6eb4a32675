"""``sluice bridge``: the loop that makes Sluice the scheduler of pods named ``sluice``.

- **Nodes in.** Each Kubernetes Node is a Sluice node: registered (``RegisterNode``, sizes from
  its allocatable) under a SLUID the bridge keeps, heartbeated while its Ready condition is
  True. A NotReady node stops beating, so the health agent reports it failed and the core
  requeues its jobs per their policy, as for a silent node daemon. Topograph labels become the
  topology (``ApplyConfig`` kind ``topology``) whenever they change.
- **Pods in.** A gang (``agents.bridge.gang``) becomes one ``SubmitJob``, sent with the bridge's
  credential through the intake like any client's; a gang that cannot be a job is marked on
  its pods (``PodScheduled=False`` with the named reason).
- **Decisions out.** The bridge reads ``node-commands`` for its nodes: a ``LaunchRun`` binds the
  gang's pods to the run's nodes (Binding subresource), a ``KillRun`` deletes the run's pods on
  that node (the Job controller re-creates them; a requeued run binds them again) and reports
  the epilog. When every pod of a run has ended, the batch node reports ``ReportJobExit``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import queue
import signal
import time
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaException, TopicPartition
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from agents.auth.command_signature import CommandChecker, signature_of
from agents.auth.daemon_keys import load_command_key
from agents.auth.signer import RequestSigner
from agents.bridge.claims import ClaimBook
from agents.bridge.gangs import GangTable
from agents.bridge.kube import Kube
from agents.bridge.nodes import KubeNode, node_view
from agents.bridge.owner import check_default_user, privileged_users
from agents.bridge.slots import Run
from agents.bridge.state import BridgeState
from agents.bridge.topology import topology_yaml
from schemas import DecodeError, SluidGenerator, decode, encode
from streams.clients import consumer, producer
from streams.dead_letters import DeadLetterWriter
from streams.settings import Settings
from streams.topics import Topics

__all__ = ["SIGNAL_UNSUPPORTED", "Bridge"]

log = logging.getLogger(__name__)

SIGNAL_UNSUPPORTED = "SignalUnsupported"
"""Why the bridge refuses a ``SignalRun`` (``ReportCommandRefused.reason``)."""


class Bridge:
    """One bridge process; ``run()`` blocks until ``stop()`` or SIGTERM."""

    def __init__(self, settings: Settings, kube: Kube, state_dir: Path,
                 heartbeat_s: float = 2.0, default_user: str = "") -> None:
        if default_user:  # DefaultUserError: never root, the service user or the bridge's own
            check_default_user(default_user, privileged_users(settings))
        self.settings, self.kube, self.heartbeat_s = settings, kube, heartbeat_s
        self.topics = Topics(settings)
        self.state = BridgeState.load(state_dir)
        self.sluids = SluidGenerator(settings.cluster_id)
        self._producer = producer(settings.bootstrap)
        self._signer = RequestSigner(settings)
        self._checker = CommandChecker(functools.cache(lambda: load_command_key(settings)),
                                       settings.cluster, "", state_dir / "commands.seen")
        self._dead_letters = DeadLetterWriter(settings)
        self.nodes: dict[str, KubeNode] = {}
        self._node_objects: dict[str, dict[str, Any]] = {}
        self.claims = ClaimBook(kube)
        self.gangs = GangTable(self, default_user)
        self._next_beat = 0.0
        self._synced: set[str] = set()
        self._stopping = False
        self._retry: list[tuple[str, str, dict[str, Any]]] = []
        """Launches and kills the API server failed: run again each check (both may run
        twice: a run's slots and a kill's report and epilog are kept once), never a launch
        after the run's kill went through (it would make the ended run anew and bind its
        gang's pods)."""

    # -- requests out ---------------------------------------------------------------------

    def send(self, key: str, name: str, record: dict[str, Any]) -> None:
        """One signed request to the intake (flushed by the loop before the state is saved)."""
        value = encode(name, record)
        headers: list[tuple[str, str | bytes | None]] = [*self._signer.headers(value)]
        self._producer.produce(self.topics.requests, value, key.encode(), headers=headers)

    def report(self, name: str, run: Run, node: str, fields: dict[str, Any]) -> None:
        """A ReportJobExit or ReportEpilog for one run on one node."""
        self.send(run.job_sluid, name, {
            "job_sluid": run.job_sluid, "run_sluid": run.run_sluid,
            "node_sluid": self.state.nodes[node], "node_name": node, **fields})

    def submit(self, job_sluid: str, spec: dict[str, Any], nonce: int) -> None:
        """A SubmitJob for a gang (``nonce``: its submission's, ``gang_nonce``)."""
        self.send(job_sluid, "SubmitJob", {"job_sluid": job_sluid, "spec": spec,
                                           "nonce": nonce})

    # -- nodes ----------------------------------------------------------------------------

    def _on_node(self, kind: str, obj: dict[str, Any]) -> None:
        name = obj.get("metadata", {}).get("name", "")
        view = node_view(obj, self.claims.gpus_on(name))
        old = self.nodes.get(view.name)
        if kind == "DELETED":
            self.nodes.pop(view.name, None)
            self._node_objects.pop(view.name, None)
            return
        self._node_objects[view.name] = obj
        self.nodes[view.name] = view
        sluid = self.state.nodes.get(view.name)
        if sluid is None:
            sluid = self.state.nodes[view.name] = self.sluids.new()
            self.state.touch()
        if view.ready and self.state.registered.get(view.name) != _registration(view):
            self._register(view)
            self._beat(view.name)
        elif view.ready and (old is None or not old.ready):
            # Registered before (this run or an earlier one): its heartbeats bring it back if it
            # fell silent. Registering again would tell Sluice the node rebooted and end the
            # jobs of the pods that run there on (a bridge restart, a short NotReady).
            self._beat(view.name)
        if old is not None and old.ready and not view.ready:
            log.warning("node %s is not ready: no more heartbeats (Sluice will see it fail)",
                        view.name)

    def _register(self, view: KubeNode) -> None:
        r = view.resources
        sluid = self.state.nodes[view.name]
        self.send(sluid, "RegisterNode", {
            "node_sluid": sluid, "name": view.name, "cpus": r.cpus, "mem_mb": r.mem_mb,
            "gpus": r.gpus, "gpu_type": r.gpu_type, "features": list(r.features),
            "boot_ms": int(time.time() * 1000)})
        self.state.registered[view.name] = _registration(view)
        self.state.touch()

    def _register_again(self, name: str) -> None:
        """The shard refused a node's registration and asks again (RequestRegistration)."""
        view = self.nodes.get(name)
        if view is not None and view.ready and not any(
                name in r.nodes for r in self.state.runs.values()):
            log.info("node %s: registering again, as Sluice asks", name)
            self._register(view)

    def _renew_sluid(self, name: str, holder: str) -> None:
        """Node ``name``'s SLUID is node ``holder``'s (another process minted it in the same
        millisecond): it registers again under a new one (unless it runs pods: then it was
        registered under it, the request is not for it)."""
        view = self.nodes.get(name)
        if view is None or any(name in r.nodes for r in self.state.runs.values()):
            return
        log.warning("node %s: SLUID %s is node %s's: registering under a new one", name,
                    self.state.nodes[name], holder)
        self.state.nodes[name] = self.sluids.new()
        self.state.registered.pop(name, None)
        self.state.touch()
        if view.ready:
            self._register(view)
            self._beat(name)

    def _beat(self, name: str) -> None:
        running = [r.run_sluid for r in self.state.runs.values()
                   if name in r.nodes and name not in r.epilogs]
        self._producer.produce(self.topics.heartbeats, encode("NodeHeartbeat", {
            "node_sluid": self.state.nodes[name], "name": name,
            "time_ms": int(time.time() * 1000), "runs": running,
        }), self.state.nodes[name].encode())

    def _beat_if_due(self) -> None:
        if time.monotonic() < self._next_beat:
            return
        for name, view in self.nodes.items():
            if view.ready:
                self._beat(name)
        self._producer.poll(0)
        self._next_beat = time.monotonic() + self.heartbeat_s

    def _apply_topology(self) -> None:
        if "Node" not in self._synced:
            return
        text = topology_yaml({n: v.labels for n, v in self.nodes.items()})
        digest = hashlib.sha256(text.encode()).hexdigest()
        if not text or digest == self.state.topology_digest:
            return
        config_sluid = self.sluids.new()
        self.send(config_sluid, "ApplyConfig", {"config_sluid": config_sluid,
                                                "kind": "topology", "text": text,
                                                "source": "sluice bridge (node labels)"})
        self.state.topology_digest = digest
        self.state.touch()
        log.info("applied the nodes' topology (%d nodes)", len(self.nodes))

    # -- node commands in -----------------------------------------------------------------

    def _reader(self) -> Any:
        reader = consumer(self.settings.bootstrap, overrides={"enable.partition.eof": False})
        assigned = []
        for partition in range(self.settings.partitions):
            offset = self.state.offsets.get(partition)
            if offset is None:
                tp = TopicPartition(self.topics.node_commands, partition)
                for attempt in range(30):
                    try:
                        offset = int(reader.get_watermark_offsets(tp, timeout=10)[1])
                        break
                    except KafkaException:
                        if attempt == 29:
                            raise
                        time.sleep(1.0)
                self.state.offsets[partition] = int(offset or 0)
            assigned.append(TopicPartition(self.topics.node_commands, partition,
                                           self.state.offsets[partition]))
        reader.assign(assigned)
        self.state.save()
        return reader

    def _on_commands(self, messages: list[Any]) -> None:
        """A pass's node commands: each of our nodes' checked as a node daemon checks its own
        (signature, expiry, replay: docs/security.md), the replay cache written once, then
        the accepted ones run in order. A refused one runs nothing and is reported."""
        names = {sluid: name for name, sluid in self.state.nodes.items()}
        accepted: list[tuple[str, str, dict[str, Any]]] = []
        with self._checker.batch():  # on disk before any of them runs
            for message in messages:
                checked = self._checked(message, names)
                if checked is not None:
                    accepted.append(checked)
                self.state.offsets[message.partition()] = message.offset() + 1
                self.state.touch()
        for name, node, record in accepted:
            self._run_command(name, node, record)

    def _checked(self, message: Any, names: dict[str, str],
                 ) -> tuple[str, str, dict[str, Any]] | None:
        """(record name, node name, record) of a command for one of our nodes that may run."""
        key = (message.key() or b"").decode(errors="replace")
        if key not in names or not message.value():
            return None  # another node's, or a tombstone
        try:
            name, record = decode(message.value())
        except DecodeError as exc:
            log.error("undecodable node command at %s/%d: %s", message.partition(),
                      message.offset(), exc)
            self._dead_letters.write(message, f"Undecodable: {exc}")
            return None
        refused = self._checker.check(
            message.value(), signature_of(message.headers()),
            str(record.get("node_sluid", "")), str(record.get("run_sluid", "")),
            int(time.time() * 1000), node=key)
        if refused is not None:
            self._refuse(names[key], key, name, record, *refused)
            return None
        return name, names[key], record

    def _run_command(self, name: str, node: str, record: dict[str, Any]) -> None:
        if name in ("LaunchRun", "KillRun"):
            handler = self.gangs.launch if name == "LaunchRun" else self.gangs.kill
            if not self._guarded(handler, node, record):
                self._retry.append((name, node, record))  # the API server did not answer
            elif name == "KillRun":  # the run is over here: its launch is not run again
                run = record.get("run_sluid")
                self._retry = [(n, at, r) for n, at, r in self._retry
                               if not (n == "LaunchRun" and at == node
                                       and r.get("run_sluid") == run)]
        elif name == "RequestRegistration" and record.get("holder") not in (None, "", node):
            self._renew_sluid(node, str(record["holder"]))
        elif name == "RequestRegistration":
            self._register_again(node)
        elif name == "SignalRun":
            self._refuse(node, self.state.nodes[node], name, record, SIGNAL_UNSUPPORTED,
                         "Kubernetes has no way to signal a pod's processes; scancel (without "
                         "-s) deletes the run's pods")
        elif name == "SetRunLimit":
            pass  # a pod has no limit of its own here: the shard's TIMEOUT kill deletes it
        else:
            log.warning("ignoring a %s for node %s", name, node)

    def _refuse(self, node: str, node_sluid: str, name: str, record: dict[str, Any],
                reason: str, detail: str) -> None:
        """Run nothing for a command; log and report why (``ReportCommandRefused`` → the
        ``NodeCommandRefused`` fact), as a node daemon does."""
        run_sluid = str(record.get("run_sluid", ""))[:64]
        log.error("node %s: refused a %s for run %s: %s (%s)", node, name, run_sluid, reason,
                  detail)
        self.send(node_sluid, "ReportCommandRefused", {
            "node_sluid": node_sluid, "node_name": node, "command": name[:64],
            "run_sluid": run_sluid, "reason": reason, "detail": detail[:512]})

    # -- the loop -------------------------------------------------------------------------

    def run(self) -> None:
        """Watch, decide nothing, relay everything, until stopped."""
        signal.signal(signal.SIGTERM, lambda *_: self.stop())
        reader = self._reader()
        self.kube.start_watches()
        log.info("bridge up: scheduler %r, %d node-commands partitions; pods of a namespace "
                 "without sluice.dev/user: %s", self.kube.scheduler_name,
                 self.settings.partitions, f"jobs of {self.gangs.default_user}"
                 if self.gangs.default_user else "refused (NoSluiceUser)")
        next_check = 0.0
        try:
            while not self._stopping:
                self._drain_events()
                self._on_commands([m for m in reader.consume(500, 0.05)
                                   if m.error() is None])
                self._beat_if_due()
                if time.monotonic() >= next_check:
                    self._apply_topology()
                    retry, self._retry = self._retry, []
                    for name, node, record in retry:
                        self._run_command(name, node, record)
                    self._guarded(self.gangs.settle_runs)
                    self._guarded(self.gangs.check_waiting)
                    next_check = time.monotonic() + 2.0
                self._commit()
        finally:
            self.kube.stop()
            self._commit()
            reader.close()

    def _commit(self) -> None:
        """Flush this pass's requests, then save the state that says they were sent (a
        request the broker has not taken leaves the state unsaved: the next pass tries again)."""
        self._producer.poll(0)
        if not self.state.dirty:
            return
        left = self._producer.flush(10)
        if left:
            log.warning("%d requests not yet taken by the broker; the state waits", left)
            return
        self.state.save()

    def _on_slice(self, event: str, obj: dict[str, Any]) -> None:
        for name in self.claims.on_slice(event, obj):
            if name in self._node_objects:
                self._on_node("MODIFIED", self._node_objects[name])  # its GPUs may differ

    def _on_claim(self, event: str, obj: dict[str, Any]) -> None:
        self.claims.on_claim(event, obj)
        if event != "DELETED":
            self.gangs.on_claim(obj)

    def _drain_events(self, most: int = 500) -> None:
        first = {"Node", "ResourceSlice"} if self.kube.dra else {"Node"}
        handlers = {"Node": self._on_node, "ResourceSlice": self._on_slice,
                    "ResourceClaim": self._on_claim, "Pod": self.gangs.on_pod}
        for _ in range(most):
            try:
                kind, event, obj = self.kube.events.get_nowait()
            except queue.Empty:
                return
            if kind not in first and not first <= self._synced:
                self.kube.events.put((kind, event, obj))  # pods wait until nodes are known
                return
            if event == "SYNCED":  # in order: after the ADDED events of the same list
                self._synced.add(kind)
                if kind == "Pod":
                    self._guarded(self.gangs.reconcile, set(obj.get("uids", ())))
            else:
                self._guarded(handlers[kind], event, obj)

    @staticmethod
    def _guarded(handler: Any, *args: Any) -> bool:
        """Run one handler; False when the API server refused or did not answer (logged, not
        fatal: a failed launch or kill is run again, the runs' free slots are bound again at
        each check, the next event of a pod settles it again). An API server that restarts
        or is out of reach raised urllib3's errors, not an ApiException: they ended the
        bridge (red team)."""
        name = getattr(handler, "__name__", "")
        try:
            handler(*args)
        except ApiException as exc:
            log.warning("%s: the API server answered %s %s%s", name, exc.status, exc.reason,
                        _status_message(exc))
            return False
        except (HTTPError, OSError) as exc:
            log.warning("%s: the API server does not answer: %s", name, exc)
            return False
        return True

    def stop(self) -> None:
        """Ask the loop to end."""
        self._stopping = True


def _registration(view: KubeNode) -> str:
    """What a node was registered with (kept in the state file: a restarted bridge registers
    only a node whose resources changed)."""
    r = view.resources
    return json.dumps([r.cpus, r.mem_mb, r.gpus, r.gpu_type, list(r.features)])


def _status_message(exc: ApiException) -> str:
    """The message of the API server's Status (": ..."), which says why: a 422's reason alone
    ("Unprocessable Entity") hid that the bridge's role lacked resourceclaims/binding."""
    try:
        message = json.loads(exc.body or "{}").get("message", "")
    except (ValueError, AttributeError):
        return ""
    return f": {str(message)[:500]}" if message else ""
