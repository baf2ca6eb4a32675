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
        before, start_load = {n: cpu_s(p) for n, p in pids.items()}, load()
        start = time.monotonic()
        time.sleep(args.measure)
        elapsed = time.monotonic() - start
        used = {n: cpu_s(p) - before[n] for n, p in pids.items()}
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


if __name__ == "__main__":
    main()
