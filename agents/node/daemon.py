"""``sluice node``: the slurmd of Sluice.

One daemon is one node. It

1. keeps its node SLUID in its state directory (minted on first start);
2. positions its command reader on the one ``node-commands`` partition its key hashes to (murmur2,
   like the producers), *before* registering, so no launch can slip past it;
3. registers (``RegisterNode``) and heartbeats on ``sluice.heartbeats``;
4. runs each ``LaunchRun`` addressed to it: the batch host runs the command as a child process in
   its own session with the job's environment and output files; other nodes hold the allocation;
5. runs the prolog before a run and the epilog after it on every node (see ``agents.node.runs``);
6. reports the exit status (``ReportJobExit``), prolog failures (``ReportProlog``) and epilog
   results (``ReportEpilog``); on ``KillRun`` sends SIGTERM to the run's process group and
   SIGKILL after the grace period.

Commands are handled at most once per run SLUID; the offset of the next command is kept in the
state directory, so a restarted daemon neither misses nor repeats a launch.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaException, TopicPartition

from agents.node.runs import RunTable, Scripts
from schemas import DecodeError, SluidGenerator, decode, encode
from streams.clients import consumer, producer
from streams.partitioner import partition_for
from streams.settings import Settings
from streams.topics import Topics

__all__ = ["NodeDaemon", "NodeResources"]

log = logging.getLogger(__name__)


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
    ) -> None:
        self.settings, self.name, self.resources = settings, name, resources
        self.topics = Topics(settings)
        self.state_dir = state_dir or settings.home / "nodes" / name
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.heartbeat_s = heartbeat_s
        self.node_sluid = self._load_or_mint_sluid()
        self._producer = producer(settings.bootstrap)
        self._runs = RunTable(name, self.state_dir, kill_wait_s, self._report, scripts)
        self._stopping = False
        self._partition = partition_for(self.node_sluid.encode(), settings.partitions)
        self._offset_file = self.state_dir / "commands.offset"

    # -- identity and position ------------------------------------------------------------

    def _load_or_mint_sluid(self) -> str:
        path = self.state_dir / "node.sluid"
        if path.exists():
            return path.read_text().strip()
        sluid = SluidGenerator(self.settings.cluster_id).new()
        path.write_text(sluid + "\n")
        return sluid

    def _start_offset(self, reader: Any, attempts: int = 30) -> int:
        if self._offset_file.exists():
            return int(self._offset_file.read_text().strip())
        tp = TopicPartition(self.topics.node_commands, self._partition)
        for attempt in range(attempts):
            try:
                _low, high = reader.get_watermark_offsets(tp, timeout=10)
                return int(high)
            except KafkaException as exc:  # a new topic's leader, a restarting broker
                if attempt == attempts - 1:
                    raise
                log.warning("node %s: waiting for the command topic: %s", self.name, exc)
                time.sleep(min(0.2 * 2**attempt, 2.0))
        raise AssertionError("unreachable")

    # -- main loop ------------------------------------------------------------------------

    def run(self) -> None:
        """Register, then serve commands and heartbeat until stopped."""
        signal.signal(signal.SIGTERM, lambda *_: self.stop())
        reader = consumer(self.settings.bootstrap, overrides={"enable.partition.eof": False})
        offset = self._start_offset(reader)
        reader.assign([TopicPartition(self.topics.node_commands, self._partition, offset)])
        self._register()
        log.info("node %s (%s) up, commands from partition %d offset %d",
                 self.name, self.node_sluid, self._partition, offset)
        next_beat = 0.0
        try:
            while not self._stopping:
                message = reader.poll(0.1)
                if message is not None and message.error() is None:
                    self._on_command(message.key(), message.value())
                    self._offset_file.write_text(f"{(message.offset() or 0) + 1}\n")
                self._runs.poll()
                if time.monotonic() >= next_beat:
                    self._heartbeat()
                    next_beat = time.monotonic() + self.heartbeat_s
                self._producer.poll(0)
        finally:
            self._runs.terminate_all()
            self._producer.flush(10)
            reader.close()

    def stop(self) -> None:
        """Ask the loop to end (runs are terminated on the way out)."""
        self._stopping = True

    # -- requests out ---------------------------------------------------------------------

    def _send(self, topic: str, key: str, name: str, record: dict[str, Any]) -> None:
        self._producer.produce(topic, encode(name, record), key.encode())
        self._producer.poll(0)

    def _register(self) -> None:
        r = self.resources
        self._send(self.topics.requests, self.node_sluid, "RegisterNode", {
            "node_sluid": self.node_sluid, "name": self.name, "cpus": r.cpus,
            "mem_mb": r.mem_mb, "gpus": r.gpus, "gpu_type": r.gpu_type,
            "features": list(r.features), "boot_ms": int(time.time() * 1000),
        })
        self._producer.flush(10)

    def _heartbeat(self) -> None:
        self._send(self.topics.heartbeats, self.node_sluid, "NodeHeartbeat", {
            "node_sluid": self.node_sluid, "name": self.name,
            "time_ms": int(time.time() * 1000), "runs": self._runs.running(),
        })

    def _report(self, name: str, launch: dict[str, Any], fields: dict[str, Any]) -> None:
        """Send a ReportJobExit, ReportProlog or ReportEpilog for one run."""
        self._send(self.topics.requests, launch.get("job_sluid") or self.node_sluid, name, {
            "job_sluid": launch.get("job_sluid", ""), "run_sluid": launch["run_sluid"],
            "node_sluid": self.node_sluid, "node_name": self.name, **fields,
        })
        self._producer.flush(10)

    # -- commands in ----------------------------------------------------------------------

    def _on_command(self, key: bytes | None, value: bytes | None) -> None:
        if key is None or key.decode(errors="replace") != self.node_sluid or not value:
            return  # another node's command on the same partition
        try:
            name, record = decode(value)
        except DecodeError as exc:
            log.error("node %s: undecodable command: %s", self.name, exc)
            return
        if name == "LaunchRun":
            self._runs.launch(record)
        elif name == "KillRun":
            self._runs.kill(record["run_sluid"], record.get("reason", ""), record)
        else:
            log.warning("node %s: ignoring a %s on node-commands", self.name, name)


def detect_resources() -> NodeResources:
    """This host's CPUs and memory (for a daemon started without explicit sizes)."""
    mem_kb = 0
    meminfo = Path("/proc/meminfo")
    if meminfo.exists():
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_kb = int(line.split()[1])
    return NodeResources(cpus=os.cpu_count() or 1, mem_mb=mem_kb // 1024)
