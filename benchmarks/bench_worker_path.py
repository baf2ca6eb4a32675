"""The worker's CPU a submission without a broker: the intake's checks and the shard's batch.

    .venv/bin/python benchmarks/bench_worker_path.py [--jobs 20000] [--batch 500] \
        [--busy-nodes 64] [--profile FILE]

What ``bench_submit.py`` measures through the real broker, less the broker: ``--jobs``
SubmitJob records (as that benchmark makes them) go, ``--batch`` at a time, through the
intake's per-record work (``IntakeBatch._plan``: classify, credential, seal, route) and then
through a real :class:`~agents.shard_runner.ShardRunner` (its RocksDB store in a scratch
directory; its transactional producer a stand-in that only counts) on a shard whose
``--busy-nodes`` one-CPU nodes each run a long job, so every submission stays pending. Prints
the CPU seconds of each part per job with the load average. ``--profile FILE`` writes a
cProfile of the whole run; run it under ``valgrind --tool=callgrind`` (with
``PYTHONHASHSEED=0``) to count instructions instead. It asserts nothing but that every
submission was queued. ``--no-work`` does everything but the intake's and the shard's work
(the records made, the nodes occupied): under callgrind, (a run - a ``--no-work`` run of the
same ``--jobs``) / jobs is the worker's instructions a submission, the harness's own excluded.
``--digest`` makes the run deterministic (the requests' SLUIDs and
the intake's clock fixed) and prints a SHA-256 of every fact and node command the shard
produced and every row it stored, in order: two trees that decide the same print the same.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import hashlib
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import agents.shard_runner as runner_module
import scheduler
from agents.gap_reader import GapRecord
from agents.intake_batch import IntakeBatch
from agents.intake_gaps import IntakeGaps
from agents.shard_runner import InboxRecord, ShardRunner
from schemas import SluidGenerator, encode
from schemas.sluid import compose, format_sluid
from streams.partitioner import partition_for
from streams.settings import Settings
from streams.topics import Topics

T0 = 1_800_000_000_000
DIGEST: list[bool] = []  # --digest: hash what the shard produces and stores (non-empty)


class CountingProducer:
    """The shard's transactional producer, minus the broker: counts what it is given."""

    def __init__(self) -> None:
        self.records = 0
        self._offset = 0
        self.digest = hashlib.sha256()

    def init_transactions(self, _timeout: float) -> None: ...

    def begin_transaction(self) -> None: ...

    def produce(self, topic: str, value: bytes, key: bytes, **kwargs: Any) -> None:
        self.records += 1
        if DIGEST:
            self.digest.update(b"%d:%s:%d:%s:%d:%s" % (len(topic), topic.encode(), len(key), key,
                                                       len(value), value))
        callback = kwargs.get("on_delivery")
        if callback is not None:
            self._offset += 1
            callback(None, _Delivered(self._offset))

    def commit_transaction(self, _timeout: float) -> None: ...

    def flush(self, _timeout: float) -> int:
        return 0


class _Delivered:
    def __init__(self, offset: int) -> None:
        self._offset = offset

    def partition(self) -> int:
        return 0

    def offset(self) -> int:
        return self._offset


def fix_clocks() -> None:
    """Deterministic runs: fixed request SLUIDs, and the intake's and the signer's clocks
    (and the SLUID generators', for the busy nodes' jobs) stopped at ``T0``."""
    DIGEST.append(True)
    import schemas.sluid

    class _Clock:
        def __init__(self, real: Any) -> None:
            self._real = real

        def __getattr__(self, name: str) -> Any:
            return getattr(self._real, name)

        @staticmethod
        def time() -> float:
            return T0 / 1000

        @staticmethod
        def time_ns() -> int:
            return T0 * 1_000_000

    import agents.intake_batch
    for module in (agents.intake_batch, runner_module, schemas.sluid):
        module.time = _Clock(module.time)  # type: ignore[attr-defined]
    schemas.sluid.os = _Clock(os)  # type: ignore[assignment,attr-defined]
    schemas.sluid.os.urandom = bytes  # type: ignore[attr-defined]


def make_runner(settings: Settings) -> ShardRunner:
    """A real runner with a counting producer and no ledger to recover from."""
    runner_module.transactional_producer = lambda *_a, **_k: CountingProducer()  # type: ignore
    runner_module.read_ledger = lambda *_a, **_k: iter(())  # type: ignore
    return ShardRunner(settings, 0, lambda _a, _b: iter(()))


def occupy(runner: ShardRunner, nodes: int, now: int) -> None:
    """``nodes`` one-CPU nodes, each running a job without a time limit (as bench_submit.py
    starts them), folded straight into the state."""
    state = runner.state
    sluids = SluidGenerator(runner.settings.cluster_id)
    for i in range(nodes):
        request = scheduler.RegisterNode(node_sluid=sluids.new(), name=f"n{i:02d}", cpus=1,
                                         mem_mb=1024)
        for fact in scheduler.decide(state, request, now):
            state = scheduler.evolve(state, fact)
    for _ in range(nodes):
        spec = scheduler.JobSpec(user="bench", command=("sleep", "3600"), workdir="/tmp")
        submit = scheduler.SubmitJob(job_sluid=sluids.new(), spec=spec)
        for fact in scheduler.decide(state, submit, now):
            state = scheduler.evolve(state, fact)
    for fact in scheduler.schedule(state, now):
        state = scheduler.evolve(state, fact)
    runner.state = state
    print(f"{len(state.nodes)} nodes, {len(state.running)} jobs running")


