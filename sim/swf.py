"""Standard Workload Format traces (Parallel Workloads Archive), gzip or plain.

Decisions, stated once (docs/scheduling.md repeats them):

- the machine is one single-CPU node per processor: ``MaxProcs`` from the header (else
  ``MaxNodes``, else the largest request), unless the caller gives ``procs``;
- a job's size is its requested processors, else its allocated processors (field 8, else 5);
- jobs with run time ≤ 0, or with no known or too large processor count, are dropped and counted;
- the estimate is the requested time (field 9), else the run time;
- submit times are made non-decreasing in file order (they already are in the archive files).
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from pathlib import Path

from sim.workload import MachineNode, TraceJob, Workload

__all__ = ["load_swf", "machine_of", "parse_swf"]


def _lines(path: Path) -> Iterator[str]:
    with path.open("rb") as raw:
        magic = raw.read(2)
    opener = gzip.open if magic == b"\x1f\x8b" else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as handle:
        yield from handle


def parse_swf(
    lines: Iterator[str] | list[str], procs: int | None = None, name: str = "trace"
) -> Workload:
    """Read SWF lines into a workload (see the module docstring for the rules)."""
    header: dict[str, str] = {}
    records: list[list[int]] = []
    for line in lines:
        text = line.strip()
        if not text:
            continue
        if text.startswith(";"):
            key, sep, value = text[1:].partition(":")
            if sep:
                header.setdefault(key.strip(), value.strip())
            continue
        fields = text.split()
        if len(fields) >= 18:
            records.append([int(float(f)) for f in fields[:18]])
    size = (
        procs
        or _header_int(header, "MaxProcs")
        or _header_int(header, "MaxNodes")
        or max((max(r[7], r[4]) for r in records), default=1)
    )
    jobs, dropped = [], {"run time <= 0": 0, "unknown processors": 0, "larger than machine": 0}
    for r in records:
        run, requested, allocated, estimate = r[3], r[7], r[4], r[8]
        width = requested if requested > 0 else allocated
        if run <= 0:
            dropped["run time <= 0"] += 1
        elif width <= 0:
            dropped["unknown processors"] += 1
        elif width > size:
            dropped["larger than machine"] += 1
        else:
            jobs.append(
                TraceJob(
                    number=r[0],
                    submit_s=max(r[1], 0),
                    run_s=run,
                    nodes=width,
                    estimate_s=estimate if estimate > 0 else run,
                    user=f"u{r[11]}" if r[11] >= 0 else "user",
                )
            )
    jobs.sort(key=lambda j: (j.submit_s, j.number))
    return Workload(
        name=name,
        machine=machine_of(size),
        jobs=jobs,
        dropped={k: v for k, v in dropped.items() if v},
        start_unix_s=_header_int(header, "UnixStartTime") or 0,
    )


def machine_of(procs: int) -> list[MachineNode]:
    """``procs`` single-CPU nodes named n1..nP."""
    return [MachineNode(name=f"n{i}", cpus=1) for i in range(1, procs + 1)]


def _header_int(header: dict[str, str], key: str) -> int:
    try:
        return int(header.get(key, "").split()[0])
    except (ValueError, IndexError):
        return 0


def load_swf(path: str | Path, procs: int | None = None) -> Workload:
    """Load an SWF file (gzip or plain)."""
    path = Path(path)
    return parse_swf(_lines(path), procs, name=path.name)
