"""What an idle cluster costs: CPU share and RSS of the node daemons, the worker and the views.

    KAFKA_BOOTSTRAP=… .venv/bin/python benchmarks/bench_idle.py --nodes 64 --settle 30 \
        --measure 60 [--jobs 64]

Starts ``sluice up --nodes N`` in a fresh ``SLUICE_HOME`` (its own topic prefix and ports), with
``--jobs K`` runs an array of K trivial jobs first (a node that has run a job has loaded what
its first command needs: the command key's ``cryptography``), lets it settle, then reads every
process's CPU time (``/proc/PID/stat``: user + system) at the start and the end of ``--measure``
seconds of doing nothing, and its memory at the end (``VmRSS``, of it ``RssAnon`` its own and
``RssFile`` file pages shared with other processes, and ``Pss``). Prints per role (node daemons
summed and per daemon, worker, views) the share of one core and the memory, with the machine's
load average; then ``sluice down``. The broker is not counted (Slurm's figure has none either).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SLUICE = str(Path(sys.executable).with_name("sluice"))
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS


MEMORY = ("VmRSS", "RssAnon", "RssFile", "Pss")
"""What is read of a process's memory: all of it, its own, file pages shared with the host's
other processes (libpython, librdkafka), and its proportional share of all of it."""


def memory_mib(pid: int) -> dict[str, float]:
    """``MEMORY`` of a process in MiB (``/proc/PID/status`` and ``smaps_rollup``; 0 if gone)."""
    found = dict.fromkeys(MEMORY, 0.0)
    for name in ("status", "smaps_rollup"):
        try:
            lines = Path(f"/proc/{pid}/{name}").read_text().splitlines()
        except OSError:
            continue
        for line in lines:
            key, _, rest = line.partition(":")
            if key in found and rest.split():
                found[key] = int(rest.split()[0]) / 1024
    return found


def thread_times(pid: int) -> dict[int, tuple[str, int, int]]:
    """Per thread of a process: its name, CPU ns (``schedstat``) and context switches."""
    found: dict[int, tuple[str, int, int]] = {}
    for task in Path(f"/proc/{pid}/task").glob("*") if Path(f"/proc/{pid}").exists() else []:
        try:
            name = (task / "comm").read_text().strip()
            ns = int((task / "schedstat").read_text().split()[0])
            status = (task / "status").read_text()
        except (OSError, ValueError, IndexError):
            continue
        switches = sum(int(line.split()[1]) for line in status.splitlines()
                       if "ctxt_switches:" in line)
        found[int(task.name)] = (name, ns, switches)
    return found


def thread_rows(before: dict[str, dict[int, tuple[str, int, int]]],
                after: dict[str, dict[int, tuple[str, int, int]]],
                elapsed: float) -> dict[tuple[str, str], tuple[float, float, int]]:
    """CPU ms/s and wake-ups/s by (role, thread name), summed over the role's processes, with
    the number of such threads."""
    rows: dict[tuple[str, str], tuple[float, float, int]] = {}
    for proc, threads in after.items():
        role = "node daemon" if proc.startswith("node-") else proc
        for tid, (name, ns, switches) in threads.items():
            if tid not in before.get(proc, {}):
                continue
            _, ns0, sw0 = before[proc][tid]
            key = (role, name if role == "node daemon" else f"{name} {tid}")
            cpu, wakes, count = rows.get(key, (0.0, 0.0, 0))
            rows[key] = (cpu + (ns - ns0) / 1e6 / elapsed, wakes + (switches - sw0) / elapsed,
                         count + 1)
    return rows


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=64)
    parser.add_argument("--settle", type=float, default=30.0)
    parser.add_argument("--measure", type=float, default=60.0)
    parser.add_argument("--api-port", type=int, default=20611)
    parser.add_argument("--metrics-port", type=int, default=20612)
    parser.add_argument("--jobs", type=int, default=0,
                        help="run an array of this many `true` jobs before idling")
    parser.add_argument("--prefix", default=f"spdidle{os.getpid()}")
    parser.add_argument("--threads", action="store_true",
                        help="also print each thread's CPU and wake-ups (/proc/PID/task/TID)")
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="spd-idle-"))
    env = {**os.environ, "SLUICE_HOME": str(home), "SLUICE_TOPIC_PREFIX": args.prefix,
           "SLUICE_CLUSTER": args.prefix, "SLUICE_API": f"127.0.0.1:{args.api_port}",
           "SLUICE_WORKER_METRICS": f"127.0.0.1:{args.metrics_port}"}
    print(f"{os.cpu_count()} CPUs; load average {load()}; sluice up --nodes {args.nodes}")
    try:
        subprocess.run([SLUICE, "up", "--nodes", str(args.nodes), "--cpus", "1", "--mem",
                        "512", "--timeout", "900"], env=env, check=True)
        if args.jobs:
            subprocess.run([SLUICE, "submit", "--uid", "nobody", "-D", "/tmp",
                            f"--array=1-{args.jobs}", "--", "true"], env=env, check=True)
        time.sleep(args.settle)
        pids = {p.stem: int(p.read_text()) for p in (home / "run").glob("*.pid")}
        tasks = {n: thread_times(p) for n, p in pids.items()} if args.threads else {}
        before, start_load = {n: cpu_s(p) for n, p in pids.items()}, load()
        start = time.monotonic()
        time.sleep(args.measure)
        elapsed = time.monotonic() - start
        used = {n: cpu_s(p) - before[n] for n, p in pids.items()}
        tasks_after = {n: thread_times(p) for n, p in pids.items()} if args.threads else {}
        memory = {n: memory_mib(p) for n, p in pids.items()}
    finally:
        subprocess.run([SLUICE, "down"], env=env, check=False)
    nodes = [n for n in pids if n.startswith("node-")]
    rows = [(f"{len(nodes)} node daemons", nodes), ("worker", ["worker"]),
            ("views", ["projections"]), ("all of it", list(pids))]
    print(f"idle for {elapsed:.0f} s (load {start_load} -> {load()}):")
    print(f"  {'':18} {'% of a core':>11}   {'  '.join(f'{m:>8}' for m in MEMORY)}  (MiB)")
    for label, names in rows:
        share = 100 * sum(used[n] for n in names) / elapsed
        print(f"  {label:18} {share:11.2f}   "
              + "  ".join(f"{sum(memory[n][m] for n in names):8.1f}" for m in MEMORY))
    if nodes:
        each = 100 * sum(used[n] for n in nodes) / elapsed / len(nodes)
        print(f"  per node daemon    {each:11.3f}   "
              + "  ".join(f"{sum(memory[n][m] for n in nodes) / len(nodes):8.1f}"
                          for m in MEMORY)
              + f"  (VmRSS max {max(memory[n]['VmRSS'] for n in nodes):.1f})")

    if args.threads:
        print_threads(thread_rows(tasks, tasks_after, elapsed), len(nodes))


def print_threads(rows: dict[tuple[str, str], tuple[float, float, int]], nodes: int) -> None:
    """The per-thread table: a node daemon's threads averaged over the daemons (by name), the
    worker's and the views' one by one (name and thread id)."""
    print("  per thread (ms of CPU a second; wake-ups a second; threads of that name):")
    for (role, name), (cpu, wakes, count) in sorted(rows.items()):
        each = max(1, nodes) if role == "node daemon" else 1
        label = "a node daemon" if role == "node daemon" else role
        print(f"    {label:14} {name:22} {cpu / each:7.3f}  {wakes / each:6.2f}  {count // each}")

if __name__ == "__main__":
    main()
