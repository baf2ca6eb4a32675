"""What a node daemon's Kafka clients cost when idle, by client library (issue 17 item 6).

    KAFKA_BOOTSTRAP=… .venv/bin/python benchmarks/bench_client_idle.py --rounds 2 \
        --settle 10 --measure 30 [--kafka-python /path/to/python] [--beat 3.33]

One child process per client library holds what an idle node daemon holds: an idempotent
producer (``acks=all``) and a consumer assigned one partition of a topic, in a group
(``group.id`` set; offsets not committed), fetching with a 10 s ``fetch.wait.max.ms``; a
thread waits for records (``consume``/``poll``/``getmany`` with a 2 s timeout, as the daemon's
command reader) and the main thread sends a small record every ``--beat`` seconds (the
heartbeat; 0: none). Clients:

- ``confluent``: confluent-kafka (librdkafka), as the daemon has it;
- ``aiokafka``: aiokafka (pure Python on asyncio; the worker's faust already depends on it);
- ``kafka-python``: kafka-python (pure Python, threads), run by ``--kafka-python`` (the
  interpreter of a virtualenv that has it: it is no dependency of the project).

After ``--settle`` seconds the parent reads each child's threads' CPU
(``/proc/PID/task/TID/schedstat``) and context switches (wake-ups) over ``--measure`` seconds,
clients alternating round by round; it prints per client the CPU in ms a second, the wake-ups
a second, the threads, and the machine's load average.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

FETCH_WAIT_MS = 10_000
WAIT_S = 2.0


def _confluent(bootstrap: str, topic: str, beat_s: float) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                         "enable.idempotence": True, "linger.ms": 2})
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": f"idle-{topic}",
                       "enable.auto.commit": False, "auto.offset.reset": "latest",
                       "enable.partition.eof": False, "fetch.wait.max.ms": FETCH_WAIT_MS})
    reader.assign([TopicPartition(topic, 0)])
    threading.Thread(target=lambda: [reader.consume(1, WAIT_S) for _ in iter(int, 1)],
                     daemon=True).start()
    _beat(lambda: (producer.produce(topic, b"beat", partition=1), producer.poll(0)), beat_s)


def _kafka_python(bootstrap: str, topic: str, beat_s: float) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True,
                             linger_ms=2)
    reader = KafkaConsumer(bootstrap_servers=bootstrap, group_id=f"idle-{topic}",
                           enable_auto_commit=False, auto_offset_reset="latest",
                           fetch_max_wait_ms=FETCH_WAIT_MS)
    reader.assign([TopicPartition(topic, 0)])
    threading.Thread(target=lambda: [reader.poll(timeout_ms=int(WAIT_S * 1000))
                                     for _ in iter(int, 1)], daemon=True).start()
    _beat(lambda: producer.send(topic, b"beat", partition=1), beat_s)


def _aiokafka(bootstrap: str, topic: str, beat_s: float) -> None:
    import asyncio

    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    async def run() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all",
                                    enable_idempotence=True, linger_ms=2)
        reader = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=f"idle-{topic}",
                                  enable_auto_commit=False, auto_offset_reset="latest",
                                  fetch_max_wait_ms=FETCH_WAIT_MS)
        await producer.start()
        await reader.start()
        reader.assign([TopicPartition(topic, 0)])

        async def read() -> None:
            while True:
                await reader.getmany(timeout_ms=int(WAIT_S * 1000))

        task = asyncio.create_task(read())
        while True:
            if beat_s > 0:
                await producer.send(topic, b"beat", partition=1)
                await asyncio.sleep(beat_s)
            else:
                await asyncio.sleep(3600)
        task.cancel()

    asyncio.run(run())


def _beat(send: Any, beat_s: float) -> None:
    while True:
        if beat_s > 0:
            send()
            time.sleep(beat_s)
        else:
            time.sleep(3600)


CLIENTS = {"confluent": _confluent, "aiokafka": _aiokafka, "kafka-python": _kafka_python}


def threads(pid: int) -> dict[str, tuple[str, int, int]]:
    """Each thread of ``pid``: name, CPU ns, context switches."""
    found = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name = (task / "comm").read_text().strip()
            cpu_ns = int((task / "schedstat").read_text().split()[0])
            status = dict(line.split(":\t", 1) for line in
                          (task / "status").read_text().splitlines() if ":\t" in line)
        except OSError:
            continue
        switches = int(status["voluntary_ctxt_switches"]) + int(
            status["nonvoluntary_ctxt_switches"])
        found[task.name] = (name, cpu_ns, switches)
    return found


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def create_topic(bootstrap: str, topic: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)


def measure(python: str, client: str, bootstrap: str, topic: str, args: Any) -> str:
    child = subprocess.Popen([python, __file__, "--child", client, "--topic", topic,
                              "--beat", str(args.beat)],
                             env={**os.environ, "KAFKA_BOOTSTRAP": bootstrap})
    try:
        time.sleep(args.settle)
        start_load = load()
        before = threads(child.pid)
        start = time.monotonic()
        time.sleep(args.measure)
        after = threads(child.pid)
        elapsed = time.monotonic() - start
        if child.poll() is not None:
            return f"{client}: the child died ({child.returncode})"
    finally:
        child.kill()
        child.wait()
    cpu = sum(ns - before[t][1] for t, (_, ns, _) in after.items() if t in before)
    wakes = sum(cs - before[t][2] for t, (_, _, cs) in after.items() if t in before)
    names = sorted(name for name, _, _ in after.values())
    return (f"{client:13} {cpu / 1e6 / elapsed:6.3f} ms/s  {wakes / elapsed:6.2f} wake-ups/s  "
            f"{len(after)} threads ({', '.join(names)})  load {start_load} -> {load()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--settle", type=float, default=10.0)
    parser.add_argument("--measure", type=float, default=30.0)
    parser.add_argument("--beat", type=float, default=10 / 3,
                        help="seconds between two sends (the heartbeat); 0: none")
    parser.add_argument("--kafka-python", default="",
                        help="a Python interpreter that can import kafka (kafka-python)")
    parser.add_argument("--child", choices=sorted(CLIENTS), help=argparse.SUPPRESS)
    parser.add_argument("--topic", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    bootstrap = os.environ.get("KAFKA_BOOTSTRAP", "127.0.0.1:9092")
    if args.child:
        CLIENTS[args.child](bootstrap, args.topic, args.beat)
        return
    topic = f"idle-clients-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic)
    runs = [("confluent", sys.executable), ("aiokafka", sys.executable)]
    if args.kafka_python:
        runs.append(("kafka-python", args.kafka_python))
    print(f"{os.cpu_count()} CPUs; load {load()}; beat every {args.beat:.2f} s; "
          f"fetch.wait.max.ms {FETCH_WAIT_MS}; topic {topic}")
    for round_ in range(args.rounds):
        for client, python in runs if round_ % 2 == 0 else runs[::-1]:
            print(measure(python, client, bootstrap, topic, args), flush=True)


if __name__ == "__main__":
    main()
