"""Codec throughput: encodes and decodes per second on one core, for the hot-path records.

Run: ``.venv/bin/python benchmarks/bench_codec.py [--records N] [--runs R]``. Prints the median
and best of R runs of N records each, for a realistic SubmitJob and JobStarted, for the resolution
path (a record written with an older schema version), and for raw fastavro without our framing
and checks, so the codec's own overhead is visible.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from io import BytesIO
from pathlib import Path
from typing import Any

from fastavro import schemaless_reader, schemaless_writer

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from schemas.catalog import Catalog, parsed_schema
from schemas.codec import SOE_MAGIC, Codec, decode, encode

SUBMIT_JOB: dict[str, Any] = {
    "job_sluid": "s14DK8YBDF0000",
    "spec": {
        "name": "llama-finetune",
        "user": "alice",
        "account": "ml-research",
        "partition": "gpu",
        "qos": "normal",
        "nodes_min": 4,
        "nodes_max": 4,
        "ntasks": 32,
        "cpus_per_task": 12,
        "gpus_per_node": 8,
        "gpu_type": "h100",
        "mem_per_node_mb": 1_536_000,
        "time_limit_s": 86_400,
        "exclusive": True,
        "command": ["torchrun", "--nnodes=4", "--nproc-per-node=8", "train.py", "--cfg=7b.yaml"],
        "workdir": "/home/alice/llama",
        "env": {"NCCL_DEBUG": "WARN", "WANDB_PROJECT": "llama", "OMP_NUM_THREADS": "12"},
        "output": "/home/alice/logs/%x-%j.out",
        "requeue": "expedite",
        "dependency": "afterok:1041",
        "segment": 2,
        "comment": "sweep 3/8",
    },
}

JOB_STARTED: dict[str, Any] = {
    "event_sluid": "s14DK8YBDF0042",
    "shard": "gpu",
    "shard_seq": 123_456,
    "time_ms": 1_761_955_200_123,
    "job_sluid": "s14DK8YBDF0000",
    "job_id": 1042,
    "run_sluid": "s14DK8YBDF0041",
    "restart_count": 0,
    "nodes": ["gpu-a001", "gpu-a002", "gpu-b001", "gpu-b002"],
    "node_sluids": ["s14DK0000A0001", "s14DK0000A0002", "s14DK0000B0001", "s14DK0000B0002"],
    "segments": [
        {"index": 0, "group": "block-a", "nodes": ["gpu-a001", "gpu-a002"]},
        {"index": 1, "group": "block-b", "nodes": ["gpu-b001", "gpu-b002"]},
    ],
    "partition": "gpu",
    "user": "alice",
    "time_limit_s": 86_400,
    "submit_ms": 1_761_955_100_000,
}


def rate(action: Callable[[], object], records: int, runs: int) -> tuple[float, float]:
    """Median and best records per second of ``runs`` timed loops of ``records`` calls."""
    rates = []
    for _ in range(runs):
        start = time.perf_counter()
        for _ in range(records):
            action()
        rates.append(records / (time.perf_counter() - start))
    return statistics.median(rates), max(rates)


def older_submit_job_codec(directory: Path) -> tuple[Codec, bytes]:
    """A codec whose release ``v0`` lacks two JobSpec fields, and a value written with it."""
    import json

    released = directory / "released" / "v0"
    released.mkdir(parents=True)
    current = Path(__file__).resolve().parents[1] / "schemas"
    for name in ("SubmitJob", "JobSpec"):
        raw = json.loads((current / f"{name}.avsc").read_text())
        if name == "JobSpec":
            raw["fields"] = [f for f in raw["fields"] if f["name"] not in ("comment", "hot_swap")]
        (released / f"{name}.avsc").write_text(json.dumps(raw))
    catalog = Catalog(current, directory / "released")
    old = catalog.releases["v0"]["SubmitJob"]
    record = {**SUBMIT_JOB, "spec": dict(SUBMIT_JOB["spec"])}
    del record["spec"]["comment"]
    buffer = BytesIO()
    buffer.write(SOE_MAGIC + old.fingerprint)
    schemaless_writer(buffer, old.parsed, record)
    return Codec(catalog), buffer.getvalue()


def main() -> None:
    """Run every benchmark and print one line each."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    n, runs = args.records, args.runs

    import tempfile

    results: list[tuple[str, int, tuple[float, float]]] = []
    for name, record in (("SubmitJob", SUBMIT_JOB), ("JobStarted", JOB_STARTED)):
        value = encode(name, record)
        body = value[10:]
        schema = parsed_schema(name)

        def raw_write(schema: Any = schema, record: Any = record) -> None:
            schemaless_writer(BytesIO(), schema, record)

        def raw_read(schema: Any = schema, body: bytes = body) -> None:
            schemaless_reader(BytesIO(body), schema, None)

        results += [
            (f"encode {name}", len(value), rate(partial(encode, name, record), n, runs)),
            (f"decode {name}", len(value), rate(partial(decode, value), n, runs)),
            (f"  raw fastavro write {name}", len(body), rate(raw_write, n, runs)),
            (f"  raw fastavro read {name}", len(body), rate(raw_read, n, runs)),
        ]

    with tempfile.TemporaryDirectory() as tmp:
        codec, old_value = older_submit_job_codec(Path(tmp))
        results.append(
            (
                "decode SubmitJob from an older release (resolution)",
                len(old_value),
                rate(partial(codec.decode, old_value), n, runs),
            )
        )

    print(f"{n} records x {runs} runs, one thread")
    print(f"{'operation':56} {'bytes':>5} {'median/s':>10} {'best/s':>10} {'µs/rec':>7}")
    for label, size, (median, best) in results:
        print(f"{label:56} {size:5d} {median:10,.0f} {best:10,.0f} {1e6 / median:7.1f}")


if __name__ == "__main__":
    main()
