"""``sluice replay --at TIME``: the queue and the nodes as they were at TIME, folded from the
ledger alone (``projections.replay``); ``--json`` for the rows.

The ledger is read and decoded in a child process while this one folds it
(``projections.replay_stream``), which needs a process that runs no other thread when it forks:
this module imports nothing that starts one (the core's modules import numpy, whose BLAS starts
threads; ``sluice audit`` and ``verify``, in ``cli.audit``, need them), and its progress bar
runs without tqdm's monitor thread.

TIME is ISO 8601 (``2026-01-01T12:00:00Z``; UTC without a zone), or Unix milliseconds.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from typing import TextIO

from cli.arg_parser import Parser
from cli.progress import progress
from projections.replay import format_nodes, format_queue, iso, parse_time
from projections.replay_stream import replay_views
from streams.settings import Settings

__all__ = ["run"]


def run(argv: Sequence[str], out: TextIO = sys.stdout, settings: Settings | None = None) -> int:
    """Entry point; ``argv[0]`` is ``replay``."""
    parser = Parser(
        prog="sluice replay",
        description="the queue and nodes as they were at a time, from the ledger")
    parser.add_argument("--at", default="", help="ISO time or Unix ms (default: now)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(list(argv[1:]))
    settings = settings or Settings.from_env()
    at_ms = parse_time(args.at) if args.at else int(time.time() * 1000)
    started = time.perf_counter()
    with progress(None, "replay", "fact", quiet=args.json, monitor=False) as advance:
        facts, views = replay_views(settings, at_ms, advance)
    took = time.perf_counter() - started
    if args.json:
        json.dump({"at_ms": at_ms, "jobs": views.jobs, "nodes": views.nodes,
                   "shard_seq": views.shard_seq}, out, indent=2)
        out.write("\n")
        return 0
    print(f"# as at {iso(at_ms)}: {sum(views.shard_seq.values())} of {len(facts)} facts "
          f"({took:.2f}s)", file=out)
    for line in format_queue(views, at_ms):
        print(line, file=out)
    print(file=out)
    for line in format_nodes(views):
        print(line, file=out)
    return 0
