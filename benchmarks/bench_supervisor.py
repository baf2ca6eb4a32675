"""What a run's supervisor costs: start latency, memory, and how fast a lost daemon's run dies.

Run: ``.venv/bin/python benchmarks/bench_supervisor.py [--runs N]``. For each tracking mode
(``pgid``, and ``cgroup`` where the host gives a writable cgroup2 mount) it prints

- start: ``Supervised.start`` until the command runs (p50, p90 over N starts of ``true``);
- end: start until the daemon sees the command's exit (``true``), leftovers killed;
- RSS of one idle supervisor (its command is ``sleep``), and the part of it that is its own
  (``RssAnon``: the interpreter's code pages are shared by every supervisor);
- lost daemon: closing the daemon's end of the lifeline (what the kernel does when the daemon is
  killed) until the last of 3 processes of the run (two children, one ``setsid`` orphan) is gone.

Every line ends with the machine's load average: the figures move with it. The second line
says how commands start (the exec helper, or Python: ``SLUICE_EXEC_HELPER=off``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from agents.node.proctrack import RunScope, detect_cgroups, remove_cgroup
from agents.node.supervise import exec_helper
from agents.node.supervised import Supervised
from agents.node.supervisor_server import SupervisorServer
from benchmarks.broker import machine_line


def _load() -> str:
    return "load " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def _pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def _rss_kib(pid: int, field: str = "VmRSS") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def _cpu_ms(before: os.times_result, runs: int, server: SupervisorServer | None) -> str:
    """CPU a run of ``true`` cost: the daemon's side, and its supervisor's with the command's
    (reaped children; a server's forked supervisors are its own children: counted when the
    server ends, here)."""
    if server is not None:
        server.close()
    after = os.times()
    own = (after.user + after.system - before.user - before.system) / runs * 1000
    children = (after.children_user + after.children_system - before.children_user
                - before.children_system) / runs * 1000
    return f"CPU a run: daemon {own:.1f} ms, supervisor + command {children:.1f} ms"


def _bench(mode: str, make: Callable[[str], RunScope], runs: int, home: Path,
           forked: bool = False) -> None:
    starts, ends = [], []
    server = SupervisorServer(home) if forked else None
    before = os.times()
    for _ in range(runs):
        scope = make(f"sB{uuid.uuid4().hex[:12].upper()}")
        env = {**os.environ, "SLUICE_RUN_SLUID": scope.run_sluid}
        began = time.perf_counter()
        process = Supervised.start(scope, ["true"], env, home, subprocess.DEVNULL,
                                   subprocess.DEVNULL, home, server=server)
        starts.append(time.perf_counter() - began)
        process.wait(60)
        ends.append(time.perf_counter() - began)
        if scope.cgroup is not None:
            remove_cgroup(scope.cgroup)
    print(f"{mode:14s} start p50 {statistics.median(starts) * 1000:.0f} ms, "
          f"p90 {_pct(starts, 0.9) * 1000:.0f} ms; end p50 {statistics.median(ends) * 1000:.0f}"
          f" ms, p90 {_pct(ends, 0.9) * 1000:.0f} ms ({runs} runs; {_load()})")
    print(f"{mode:14s} {_cpu_ms(before, runs, server)}")
    server = SupervisorServer(home) if forked else None
    scope = make(f"sB{uuid.uuid4().hex[:12].upper()}")
    env = {**os.environ, "SLUICE_RUN_SLUID": scope.run_sluid}
    token = f"6009.{os.getpid()}"
    command = ["sh", "-c", f"sleep {token} & ( setsid sleep {token} & ) ; sleep {token}"]
    process = Supervised.start(scope, command, env, home, subprocess.DEVNULL,
                               subprocess.DEVNULL, home, server=server)
    while len(scope.pids(process.pid)) < 4:  # sh and three sleeps
        time.sleep(0.01)
    rss, private = _rss_kib(process.pid), _rss_kib(process.pid, "RssAnon")
    began = time.perf_counter()
    process._lifeline.close()
    process.wait(60)
    while scope.pids():
        time.sleep(0.001)
    gone = time.perf_counter() - began
    print(f"{mode:14s} supervisor RSS {rss / 1024:.1f} MiB ({private / 1024:.1f} MiB private); "
          f"lost daemon → run gone "
          f"{gone * 1000:.0f} ms ({_load()})")
    if server is not None:
        server.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    print(machine_line())
    print(f"commands start through {exec_helper() or 'Python (no exec helper)'}")
    with tempfile.TemporaryDirectory(prefix="procs-bench-") as tmp:
        home = Path(tmp)
        _bench("pgid", RunScope, args.runs, home)
        _bench("pgid, forked", RunScope, args.runs, home, forked=True)
        tree, reason = detect_cgroups("", f"bench-{uuid.uuid4().hex[:8]}")
        if tree is None:
            print(f"cgroup: not measured: {reason}")
            return 0

        def in_cgroup(run_sluid: str) -> RunScope:
            tree.create(run_sluid)
            return tree.scope(run_sluid)

        try:
            _bench("cgroup", in_cgroup, args.runs, home)
            _bench("cgroup, forked", in_cgroup, args.runs, home, forked=True)
        finally:
            for run_sluid in tree.runs():
                remove_cgroup(tree.run_dir(run_sluid))
            remove_cgroup(tree.node_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