def hash_rows(runner: ShardRunner, rows: Any) -> None:
    """Every row the runner's store writes goes through ``rows`` (a hash) too."""
    rocks_write = runner._store._store.write

    def write(puts: dict[bytes, bytes], deletes: list[bytes]) -> None:
        for key in sorted(puts):
            rows.update(b"%d:%s:%d:%s" % (len(key), key, len(puts[key]), puts[key]))
        for key in deletes:
            rows.update(b"-%d:%s" % (len(key), key))
        rocks_write(puts, deletes)

    runner._store._store.write = write  # type: ignore[method-assign,assignment]


def requests(settings: Settings, jobs: int) -> list[GapRecord]:
    """``jobs`` SubmitJob records as bench_submit.py produces them (murmur2-partitioned)."""
    topic = Topics(settings).requests
    sluids = SluidGenerator(settings.cluster_id)
    out = []
    for offset in range(jobs):
        sluid = (format_sluid(compose(settings.cluster_id, T0 - 60_000 + offset // 100,
                                      offset % 100)) if DIGEST else sluids.new())
        key = sluid.encode()
        value = encode("SubmitJob", {"job_sluid": sluid, "spec": {
            "user": "bench", "command": ["true"], "workdir": "/tmp", "time_limit_s": 60}})
        out.append(GapRecord(topic, partition_for(key, settings.partitions), offset, T0, key,
                             value, ()))
    return out


def run(intake: IntakeBatch, runner: ShardRunner, records: list[GapRecord],
        batch: int) -> tuple[float, float]:
    """The intake a batch ahead of the shard; the CPU seconds of each."""
    intake_s = shard_s = 0.0
    offset = 0
    for first in range(0, len(records), batch):
        started = time.process_time()
        inbox: list[InboxRecord] = []
        for message in records[first:first + batch]:
            planned, letter = intake._plan(message)
            assert letter is None, letter
            for item in planned:
                inbox.append(InboxRecord(offset, T0, item.value, tuple(item.headers)))
                offset += 1
        between = time.process_time()
        runner.process(inbox)
        intake_s += between - started
        shard_s += time.process_time() - between
    return intake_s, shard_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--busy-nodes", type=int, default=64)
    parser.add_argument("--profile", type=Path, default=None)
    parser.add_argument("--digest", action="store_true",
                        help="fixed SLUIDs and clock; print a digest of the facts and rows")
    parser.add_argument("--no-work", action="store_true",
                        help="make the records, process none (callgrind's baseline)")
    args = parser.parse_args()
    if args.digest:
        fix_clocks()
    home = Path(tempfile.mkdtemp(prefix="bench-worker-path-"))
    (home / "worker").mkdir()
    settings = Settings(bootstrap="unused:1", prefix="bench", partitions=3, home=home)
    runner = make_runner(settings)
    rows = hashlib.sha256()
    if DIGEST:
        hash_rows(runner, rows)
    occupy(runner, args.busy_nodes, T0 if DIGEST else int(time.time() * 1000))
    intake = IntakeBatch(settings, None, IntakeGaps(None, None, "", ""))  # type: ignore
    records = requests(settings, args.jobs)
    gc.set_threshold(50_000, 50, 100)  # as the worker runs (cli/services.py)
    gc.collect()
    profile = cProfile.Profile() if args.profile else None
    load = os.getloadavg()
    if profile is not None:
        profile.enable()
    intake_s, shard_s = run(intake, runner, [] if args.no_work else records, args.batch)
    if profile is not None:
        profile.disable()
        profile.dump_stats(str(args.profile))
    queued = sum(1 for job in runner.state.jobs.values() if job.state == "PENDING")
    produced: CountingProducer = runner._producer  # type: ignore[assignment]
    runner.close()
    jobs = max(args.jobs, 1)
    if args.no_work:
        print(f"{args.jobs} submissions made, none processed (--no-work)")
        return
    assert queued >= args.jobs, f"{queued} of {args.jobs} queued"
    print(f"{jobs} submissions in batches of {args.batch}, {args.busy_nodes} busy nodes; "
          f"load {load[0]:.2f} -> {os.getloadavg()[0]:.2f}")
    print(f"  intake (classify, credential, seal, route): {intake_s / jobs * 1e6:.1f} µs a job")
    print(f"  shard (open, decide, fold, pass, encode, store): {shard_s / jobs * 1e6:.1f} µs "
          "a job")
    if DIGEST:
        print(f"  digest: facts and commands {produced.digest.hexdigest()} "
              f"({produced.records} records); rows {rows.hexdigest()}")


if __name__ == "__main__":
    main()
