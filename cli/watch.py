"""``sluice watch --starts``: follow job-start notifications as they are published.

Reads ``sluice.job-starts`` (read-committed, so each run appears once) from its end, or from
the beginning with ``--from-beginning``, and prints one line per start::

    2026-01-01T00:00:12Z job 42 (s0E4…) run 0 started on n[01-02] in gpu for alice after 3s

``--json`` prints each notification as one JSON object instead; ``--jobcomp`` follows Slurm's
jobcomp/kafka start topic (``<cluster>-job-start``, raw JSON) instead of the Avro topic.
``--count N`` stops after N notifications, ``--timeout S`` after S seconds without one.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, TextIO

from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, KafkaError, TopicPartition

from cli.arg_parser import Parser
from schemas import DecodeError, decode
from streams.clients import consumer
from streams.settings import Settings
from streams.topics import Topics

__all__ = ["format_start", "run"]


def _parser() -> argparse.ArgumentParser:
    parser = Parser(prog="sluice watch",
                                     description="follow job-start notifications")
    parser.add_argument("--starts", action="store_true", required=True,
                        help="follow job starts (the only stream for now)")
    parser.add_argument("--json", action="store_true", help="one JSON object per start")
    parser.add_argument("--jobcomp", action="store_true",
                        help="follow Slurm jobcomp/kafka JSON (<cluster>-job-start)")
    parser.add_argument("--from-beginning", action="store_true")
    parser.add_argument("--count", type=int, default=0, help="stop after N starts")
    parser.add_argument("--timeout", type=float, default=0.0,
                        help="stop after S seconds without a start")
    return parser


_MAX_TIME_MS = 253_402_300_799_999
"""The end of year 9999 (``schemas.ranges.MAX_TIME_MS``), past which ``datetime`` raises."""

def _hostlist(nodes: list[str]) -> str:
    try:
        from scheduler.topology.hostlist import compress

        return str(compress(nodes))
    except ImportError:
        return ",".join(nodes)


def format_start(n: dict[str, Any]) -> str:
    """One human line for a ``JobStartNotification``."""
    ms = int(n["start_ms"])
    when = (datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            if 0 <= ms <= _MAX_TIME_MS else f"{ms} ms")  # a forged notification: any long
    return (f"{when} job {n['job_id']} ({n['job_sluid']}) run {n['restart_count']} "
            f"({n['run_sluid']}) started on {_hostlist(list(n['nodes']))} in {n['partition']} "
            f"for {n['user']} after {n['queue_wait_s']}s")


def run(argv: Sequence[str], out: TextIO = sys.stdout) -> int:
    """Entry point; ``argv[0]`` is ``watch``."""
    args = _parser().parse_args(list(argv[1:]))
    settings = Settings.from_env()
    topics = Topics(settings)
    topic = topics.jobcomp_start if args.jobcomp else topics.job_starts
    reader = consumer(settings.bootstrap, group=f"sluice-watch-{uuid.uuid4().hex[:8]}")
    try:
        meta = reader.list_topics(topic, timeout=10).topics.get(topic)
        if meta is None or meta.error is not None or not meta.partitions:
            print(f"sluice watch: no topic {topic}", file=sys.stderr)
            return 1
        start = OFFSET_BEGINNING if args.from_beginning else OFFSET_END
        reader.assign([TopicPartition(topic, p, start) for p in sorted(meta.partitions)])
        return _follow(reader, args, out)
    except KeyboardInterrupt:
        return 0
    finally:
        reader.close()


def _follow(reader: Any, args: argparse.Namespace, out: TextIO) -> int:
    seen, last = 0, time.monotonic()
    while True:
        if args.timeout and time.monotonic() - last > args.timeout:
            return 0
        messages: list[Any] = reader.consume(num_messages=500, timeout=0.5)
        for message in messages:
            error = message.error()
            if error is not None:
                if error.code() != KafkaError._PARTITION_EOF:
                    print(f"sluice watch: {error}", file=sys.stderr)
                continue
            line = _line(message.value(), args)
            if line is None:
                continue
            print(line, file=out, flush=True)
            seen, last = seen + 1, time.monotonic()
            if args.count and seen >= args.count:
                return 0


def _line(value: bytes, args: argparse.Namespace) -> str | None:
    if args.jobcomp:
        return value.decode(errors="replace")
    try:
        name, record = decode(value)
    except DecodeError as exc:
        print(f"sluice watch: undecodable record: {exc}", file=sys.stderr)
        return None
    if name != "JobStartNotification":
        return None
    return json.dumps(record) if args.json else format_start(record)
