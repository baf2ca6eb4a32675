"""Worker failover: SIGKILL the shard's owner, time until the survivor writes its first fact.

Usage::

    .venv/bin/python benchmarks/bench_worker_failover.py [--kills 20] [--mode both]
        [--ledger-jobs 3000] [--session-timeout 3]

Two workers in one group (each with its own state directory, as on two hosts), the views and
4 node daemons; the ledger is first filled with ``--ledger-jobs`` finished jobs, then a job is
submitted every 0.25 s for the whole run. Each sample: find the owner (``worker/owned.json``),
``kill -9`` it, and time until the ledger shows a fact with a higher ``shard_seq`` (written by
the survivor); then restart the killed worker, which becomes the standby. ``warm``: standbys on
(``agents.shard_standby``), the survivor recovers from a store a second behind; ``cold``:
standbys off and the survivor's store deleted before each kill, so it folds the whole ledger.
The time is the group's session timeout (``--session-timeout``, the worker's
``SLUICE_WORKER_SESSION_TIMEOUT``; a broker allows values down to its
``group.min.session.timeout.ms``: 2 s on the bundled broker, 6 s by Kafka's default) plus the
rebalance plus recovery. Uses ``KAFKA_BOOTSTRAP`` or starts a local broker.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from broker import BenchBroker, machine_line
from confluent_kafka import OFFSET_BEGINNING, TopicPartition

from schemas import DecodeError, SluidGenerator, decode
from streams.clients import consumer
from streams.topics import Topics
from tests.e2e.harness import LocalSystem
from tests.e2e.ledger import produce_raw, submit_records

WORKERS = ("worker-a", "worker-b")
_RECOVERED = re.compile(r"recovered: seq (\d+), inbox offset -?\d+, (\d+) facts from the ledger")


class LedgerFollower:
    """Follows the ledger: the highest shard_seq seen and how many jobs ended."""

    def __init__(self, system: LocalSystem) -> None:
        topic = Topics(system.settings).events
        self.reader = consumer(system.settings.bootstrap)
        partitions = self.reader.list_topics(topic, timeout=10).topics[topic].partitions
        self.reader.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        self.max_seq = 0
        self.ended = 0

    def poll(self) -> None:
        """Read what is there now."""
        while messages := self.reader.consume(num_messages=5000, timeout=0.05):
            for message in messages:
                value = message.value()
                if message.error() is not None or value is None:
                    continue
                try:
                    name, record = decode(value)
                except DecodeError:
                    continue
                self.max_seq = max(self.max_seq, int(record.get("shard_seq", 0)))
                self.ended += name == "JobEnded"


def _recovered_tail(log: Path, after: int) -> int | None:
    """The ledger-tail size in the last 'recovered' line written after byte ``after``."""
    text = log.read_bytes()[after:].decode(errors="replace")
    found = _RECOVERED.findall(text)
    return int(found[-1][1]) if found else None


def measure(broker: BenchBroker, mode: str, kills: int, ledger_jobs: int,
            session_s: float) -> list[tuple[float, int | None]]:
    home = broker.home / mode
    system = LocalSystem(broker.bootstrap, home / "home", f"wfo{mode[0]}{int(time.time())}")
    homes = {name: home / name for name in WORKERS}
    secret = str(home / "inbox.key")
    env = {"SLUICE_WORKER_SECRET": secret, "SLUICE_WORKER_SESSION_TIMEOUT": str(session_s),
           "SLUICE_STANDBY": "1" if mode == "warm" else "0"}
    stop = threading.Event()
    samples: list[tuple[float, int | None]] = []
    try:
        for name in WORKERS:
            system.start(name, "worker", "--loglevel", "info",
                         env={**env, "SLUICE_HOME": str(homes[name])})
        system.start("projections", "projections")
        system.start_nodes(4, cpus=4)
        system.wait_nodes_idle(4, 180)
        follower = LedgerFollower(system)
        generator = SluidGenerator(system.settings.cluster_id)
        for first in range(0, ledger_jobs, 500):
            produce_raw(system.settings, [submit_records(generator.new())
                                          for _ in range(min(500, ledger_jobs - first))])

        def all_ended() -> bool:
            follower.poll()
            return follower.ended >= ledger_jobs

        system.wait(all_ended, 600, f"{ledger_jobs} jobs to end")
        print(f"  {mode}: ledger holds {follower.max_seq} facts", flush=True)

        def trickle() -> None:
            while not stop.wait(0.25):
                produce_raw(system.settings, [submit_records(generator.new())])

        threading.Thread(target=trickle, daemon=True).start()
        for i in range(kills):
            owner = system.wait(lambda: system.shard_owner(homes), 120, "an owner")
            survivor = next(n for n in WORKERS if n != owner)
            if mode == "cold":
                shutil.rmtree(homes[survivor] / "worker" / f"shard-{system.settings.cluster}.db",
                              ignore_errors=True)
            log = home / "home" / "logs" / f"{survivor}.log"
            log_at = log.stat().st_size
            killed = time.monotonic()
            system.kill(owner)
            time.sleep(0.5)  # anything the owner committed before it died is readable now
            follower.poll()
            seq_at_kill = follower.max_seq

            def new_fact(seq_at_kill: int = seq_at_kill) -> bool:
                follower.poll()
                return follower.max_seq > seq_at_kill

            system.wait(new_fact, 300, "a fact from the survivor")
            took = time.monotonic() - killed
            tail = _recovered_tail(log, log_at)
            samples.append((took, tail))
            print(f"  {mode} #{i + 1}: kill -> first fact {took:.2f} s "
                  f"(recovery folded {tail if tail is not None else '?'} facts)", flush=True)
            system.start(owner, "worker", "--loglevel", "info",
                         env={**env, "SLUICE_HOME": str(homes[owner])})
            time.sleep(max(5.0, 2 * session_s))  # it joins the group and (warm) catches up
    finally:
        stop.set()
        system.stop()
    return samples


def _report(mode: str, samples: list[tuple[float, int | None]]) -> None:
    times = sorted(t for t, _ in samples)
    tails = [n for _, n in samples if n is not None]
    p99 = times[min(len(times) - 1, round(0.99 * (len(times) - 1)))]
    print(f"{mode}: {len(times)} kills, kill -> first fact p50 {statistics.median(times):.2f} s, "
          f"p99 {p99:.2f} s, max {times[-1]:.2f} s; facts folded at recovery: median "
          f"{statistics.median(tails) if tails else '?'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--mode", choices=("warm", "cold", "both"), default="both")
    parser.add_argument("--ledger-jobs", type=int, default=3000)
    parser.add_argument("--session-timeout", type=float, default=3.0)
    args = parser.parse_args()
    broker = BenchBroker.start("sluice-bench-wfo-")
    print(machine_line())
    print(f"load before: {os.getloadavg()[0]:.2f}; session timeout {args.session_timeout} s; "
          f"broker {broker.bootstrap}")
    try:
        modes = ("warm", "cold") if args.mode == "both" else (args.mode,)
        results = {m: measure(broker, m, args.kills, args.ledger_jobs, args.session_timeout)
                   for m in modes}
        for mode, samples in results.items():
            _report(mode, samples)
        print(f"load after: {os.getloadavg()[0]:.2f}")
    finally:
        broker.stop()


if __name__ == "__main__":
    main()
