"""``sluice status``: how fresh the views are, and whether each shard is still cycling.

One line for the views (caught up or how many ledger records behind, the newest fact), then one
line per shard: its last applied ``shard_seq``, the time of its last ``CycleCompleted`` and that
cycle's age by the views' clock. A shard closes a cycle at least every 10 s even when idle
(``scheduler.cycle.IDLE_CLOSE_MS``), so an age over ``--stale`` seconds (default 60) marks it
``STALLED`` and the command exits 1, as it does when the views' state directory refuses
writes (full or read-only: a ``PAUSED`` line). It then reads the worker's gauges from its
metrics server (``SLUICE_WORKER_METRICS``, default ``127.0.0.1:9108``, as ``sluice sdiag``):
``sluice_state_dir_full`` / ``sluice_state_dir_read_only`` make a ``worker: … PAUSED`` line and
exit 1 (the worker consumes nothing past what it stored), ``sluice_health_blind`` a line that
the health agent hears no heartbeat at all; a worker whose metrics do not answer is one line,
not a failure (a worker may serve none). A node whose daemon takes no commands (its own state
directory full or read-only: the views' ``paused_nodes``) is a ``node …: PAUSED`` line, without
changing the exit status. Views whose shard waits for good for a fact they could not read
(facts held behind a ``shard_seq`` gap with nothing left to read: ``freshness.held``) are a
``views: STUCK …`` line and exit 1 (docs/operations.md, "Views missing a fact"). ``--json``
prints the API's freshness object with the worker's reading under ``worker`` and those nodes
under ``paused_nodes``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from cli.client import ApiError, Client
from cli.sdiag_cmd import Samples, fetch_text, parse_openmetrics, worker_metrics
from streams.settings import Settings

__all__ = ["STALE_S", "add_parsers", "node_lines", "status_lines", "worker_lines",
           "worker_reading"]

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
    if not lag and fresh.get("held"):
        state = "NOT caught up (below)"
    cut_off_ms = int(fresh.get("broker_unreachable_since_ms") or 0)
    if cut_off_ms:  # the last lag measured is no news: nothing reaches the views meanwhile
        state = (f"CUT OFF from the broker since {_iso(cut_off_ms)}: they show what they folded "
                 "before")
    lines = [f"views: {state}; newest fact {_iso(int(fresh.get('last_fact_ms', 0)))}"]
    seqs: dict[str, int] = fresh.get("shard_seq", {})
    cycles: dict[str, int] = fresh.get("cycle_ms", {})
    ages: dict[str, float] = fresh.get("cycle_age_s", {})
    stalled = bool(cut_off_ms)
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
    for shard, gap in sorted(fresh.get("held", {}).items()):
        if lag:  # still reading: the fact may be on its way
            continue
        lines.append(f"views: STUCK on shard {shard}: its fact {gap['waiting_for']} never came "
                     f"and its {gap['held']} later facts wait for it (a ledger record the views "
                     "could not read: their log's dead letters, e.g. a newer schema than they "
                     "know); run views as new as the workers, then `sluice projections "
                     "--rebuild`")
        stalled = True
    for trouble in fresh.get("state_dir", []):
        lines.append(f"views: state directory {trouble['directory']}: {trouble['problem']} "
                     f"since {_iso(int(trouble['since_ms']))}: PAUSED")
        stalled = True
    return lines, stalled


_WORKER_GAUGES = {"sluice_state_dir_full": "no space left on device",
                  "sluice_state_dir_read_only": "read-only or not writable"}


def worker_reading(samples: Samples | None, address: str, error: str = "") -> dict[str, Any]:
    """What ``sluice status`` says of the worker: its metrics' address and either ``error``
    or the gauges it read (``state_dir``: the problems of its state directory, ``[]`` when it
    takes writes; ``health_blind``)."""
    if samples is None:
        return {"address": address, "error": error}
    value = {name: v for (name, _labels), v in samples.items()}
    return {"address": address,
            "state_dir": [words for gauge, words in _WORKER_GAUGES.items()
                          if value.get(gauge, 0) > 0],
            "health_blind": value.get("sluice_health_blind", 0) > 0}


def worker_lines(reading: dict[str, Any]) -> tuple[list[str], bool]:
    """The lines for the worker's reading, and whether it is paused."""
    where = reading["address"]
    if "error" in reading:
        return [f"worker: metrics at {where} do not answer ({reading['error']}); "
                "its state directory is not known (SLUICE_WORKER_METRICS)"], False
    lines = [f"worker: state directory {problem} (metrics at {where}): PAUSED, nothing is "
             "decided past what it stored" for problem in reading["state_dir"]]
    if reading.get("health_blind"):
        lines.append(f"worker: its health agent hears no heartbeat from any node (metrics at "
                     f"{where}): it judges no node until one arrives")
    if not lines:
        lines.append(f"worker: state directory writable (metrics at {where})")
    return lines, bool(reading["state_dir"])


def node_lines(paused: list[dict[str, Any]]) -> list[str]:
    """A line per node whose daemon takes no commands (``/v1/status``'s ``paused_nodes``): it
    gets no new work and its runs go on; the exit status stays the system's (such a node is
    out of service as a drained one is, and ``sinfo -R`` lists it)."""
    return [f"node {row['name']}: {row['reason']}: PAUSED (no new work; its runs go on)"
            for row in paused]


def _worker() -> dict[str, Any]:
    address = worker_metrics()
    try:
        return worker_reading(parse_openmetrics(fetch_text(address, "/metrics", {})), address)
    except (OSError, ValueError) as exc:
        return worker_reading(None, address, str(exc) or type(exc).__name__)


def _status(args: argparse.Namespace, settings: Settings) -> int:
    try:
        answer = Client(settings).get("/v1/status")
    except ApiError as exc:
        print(f"sluice status: {exc}", file=sys.stderr)
        return 1
    fresh = answer.get("freshness", {})
    worker = _worker()
    nodes = list(answer.get("paused_nodes", []))
    if args.json:
        print(json.dumps({**fresh, "worker": worker, "paused_nodes": nodes}, indent=2))
        return 0
    lines, stalled = status_lines(fresh, args.stale)
    more, paused = worker_lines(worker)
    for line in lines + more + node_lines(nodes):
        print(line)
    return 1 if stalled or paused else 0
