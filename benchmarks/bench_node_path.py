"""One node daemon's CPU per trivial job, in process, and the pieces it was suspected of.

    .venv/bin/python benchmarks/bench_node_path.py [--jobs 300] [--bootstrap HOST:PORT]
        [--munge-socket PATH [--munged-pid PID]]

- **path**: a ``NodeDaemon`` (``pgid`` tracking, its real supervisor server) is handed signed
  ``LaunchRun`` and ``KillRun`` records of ``true`` as ``nobody`` (a sealed environment of 30
  values) through its ``_pass``, as its reader thread would; its producer is a fake that keeps
  nothing, so what is measured is the daemon's own Python, not Kafka. Prints the process's CPU
  per job (its threads included; the supervisors and jobs are other processes).
- **pieces**, each repeated ``--jobs`` times: a command's check (Ed25519 signature and replay
  cache, one entry a command), the signature alone, opening the sealed environment (key file
  and decryption), resolving the owner, and with ``--munge-socket`` a MUNGE credential (the
  client's CPU and munged's).
- with ``--bootstrap``: how long a lone record waits in ``Consumer.consume(64, 0.5)`` against
  ``consume(1, 0.5)`` then ``consume(64, 0)`` (the daemon's reader), 20 records 150 ms apart.

``PYTHONPATH=/other/tree`` measures another tree with this script.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agents.auth.command_signature import CommandChecker, CommandSigner
from agents.auth.daemon_keys import CommandKey
from agents.auth.node_keys import (
    ensure_keys,
    load_command_private,
    load_env_private,
    load_env_public,
    public_raw,
)
from agents.auth.sealed_env import open_env, seal_env
from agents.node.command_feed import CommandFeed
from agents.node.daemon import NodeDaemon, NodeResources
from agents.node.owner import resolve_owner
from schemas.writer import encode
from streams.settings import Settings


class _Producer:
    def produce(self, *_args: Any, **_kwargs: Any) -> None:
        pass

    def poll(self, _timeout: float = 0) -> int:
        return 0

    def flush(self, _timeout: float = -1) -> int:
        return 0


class _Message:
    def __init__(self, key: str, value: bytes, header: tuple[str, bytes], offset: int) -> None:
        self._key, self._value, self._header, self._offset = key, value, header, offset

    def error(self) -> None:
        return None

    def key(self) -> bytes:
        return self._key.encode()

    def value(self) -> bytes:
        return self._value

    def headers(self) -> list[tuple[str, bytes]]:
        return [self._header]

    def offset(self) -> int:
        return self._offset


class _Reader:
    def __init__(self, messages: list[_Message]) -> None:
        self.messages = messages

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Any]:
        taken, self.messages = self.messages[:num_messages], self.messages[num_messages:]
        if not taken and timeout > 0:
            time.sleep(min(timeout, 0.05))
        return taken


class _Path:
    """Signed commands for one daemon, handed through its ``_pass``."""

    def __init__(self, settings: Settings, home: Path) -> None:
        self.node = NodeDaemon(settings, "n01", NodeResources(1, 512), state_dir=home / "n01",
                               proctrack="pgid")
        self.node._producer = _Producer()  # type: ignore[assignment]
        self.node._next_beat = time.monotonic() + 3600
        self.signer = CommandSigner(load_command_private(settings), settings.cluster, 300)
        self.sealed = seal_env({f"V{i}": "x" * 20 for i in range(30)},
                               load_env_public(settings).public_bytes_raw(),
                               settings.cluster, "nobody")
        self.offset = 0

    def _pass(self, name: str, record: dict[str, Any]) -> None:
        value = encode(name, record)
        self.offset += 1
        header = self.signer.header(self.node.node_sluid, record["run_sluid"], value,
                                    int(time.time() * 1000))
        feed = CommandFeed(_Reader([_Message(self.node.node_sluid, value, header, self.offset)]),
                           keep=self.node._ours)
        feed.start()
        while feed._queue.empty():
            time.sleep(0.0005)
        self.node._pass(feed)
        feed.stop()

    def job(self, i: int) -> None:
        node = self.node
        run = f"sR{os.getpid()}x{i}"
        common = {"job_sluid": f"sJ{i}", "run_sluid": run, "node_sluid": node.node_sluid,
                  "node_name": node.name, "issued_ms": 0}
        self._pass("LaunchRun", {
            **common, "job_id": i, "batch_host": True, "nodes": [node.name],
            "restart_count": 0, "user": "nobody", "partition": "p", "name": "t",
            "command": ["true"], "workdir": "/tmp", "env": {}, "sealed_env": self.sealed,
            "output": "/dev/null", "error": "", "time_limit_s": 0})
        held = node._runs._runs.get(run)
        if held is not None and held.process is not None:
            held.process.wait(30)
        node._runs.poll()
        self._pass("KillRun", {**common, "reason": "TERMINATE"})

    def close(self) -> None:
        if self.node._runs.server is not None:
            self.node._runs.server.close()


def _each(label: str, jobs: int, step: Callable[[int], object]) -> None:
    step(-1)
    cpu, wall = time.process_time(), time.perf_counter()
    for i in range(jobs):
        step(i)
    print(f"  {label:40} {1000 * (time.process_time() - cpu) / jobs:7.3f} ms CPU "
          f"{1000 * (time.perf_counter() - wall) / jobs:7.3f} ms wall")


def _pieces(settings: Settings, home: Path, jobs: int, munge_socket: str,
            munged_pid: int) -> None:
    signer = CommandSigner(load_command_private(settings), settings.cluster, 300)
    public = CommandKey(public_raw(load_command_private(settings).public_key()))
    checker = CommandChecker(lambda: public, settings.cluster, "N1", home / "seen")
    value = os.urandom(600)
    now = int(time.time() * 1000)
    headers = [signer.header("N1", f"R{i}", value, now)[1] for i in range(-1, jobs)]
    _each("command check (signature, replay cache)", jobs,
          lambda i: checker.check(value, headers[i + 1], "N1", f"R{i}", now))
    from agents.auth.command_signature import signed_message

    message = signed_message(settings.cluster, "N1", "R", now, value)
    signature = load_command_private(settings).sign(message)
    _each("Ed25519 signature alone", jobs, lambda _i: public.verify(signature, message))
    sealed = seal_env({f"V{i}": "x" * 20 for i in range(30)},
                      load_env_public(settings).public_bytes_raw(), settings.cluster, "nobody")
    _each("sealed environment (key file + open)", jobs,
          lambda _i: open_env(sealed, load_env_private(settings).private_bytes_raw(),
                              settings.cluster, "nobody"))
    _each("owner (passwd, groups)", jobs, lambda _i: resolve_owner("nobody", False))
    if munge_socket:
        from agents.auth.headers import client_headers

        before = _cpu_s(munged_pid)
        _each("MUNGE credential (client)", jobs,
              lambda i: client_headers(value, f"s{i}", "munge", munge_socket=munge_socket))
        if munged_pid:
            used = _cpu_s(munged_pid) - before
            print(f"  {'MUNGE credential (munged)':40} {1000 * used / (jobs + 1):7.3f} ms CPU")


def _cpu_s(pid: int) -> float:
    """CPU seconds of process ``pid`` (0 when there is none)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _latency(bootstrap: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    from streams.clients import consumer, producer
    from streams.kafka_native import TopicPartition

    for label, batch in (("consume(64, 0.5)", False), ("consume(1, 0.5) + consume(64, 0)", True)):
        topic = f"bench-node-latency-{os.getpid()}-{int(batch)}"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for future in admin.create_topics([NewTopic(topic, 1, 1)]).values():
            future.result()
        writer, reader = producer(bootstrap), consumer(bootstrap)
        reader.assign([TopicPartition(topic, 0, 0)])
        waited: list[float] = []

        def read(reader: Any = reader, batch: bool = batch, waited: list[float] = waited) -> None:
            while len(waited) < 20:
                messages = reader.consume(1 if batch else 64, 0.5)
                if messages and batch:
                    messages += reader.consume(64, 0)
                waited.extend(time.time() - float(m.value()) for m in messages
                              if m.error() is None)

        thread = threading.Thread(target=read, daemon=True)
        thread.start()
        time.sleep(2)
        for _ in range(20):
            writer.produce(topic, str(time.time()).encode(), partition=0)
            writer.flush(5)
            time.sleep(0.15)
        thread.join(10)
        reader.close()
        admin.delete_topics([topic])
        print(f"  {label:40} a lone record waited "
              f"{', '.join(f'{1000 * w:.0f}' for w in sorted(waited))} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=300)
    parser.add_argument("--munge-socket", default="")
    parser.add_argument("--munged-pid", type=int, default=0, help="also print munged's CPU")
    parser.add_argument("--bootstrap", default="")
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="bench-node-path-"))
    settings = Settings.from_env({"SLUICE_HOME": str(home), "SLUICE_TOPIC_PREFIX": "benchnode",
                                  "KAFKA_BOOTSTRAP": "127.0.0.1:1", "SLUICE_AUTH": "none"})
    ensure_keys(settings)
    print(f"{os.cpu_count()} CPUs; load average {os.getloadavg()}; {args.jobs} jobs; "
          f"code from {Path(sys.modules['agents'].__file__ or '').parent.parent}")
    path = _Path(settings, home)
    try:
        _each("node daemon, one trivial job", args.jobs, path.job)
    finally:
        path.close()
    _pieces(settings, home, args.jobs, args.munge_socket, args.munged_pid)
    if args.bootstrap:
        _latency(args.bootstrap)


if __name__ == "__main__":
    main()
