"""Node failures for the simulator, from the LANL failure log (Schroeder & Gibson, LA-UR-05-7318).

Rules, stated once (docs/scheduling.md repeats them):

- every record is one node failure: at ``Prob Started`` the node fails (its running job is
  stopped, as the health agent's ``NodeFailed`` does) and it stays down for ``Down Time``
  minutes (else ``Prob Fixed`` - ``Prob Started``), then registers again;
- one LANL system is replayed: the one given, else the system whose node count is closest to
  the simulated machine's (ties: more records, then the lower system number);
- LANL node ``k`` of that system becomes simulated node ``k mod N`` (N = the machine's node
  count, nodes in their natural order), so a system of the machine's size maps one to one;
- time: the system's first failure happens at the workload's start; failures after the last
  submission of the workload are not replayed; a failure of a node that is still down is
  skipped (it is the same outage).
"""

from __future__ import annotations

import csv
import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["FailureEvent", "LanlFailure", "failure_events", "load_lanl", "pick_system"]

_TIME_FORMATS = ("%m/%d/%Y %H:%M", "%m/%d/%y %H:%M")


@dataclass(frozen=True, slots=True)
class LanlFailure:
    """One record of the LANL log."""

    system: int
    system_nodes: int
    node: int
    start: dt.datetime
    down_s: int


@dataclass(frozen=True, slots=True)
class FailureEvent:
    """One injected failure: seconds after the workload's start, the node index, the outage."""

    at_s: int
    node: int
    down_s: int


def _time(text: str) -> dt.datetime:
    for fmt in _TIME_FORMATS:
        try:
            return dt.datetime.strptime(text.strip(), fmt).replace(tzinfo=dt.UTC)
        except ValueError:
            continue
    raise ValueError(f"not a LANL time: {text!r}")


def _int(text: str) -> int | None:
    try:
        return int(text.strip())
    except ValueError:
        return None


def load_lanl(path: str | Path) -> list[LanlFailure]:
    """Every usable record (records without a system, node or start time are skipped)."""
    with Path(path).open(encoding="latin-1", newline="") as handle:
        rows = list(csv.reader(handle))
    header = next(i for i, row in enumerate(rows) if row and row[0].strip() == "System")
    names = {name.strip(): i for i, name in enumerate(rows[header])}
    col = {
        key: next(i for n, i in names.items() if n.startswith(key))
        for key in ("System", "nodes", "nodenum", "Prob Started", "Prob Fixed", "Down Time")
    }
    failures = []
    for row in rows[header + 1 :]:
        system, node = _int(row[col["System"]]), _int(row[col["nodenum"]])
        if system is None or node is None or not row[col["Prob Started"]].strip():
            continue
        start = _time(row[col["Prob Started"]])
        minutes = _int(row[col["Down Time"]])
        if minutes is None:
            minutes = int((_time(row[col["Prob Fixed"]]) - start).total_seconds() // 60)
        size = _int(row[col["nodes"]]) or node + 1
        failures.append(LanlFailure(system, size, node, start, max(minutes, 0) * 60))
    return failures


def pick_system(failures: Iterable[LanlFailure], machine_nodes: int) -> int:
    """The system closest in node count to the machine (more records, then lower number)."""
    counts: dict[int, int] = {}
    sizes: dict[int, int] = {}
    for f in failures:
        counts[f.system] = counts.get(f.system, 0) + 1
        sizes[f.system] = max(sizes.get(f.system, 0), f.system_nodes)
    if not counts:
        raise ValueError("the failure log has no usable record")
    return min(counts, key=lambda s: (abs(sizes[s] - machine_nodes), -counts[s], s))


def failure_events(
    failures: Iterable[LanlFailure], system: int, machine_nodes: int, horizon_s: int
) -> list[FailureEvent]:
    """The chosen system's failures on the simulated machine, in time order (see the module)."""
    chosen = sorted(
        (f for f in failures if f.system == system), key=lambda f: (f.start, f.node, f.down_s)
    )
    if not chosen:
        return []
    origin = chosen[0].start
    up_at: dict[int, int] = {}
    events = []
    for f in chosen:
        at = int((f.start - origin).total_seconds())
        node = f.node % machine_nodes
        if at > horizon_s:
            break
        if at < up_at.get(node, -1):
            continue  # still down: the same outage
        up_at[node] = at + f.down_s
        events.append(FailureEvent(at, node, f.down_s))
    return events
