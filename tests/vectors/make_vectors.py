"""Write the cross-language test vectors: ``<Name>.bin`` (a single-object encoded value) and
``<Name>.json`` (what it decodes to). Run from the repository root to add a vector:

    .venv/bin/python tests/vectors/make_vectors.py [--force]

The vectors of the top folder were written with release v1, those of ``v2/`` with release v2
(:data:`VECTORS_V2`: the records v2 changed, with the fields it added), those of ``v3/`` with
release v3 (:data:`VECTORS_V3`: ``SubmitJob`` with its ``submitter``). Existing vectors are
kept (they are pinned to the schema release they were written with, and the test keeps decoding
them after the schemas evolve); ``--force`` rewrites them with the current schemas.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from schemas import decode, encode

HERE = Path(__file__).resolve().parent

VECTORS: dict[str, dict[str, Any]] = {
    "SubmitJob": {
        "job_sluid": "s14DK8YBDF0000",
        "spec": {
            "name": "llama-finetune",
            "user": "alice",
            "account": "ml",
            "partition": "gpu",
            "nodes_min": 2,
            "ntasks": 16,
            "cpus_per_task": 12,
            "gpus_per_node": 8,
            "gpu_type": "h100",
            "mem_per_node_mb": 1_536_000,
            "time_limit_s": 7_200,
            "exclusive": True,
            "command": ["torchrun", "--nnodes=2", "train.py"],
            "env": {"NCCL_DEBUG": "WARN"},
            "nice": -5,
            "comment": "ünïcode ✓",
        },
    },
    "JobStarted": {
        "event_sluid": "s14DK8YBDF0042",
        "shard": "gpu",
        "shard_seq": 7,
        "time_ms": 1_761_955_200_123,
        "job_sluid": "s14DK8YBDF0000",
        "job_id": 1042,
        "run_sluid": "s14DK8YBDF0041",
        "restart_count": 0,
        "nodes": ["gpu-a001", "gpu-a002"],
        "node_sluids": ["s14DK0000A0001", "s14DK0000A0002"],
        "segments": [{"index": 0, "group": "block-a", "nodes": ["gpu-a001", "gpu-a002"]}],
        "partition": "gpu",
        "user": "alice",
        "time_limit_s": 7_200,
        "submit_ms": 1_761_955_200_000,
    },
}

VECTORS_V2: dict[str, dict[str, Any]] = {
    "JobStarted": {
        **VECTORS["JobStarted"],
        "alloc_cpus": [96, 96],
        "alloc_mem_mb": [2_048_000, 2_048_000],
        "alloc_gpus": [8, 8],
    },
}

VECTORS_V3: dict[str, dict[str, Any]] = {
    "SubmitJob": {**VECTORS["SubmitJob"], "submitter": "portal"},
}


def main() -> None:
    """Write missing vectors (all with ``--force``); print fingerprints and hex for the README."""
    force = "--force" in sys.argv[1:]
    cases = [(HERE, VECTORS), (HERE / "v2", VECTORS_V2), (HERE / "v3", VECTORS_V3)]
    for folder, name, record in [(f, n, r) for f, vectors in cases for n, r in vectors.items()]:
        folder.mkdir(exist_ok=True)
        path = folder / f"{name}.bin"
        if path.exists() and not force:
            value = path.read_bytes()
            print(f"{path.relative_to(HERE)}: kept the existing vector")
        else:
            value = encode(name, record)
            _, decoded = decode(value)
            path.write_bytes(value)
            text = json.dumps(decoded, indent=2, ensure_ascii=False) + "\n"
            path.with_suffix(".json").write_text(text, encoding="utf-8")
        print(f"{path.relative_to(HERE)}: {len(value)} bytes, fingerprint {value[2:10].hex()}")
        print(f"  header {value[:2].hex()} {value[2:10].hex()}")
        for offset in range(10, len(value), 32):
            print(f"  {offset:04x}  {value[offset : offset + 32].hex(' ')}")


if __name__ == "__main__":
    main()
