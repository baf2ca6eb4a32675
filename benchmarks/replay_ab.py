"""A/B of ``sluice replay`` between two trees: one tree's read and fold over a written ledger.

Usage (``bench_replay.py`` writes the ledger and prints its prefix; run this alternately with
two trees, e.g. main checked out by ``git archive`` into a scratch directory, and this one)::

    KAFKA_BOOTSTRAP=127.0.0.1:19300 .venv/bin/python benchmarks/replay_ab.py TREE PREFIX \\
        [RUNS] [plain|auto|child]

Imports ``projections.replay`` from TREE, then per run, by the last argument: ``plain`` (the
default) ``read_facts`` (every partition, read and decoded) and ``views_at`` (merge and fold);
``auto`` ``projections.replay_stream.replay_views`` as ``sluice replay`` runs it (in a child
reader when a core is spare), ``child`` the same with the child reader. It prints facts per wall
and per CPU second (this process's and its ended children's, librdkafka's threads included; and
this process's alone), the load average before and after, and a digest of the views' rows
(jobs, nodes, shard sequences): the same digest from both trees means the same rows.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import sys
import time
from pathlib import Path


def main() -> int:
    tree, prefix = Path(sys.argv[1]).resolve(), sys.argv[2]
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    mode = sys.argv[4] if len(sys.argv) > 4 else "plain"
    sys.path.insert(0, str(tree))
    from projections import replay  # from the tree given
    from streams.settings import Settings  # from the tree given

    if not str(replay.__file__).startswith(str(tree)):
        raise SystemExit(f"projections.replay came from {replay.__file__}, not {tree}")
    settings = Settings(bootstrap=os.environ["KAFKA_BOOTSTRAP"], prefix=prefix, cluster="bench",
                        partitions=6, home=Path(os.environ.get("SLUICE_HOME", "/tmp")))
    for _ in range(runs):
        before = _load()
        wall, cpu, own = time.perf_counter(), _cpu(), time.process_time()
        if mode == "plain":
            facts = replay.read_facts(settings)
            views = replay.views_at(facts)
        else:
            from projections.replay_stream import replay_views  # from the tree given

            facts, views = replay_views(settings, child=True if mode == "child" else None)
        wall, cpu = time.perf_counter() - wall, _cpu() - cpu
        own = time.process_time() - own
        rows = json.dumps([views.jobs, views.nodes, views.shard_seq], sort_keys=True)
        print(f"{tree.name:<12} {mode:<5} {len(facts):,} facts: {len(facts) / wall:,.0f}/s end "
              f"to end ({wall:.2f}s wall, {cpu:.2f} CPU s, {len(facts) / cpu:,.0f}/CPU s; this "
              f"process {own:.2f} CPU s) load {before} -> {_load()} rows "
              f"{hashlib.sha256(rows.encode()).hexdigest()[:12]}", flush=True)
    return 0


def _cpu() -> float:
    """CPU seconds of this process and of its children that ended."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


if __name__ == "__main__":
    sys.exit(main())
