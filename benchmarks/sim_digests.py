"""Digests of simulator runs, to show that two trees simulate the same to the last digit.

    PYTHONPATH=TREE .venv/bin/python benchmarks/sim_digests.py [NAME ...] > digests.txt

For each run (all of :data:`RUNS` by default; names select some) one line: the name, then
``sluice simulate --json``'s fields without the speed, with the metrics unrounded (their
``repr``), a digest of every fact the core emitted (each fact's ``repr``, in order, as the
simulator observes them), of every job's submit/start/end times and of the final state's jobs.
Two trees give identical lines (compare with ``diff``) when their runs are the same; the speed
is not printed (``bench_sim.py`` measures it). It asserts nothing. The runs cover EASY,
conservative and FCFS, the SDSC-SP2, KTH-SP2, CTC-SP2, HPC2N and Lublin traces, a cycle closed
after every batch, and node failures from the LANL log under the three requeue modes, with
``kill_at_limit``. Traces are read from ``../shared/traces`` next to the repo.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scheduler.records import Fact
from scheduler.shard.state import ShardState
from sim import SimOptions, load_swf
from sim.engine import Simulation
from sim.failures import failure_events, load_lanl, pick_system

SHARED = Path(__file__).resolve().parents[1] / ".." / "shared" / "traces"
TRACES = {
    "sdsc": "swf/SDSC-SP2-1998-4.2-cln.swf.gz",
    "kth": "swf/KTH-SP2-1996-2.1-cln.swf.gz",
    "lublin": "swf/lublin_256.swf.gz",
    "ctc": "swf/CTC-SP2-1996-3.1-cln.swf.gz",
    "hpc2n": "swf/HPC2N-2002-2.2-cln.swf.gz",
}
LANL = "failures/LANL-1996-2005-failures.csv"

RUNS: dict[str, tuple[str, dict[str, Any], bool]] = {
    # name: (trace, SimOptions fields, with the LANL failures over the run's horizon)
    "sdsc-easy": ("sdsc", {"policy": "easy"}, False),
    "kth-easy": ("kth", {"policy": "easy"}, False),
    "lublin-easy": ("lublin", {"policy": "easy"}, False),
    "sdsc-cons4000": ("sdsc", {"policy": "conservative", "max_jobs": 4000}, False),
    "lublin-cons2500": ("lublin", {"policy": "conservative", "max_jobs": 2500}, False),
    "sdsc-fcfs4000": ("sdsc", {"policy": "fcfs", "max_jobs": 4000}, False),
    "lublin-fcfs2500": ("lublin", {"policy": "fcfs", "max_jobs": 2500}, False),
    "kth-fcfs": ("kth", {"policy": "fcfs"}, False),
    "lublin-fail-normal": (
        "lublin", {"max_jobs": 3000, "kill_at_limit": True, "requeue": "normal"}, True
    ),
    "lublin-fail-hotswap": (
        "lublin", {"max_jobs": 3000, "kill_at_limit": True, "requeue": "hotswap"}, True
    ),
    "lublin-fail-expedite": (
        "lublin", {"max_jobs": 3000, "kill_at_limit": True, "requeue": "expedite"}, True
    ),
    "sdsc-fail-normal8000": ("sdsc", {"max_jobs": 8000, "requeue": "normal"}, True),
    "ctc-easy30000": ("ctc", {"policy": "easy", "max_jobs": 30000}, False),
    "hpc2n-easy20000": ("hpc2n", {"policy": "easy", "max_jobs": 20000}, False),
    "sdsc-every3000": ("sdsc", {"policy": "easy", "max_jobs": 3000, "every_cycle": True}, False),
    "kth-cons10000": ("kth", {"policy": "conservative", "max_jobs": 10000}, False),
}


def _short(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def digests(name: str) -> dict[str, Any]:
    """One run's fields and digests (see the module docstring)."""
    trace, fields, with_failures = RUNS[name]
    workload = load_swf(SHARED / TRACES[trace])
    if with_failures:
        records = load_lanl(SHARED / LANL)
        size = len(workload.machine)
        horizon = max(job.submit_s for job in workload.jobs[: fields["max_jobs"]])
        fields = fields | {
            "failures": tuple(
                failure_events(records, pick_system(records, size), size, horizon)
            )
        }
    simulation = Simulation(workload, SimOptions(**fields))
    facts = hashlib.sha256()
    observe = simulation._observe

    def observed(state: ShardState, fact: Fact) -> None:
        facts.update(repr(fact).encode())
        observe(state, fact)

    simulation._observe = observed  # type: ignore[method-assign]
    result = simulation.run()
    times = sorted((s, t.submit_ms, t.start_ms, t.end_ms) for s, t in simulation.times.items())
    out = result.as_json()
    del out["wall_s"], out["jobs_per_s"]
    out |= {
        "avg_wait_s": repr(result.avg_wait_s),
        "avg_bounded_slowdown": repr(result.avg_bounded_slowdown),
        "utilization": repr(result.utilization),
        "makespan_s": repr(result.makespan_s),
        "facts_digest": facts.hexdigest()[:16],
        "times_digest": _short(repr(times).encode()),
        "jobs_state_digest": _short(repr(sorted(simulation.state.jobs.items())).encode()),
    }
    return out


def main() -> None:
    for name in sys.argv[1:] or list(RUNS):
        print(name, json.dumps(digests(name), sort_keys=True), flush=True)


if __name__ == "__main__":
    main()
