"""A/B of ``sluice replay`` between two trees: one tree's read and fold over a written ledger.

Usage (``bench_replay.py`` writes the ledger and prints its prefix; run this alternately with
two trees, e.g. main checked out by ``git archive`` into a scratch directory, and this one)::

    KAFKA_BOOTSTRAP=127.0.0.1:19300 .venv/bin/python benchmarks/replay_ab.py TREE PREFIX [RUNS]

Imports ``projections.replay`` from TREE, then per run: ``read_facts`` (every partition, read
and decoded) and ``views_at`` (merge and fold), and prints facts per wall and per CPU second of
the process (librdkafka's threads included), the two phases' wall seconds, the load average
before and after, and a digest of the views' rows (jobs, nodes, shard sequences): the same
digest from both trees means the same rows.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from pathlib import Path


def main() -> int:
    tree, prefix = Path(sys.argv[1]).resolve(), sys.argv[2]
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    sys.path.insert(0, str(tree))
    from projections import replay  # from the tree given
    from streams.settings import Settings  # from the tree given

    if not str(replay.__file__).startswith(str(tree)):
        raise SystemExit(f"projections.replay came from {replay.__file__}, not {tree}")
    settings = Settings(bootstrap=os.environ["KAFKA_BOOTSTRAP"], prefix=prefix, cluster="bench",
                        partitions=6, home=Path(os.environ.get("SLUICE_HOME", "/tmp")))
    for _ in range(runs):
        before = _load()
        wall, cpu = time.perf_counter(), time.process_time()
        facts = replay.read_facts(settings)
        read_s = time.perf_counter() - wall
        views = replay.views_at(facts)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        rows = json.dumps([views.jobs, views.nodes, views.shard_seq], sort_keys=True)
        print(f"{tree.name:<12} {len(facts):,} facts: {len(facts) / wall:,.0f}/s end to end "
              f"({wall:.2f}s wall, {cpu:.2f} CPU s, {len(facts) / cpu:,.0f}/CPU s; read "
              f"{read_s:.2f}s, fold {wall - read_s:.2f}s) load {before} -> {_load()} rows "
              f"{hashlib.sha256(rows.encode()).hexdigest()[:12]}", flush=True)
    return 0


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


if __name__ == "__main__":
    sys.exit(main())
