"""Peak memory of a Sluice process fed gzip bombs: 1 MiB gzip batches of ~1 GB records.

librdkafka inflates a gzip record batch whole, without any bound, and confluent-kafka copies
each record's value into a Python ``bytes`` when ``consume`` returns it. The broker's
``message.max.bytes`` (1 MiB) bounds only the *compressed* batch: a batch of one record of
zeros, 1 MiB compressed, is a ~1 GB record (zlib's ratio on zeros is about 1,030:1).

This sends ``--bombs`` such batches at once (each to its own partition of ``--topic``, one
thread each, raw ProduceRequests; ``--pause``: while the process is stopped, so that it
fetches them together: ``tests/raw_produce.py``), then watches the process ``--pid``
until it has dead-lettered each (the dead letters' count on ``--dead-letters`` rose by
``--bombs``) or died, and prints its peak RSS (``VmHWM``, reset before the bombs with
``/proc/PID/clear_refs``) and the reasons of the dead letters. Run as root or as the
process's user. Example, against a ``sluice up`` system (the worker reads the requests)::

    PYTHONPATH=. .venv/bin/python benchmarks/bench_gzip_bombs.py --bootstrap 127.0.0.1:20710 \\
        --topic h2-sluice.requests --dead-letters h2-sluice.dead-letters \\
        --pid "$(cat $SLUICE_HOME/run/worker.pid)" --bombs 1

``--command "sluice worker"`` instead of ``--pid``: the worker is started once the bombs wait
(as after a crash), and stopped at the end (``sluice up``'s own worker stopped first).
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import signal
import struct
import subprocess
import sys
import threading
import time
import zlib
from pathlib import Path

from aiokafka.record.util import calc_crc32c

from streams.clients import consumer
from streams.kafka_native import TopicPartition
from tests.raw_produce import _varint, produce_batch

_CHUNK = bytes(16 << 20)


def bomb(compressed_bytes: int) -> tuple[bytes, int]:
    """A RecordBatch v2 (gzip) of one record of zeros whose compressed payload is about
    ``compressed_bytes``; and the record's value size. Built as a stream: the bomb's value is
    never in memory here."""
    value_size = compressed_bytes * 1020 // (len(_CHUNK) * 1) * len(_CHUNK) or len(_CHUNK)
    head = b"\x00" + _varint(0) + _varint(0) + _varint(-1) + _varint(value_size)
    body_size = len(head) + value_size + 1
    squeeze = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [squeeze.compress(_varint(body_size) + head)]
    for _ in range(value_size // len(_CHUNK)):
        parts.append(squeeze.compress(_CHUNK))
    parts.append(squeeze.compress(_varint(0)))  # no headers
    parts.append(squeeze.flush())
    payload = b"".join(parts)
    now = int(time.time() * 1000)
    after_crc = struct.pack(">hiqqqhii", 1, 0, now, now, -1, -1, -1, 1) + payload
    after_length = struct.pack(">ibI", 0, 2, calc_crc32c(after_crc)) + after_crc
    return struct.pack(">qi", 0, len(after_length)) + after_length, value_size


def _status(pid: int, field: str) -> int | None:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    found = re.search(rf"^{field}:\s+(\d+) kB", text, re.M)
    return int(found.group(1)) * 1024 if found else None


def _dead_letter_end(bootstrap: str, topic: str) -> list[int]:
    reader = consumer(bootstrap)
    try:
        partitions = reader.list_topics(topic, timeout=10).topics[topic].partitions
        return [reader.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                for p in sorted(partitions)]
    finally:
        reader.close()


def _reasons(bootstrap: str, topic: str, since: list[int]) -> list[str]:
    reader = consumer(bootstrap)
    try:
        reader.assign([TopicPartition(topic, p, o) for p, o in enumerate(since)])
        found = []
        while batch := reader.consume(100, 2.0):
            for message in batch:
                if message.error() is None:
                    text = (message.value() or b"").decode(errors="replace")
                    printable = re.findall(r"[ -~]{20,}", text)  # the reason: the last
                    found.append(printable[-1][:160] if printable else repr(text[:60]))
        return found
    finally:
        reader.close()


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--dead-letters", required=True)
    who = parser.add_mutually_exclusive_group(required=True)
    who.add_argument("--pid", type=int, help="a running process to watch")
    who.add_argument("--command", help="a process to start once the bombs wait (a worker "
                                      "restarting: it fetches them together), then stop")
    parser.add_argument("--as-limit-gib", type=float, default=0.0,
                        help="with --command: its address-space limit (prlimit --as), so that "
                             "a process without a bound fails instead of the host")
    parser.add_argument("--bombs", type=int, default=1)
    parser.add_argument("--partitions", type=int, default=6, help="of --topic")
    parser.add_argument("--compressed-kib", type=int, default=1000)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--pause", action="store_true",
                        help="stop --pid (SIGSTOP) while the bombs are produced")
    return parser.parse_args()


def _send(args: argparse.Namespace, batch: bytes) -> None:
    answers: list[str] = []

    def send(partition: int) -> None:
        answer = produce_batch(args.bootstrap, args.topic, partition, batch)
        answers.append(f"p{partition}: error {answer.error_code} {answer.message}".strip())

    senders = [threading.Thread(target=send, args=(i % args.partitions,))
               for i in range(args.bombs)]
    for sender in senders:
        sender.start()
    for sender in senders:
        sender.join()
    print("produced:", "; ".join(sorted(answers)))


def _start(command: str, as_limit_gib: float) -> subprocess.Popen[bytes]:
    limit = ["prlimit", f"--as={int(as_limit_gib * 2**30)}", "--"] if as_limit_gib else []
    return subprocess.Popen([*limit, *shlex.split(command)], start_new_session=True)


def _watch(args: argparse.Namespace, pid: int, process: subprocess.Popen[bytes] | None,
           start_letters: list[int]) -> tuple[int, bool]:
    """The peak RSS until the bombs are dead letters, and whether the process died."""
    started, peak = time.monotonic(), 0
    while time.monotonic() - started < args.timeout:
        hwm = _status(pid, "VmHWM")
        if hwm is None or (process is not None and process.poll() is not None):
            return peak, True
        peak = max(peak, hwm)
        ends = _dead_letter_end(args.bootstrap, args.dead_letters)
        if sum(ends) - sum(start_letters) >= args.bombs:
            break
        time.sleep(1.0)
    return max(peak, _status(pid, "VmHWM") or 0), False


def main() -> int:
    args = _arguments()
    batch, value_size = bomb(args.compressed_kib * 1024)
    print(f"bomb: {len(batch):,} bytes compressed, a record of {value_size:,} bytes")
    start_letters = _dead_letter_end(args.bootstrap, args.dead_letters)
    process = None
    if args.pid is not None:
        Path(f"/proc/{args.pid}/clear_refs").write_text("5")  # VmHWM := VmRSS
        if args.pause:
            os.kill(args.pid, signal.SIGSTOP)
    before = _status(args.pid, "VmRSS") or 0 if args.pid is not None else 0
    started = time.monotonic()
    _send(args, batch)
    if args.pid is not None and args.pause:
        os.kill(args.pid, signal.SIGCONT)
    if args.command is not None:
        process = _start(args.command, args.as_limit_gib)
    pid = args.pid if process is None else process.pid
    peak, died = _watch(args, pid, process, start_letters)
    after = _status(pid, "VmRSS")
    print(f"RSS before {before / 2**20:,.0f} MiB, peak {peak / 2**20:,.0f} MiB, after "
          f"{'(died)' if died or after is None else f'{after / 2**20:,.0f} MiB'}, "
          f"{time.monotonic() - started:.1f} s")
    if process is not None:
        if process.poll() is None:
            process.terminate()
        print(f"started process: exit status {process.wait()}")
    reasons = _reasons(args.bootstrap, args.dead_letters, start_letters)
    print(f"dead letters: {len(reasons)}")
    for reason in reasons:
        print("  ", reason)
    return 1 if died else 0


if __name__ == "__main__":
    sys.exit(main())
