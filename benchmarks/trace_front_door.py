"""Where an idle relay submission spends its time, hop by hop, from outside the processes.

    sluice up                     # then, with the same SLUICE_* settings:
    .venv/bin/python benchmarks/trace_front_door.py --samples 60 --gap 0.3

A warm client (in this process) hands ``--samples`` submissions to the views' relay
(``POST /v1/requests``), one at a time, ``--gap`` seconds apart, while four readers tail the
topics the request crosses. For each submission it prints, in ms after the POST was sent:

- the relay's record in ``requests``: its timestamp (when the relay produced it) and when a
  reader got it (the broker has it);
- the intake's record in ``shard-inbox``: its timestamp (when the intake forwarded it) and
  when a reader got it;
- the shard's ``JobQueued`` in the ledger: its timestamp (produced in the shard's
  transaction), when a ``read_uncommitted`` reader got it, and when a ``read_committed`` one
  did (the transaction committed);
- the relay's answer;

then p50 / p90 / p99 / max of each and of each hop between them, with the load average, and
the hops of the five slowest. Record
timestamps are the producers' clocks (one host: comparable). The readers use
``fetch.wait.max.ms`` 100, so a reader's own wake-up is in its figures (a few ms at most).
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from confluent_kafka import OFFSET_END, Consumer, TopicPartition

from cli.client import Client
from cli.submit import real_user
from schemas import decode
from streams.clients import consumer, ready_messages
from streams.settings import Settings

Seen = dict[tuple[str, str, str], tuple[float, float]]
"""(reader, record name, job SLUID) → (when the reader got it, the record's timestamp), s."""

MARKS = (
    ("relay produced (record time)", "req", 1), ("requests read", "req", 0),
    ("intake forwarded (record time)", "inbox", 1), ("inbox read", "inbox", 0),
    ("fact produced (record time)", "uncommitted", 1), ("fact read uncommitted", "uncommitted", 0),
    ("fact read committed", "committed", 0),
)


def tail(client: Client, topic: str, isolation: str, tag: str, seen: Seen,
         stop: threading.Event) -> threading.Thread:
    """A reader of ``topic`` from its end that records when each request or fact arrives."""
    reader: Consumer = consumer(client.settings.bootstrap,
                                overrides={"isolation.level": isolation, "fetch.wait.max.ms": 100})
    partitions = reader.list_topics(topic, timeout=10).topics[topic].partitions
    reader.assign([TopicPartition(topic, p, OFFSET_END) for p in partitions])

    def run() -> None:
        while not stop.is_set():
            for message in ready_messages(reader, 500, 0.05):
                if message.error() is not None or not message.value():
                    continue
                now = time.time()
                try:
                    name, record = decode(message.value())
                except Exception:
                    continue
                key = (tag, name, str(record.get("job_sluid", "")))
                seen.setdefault(key, (now, message.timestamp()[1] / 1000))
        reader.close()

    return threading.Thread(target=run, daemon=True)


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def one(client: Client, spec: dict[str, Any], seen: Seen, gap: float) -> dict[str, float]:
    """One relay submission; the time of each mark after the POST (s; NaN when not seen)."""
    sluid = client.sluids.new()
    record = {"job_sluid": sluid, "spec": spec}
    [(_name, value, key)] = client._encode([(sluid, "SubmitJob", record)])
    headers = client.credential(value)
    sent = time.time()
    answer = client._relay(key, value, headers, 30.0, False)
    answered = time.time()
    if not answer or "job" not in answer:
        raise SystemExit(f"no decision for {sluid}: {answer}")
    time.sleep(gap)  # the readers catch up; the system is idle again
    names = {"req": "SubmitJob", "inbox": "SubmitJob", "uncommitted": "JobQueued",
             "committed": "JobQueued"}
    row = {}
    for label, tag, index in MARKS:
        found = seen.get((tag, names[tag], sluid))
        row[label] = found[index] - sent if found else float("nan")
    row["answered"] = answered - sent
    return row


def report(rows: list[dict[str, float]]) -> None:
    def line(label: str, values: list[float]) -> str:
        ordered = sorted(v * 1e3 for v in values if not math.isnan(v))
        if not ordered:
            return f"  {label:58s} (not seen)"
        n = len(ordered)
        return (f"  {label:58s} p50 {statistics.median(ordered):6.1f}  p90 "
                f"{ordered[int(0.9 * n)]:6.1f}  p99 {ordered[min(n - 1, int(0.99 * n))]:6.1f}"
                f"  max {ordered[-1]:6.1f}")

    labels = list(rows[0])
    pairs = list(zip(["POST", *labels], labels, strict=False))

    def hops(row: dict[str, float]) -> list[float]:
        """Each mark's time after the mark before it (the first: after the POST)."""
        return [row[after] - (row[before] if before != "POST" else 0.0)
                for before, after in pairs]

    print("ms after the POST:")
    for label in labels:
        print(line(label, [r[label] for r in rows]))
    print("hops:")
    each = [hops(r) for r in rows]
    for k, (before, after) in enumerate(pairs):
        print(line(f"{before} -> {after}", [h[k] for h in each]))
    slowest = sorted(range(len(rows)), key=lambda i: -rows[i]["answered"])[:5]
    print("slowest (sample: the hops in ms):")
    for i in slowest:
        print(f"  {i + 1}: " + " ".join(f"{1e3 * h:.1f}" for h in each[i]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=60)
    parser.add_argument("--gap", type=float, default=0.3, help="seconds between submissions")
    args = parser.parse_args()
    client = Client(Settings.from_env())
    seen: Seen = {}
    stop = threading.Event()
    topics = client.topics
    readers = [tail(client, topics.requests, "read_uncommitted", "req", seen, stop),
               tail(client, topics.shard_inbox, "read_uncommitted", "inbox", seen, stop),
               tail(client, topics.events, "read_uncommitted", "uncommitted", seen, stop),
               tail(client, topics.events, "read_committed", "committed", seen, stop)]
    for reader in readers:
        reader.start()
    time.sleep(3)  # assignments settle
    spec = {"name": "trace", "user": real_user(), "command": ["true"], "workdir": "/tmp",
            "env": {}}
    before = load()
    rows = [one(client, spec, seen, args.gap) for _ in range(args.samples)]
    stop.set()
    print(f"{args.samples} idle relay submissions, {args.gap} s apart (load {before} -> "
          f"{load()})")
    report(rows)


if __name__ == "__main__":
    main()
