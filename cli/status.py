"""``sluice status``: how fresh the views are, and whether each shard is still cycling.

One line for the views (caught up or how many ledger records behind, the newest fact), then one
line per shard: its last applied ``shard_seq``, the time of its last ``CycleCompleted`` and that
cycle's age by the views' clock. A shard closes a cycle at least every 10 s even when idle
(``scheduler.cycle.IDLE_CLOSE_MS``), so an age over ``--stale`` seconds (default 60) marks it
``STALLED`` and the command exits 1, as it does when the views' state directory refuses
writes (full or read-only: a ``PAUSED`` line; the worker shows it as ``sluice_state_dir_full``
on its ``/metrics``, and its shards as STALLED); ``--json`` prints the API's freshness object.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from cli.client import ApiError, Client
from streams.settings import Settings

__all__ = ["STALE_S", "add_parsers", "status_lines"]

STALE_S = 60.0
"""A shard whose last cycle is older than this is shown STALLED (the alert's threshold too)."""


def add_parsers(sub: Any) -> None:
    """Register status."""
    p = sub.add_parser("status", help="freshness of the views and of every shard's cycles")
    p.add_argument("--stale", type=float, default=STALE_S,
                   help="seconds after which a shard's last cycle counts as stalled")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=_status)


def _iso(ms: int) -> str:
    if ms <= 0:
        return "never"
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ms / 1000))


def status_lines(fresh: dict[str, Any], stale_s: float = STALE_S) -> tuple[list[str], bool]:
    """The lines ``sluice status`` prints for a freshness object, and whether a shard stalled."""
    lag = int(fresh.get("lag_records", 0))
    state = "caught up" if fresh.get("caught_up") and not lag else f"{lag} ledger records behind"
    lines = [f"views: {state}; newest fact {_iso(int(fresh.get('last_fact_ms', 0)))}"]
    seqs: dict[str, int] = fresh.get("shard_seq", {})
    cycles: dict[str, int] = fresh.get("cycle_ms", {})
    ages: dict[str, float] = fresh.get("cycle_age_s", {})
    stalled = False
    for shard in sorted(set(seqs) | set(cycles)):
        age = ages.get(shard)
        if age is None:
            note, stalled = "no cycle yet: STALLED", True
        elif age > stale_s:
            note, stalled = f"last cycle {age:.0f} s ago: STALLED", True
        else:
            note = f"last cycle {age:.1f} s ago"
        lines.append(f"shard {shard}: seq {seqs.get(shard, 0)}, cycle at "
                     f"{_iso(cycles.get(shard, 0))}, {note}")
    if not seqs and not cycles:
        lines.append("no shard has written to the ledger yet")
    for trouble in fresh.get("state_dir", []):
        lines.append(f"views: state directory {trouble['directory']}: {trouble['problem']} "
                     f"since {_iso(int(trouble['since_ms']))}: PAUSED")
        stalled = True
    return lines, stalled


def _status(args: argparse.Namespace, settings: Settings) -> int:
    try:
        answer = Client(settings).get("/v1/status")
    except ApiError as exc:
        print(f"sluice status: {exc}", file=sys.stderr)
        return 1
    fresh = answer.get("freshness", {})
    if args.json:
        print(json.dumps(fresh, indent=2))
        return 0
    lines, stalled = status_lines(fresh, args.stale)
    for line in lines:
        print(line)
    return 1 if stalled else 0
