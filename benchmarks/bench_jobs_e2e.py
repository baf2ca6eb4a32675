"""Trivial jobs end to end: how many `true` jobs a second the whole system runs (issue 17).

    KAFKA_BOOTSTRAP=… .venv/bin/python benchmarks/bench_jobs_e2e.py --nodes 64 --jobs 2000 \
        [--cpus 1] [--settle 10]

Starts ``sluice up --nodes N`` (each node ``--cpus`` CPUs, so ``N * cpus`` jobs run at once) in a
fresh ``SLUICE_HOME`` with its own topic prefix and ports, submits ``--jobs`` tasks of ``true``
as ``nobody`` in arrays (``sluice submit --array``, 1,000 tasks a request, so the front door is
not what is measured), and polls the views' ``slurm_sdiag_jobs_*`` counters until every task
has ended. Prints the jobs a second from the submission to the last end, the CPU seconds the
worker, the views and the node daemons spent meanwhile, those of the runs' supervisors and
their jobs (the daemons' children, reaped or live), each also per job ended, and the machine's
load average beside them; and the daemons' wake-ups and read/write system calls a job: counts,
which a loaded machine inflates less than CPU seconds (though bigger batches under load mean
fewer wake-ups); the shard's batches, their inbox records and their transactions (the
worker's ``/metrics``); then
``sluice down``. It asserts nothing. The code measured is the one Python imports ``cli`` from:
``PYTHONPATH=/other/tree`` measures another tree with this script.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

from bench_idle import SLUICE, TICKS, cpu_s, load  # the same process readings

ARRAY_MAX = 1000  # tasks per array: Slurm's default MaxArraySize is 1001 (ids 0-1000)


def ended(api: str) -> int:
    """Runs ended since the views started (completed, failed, cancelled)."""
    with urllib.request.urlopen(f"http://{api}/metrics/scheduler", timeout=30) as response:
        text = response.read().decode()
    total = 0
    for line in text.splitlines():
        for name in ("completed", "failed", "canceled"):
            if line.startswith(f"slurm_sdiag_jobs_{name} "):
                total += int(float(line.split()[1]))
    return total


def shard_batches(metrics: str) -> tuple[float, float, float]:
    """The worker's shard batches, the inbox records they decided, and their transactions
    (each batch that wrote anything is one transaction, and each writes one
    ``CycleCompleted``), all shards together; zeros when the metrics cannot be read."""
    try:
        with urllib.request.urlopen(f"http://{metrics}/metrics", timeout=30) as response:
            text = response.read().decode()
    except OSError:
        return 0.0, 0.0, 0.0
    batches = records = transactions = 0.0
    for line in text.splitlines():
        name, _, value = line.rpartition(" ")
        if name.startswith("sluice_scheduling_batch_requests_count"):
            batches += float(value)
        elif name.startswith("sluice_scheduling_batch_requests_sum"):
            records += float(value)
        elif (name.startswith("sluice_scheduling_facts_total")
              and 'fact="CycleCompleted"' in name):
            transactions += float(value)
    return batches, records, transactions


def _stat(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return []


def activity(pids: list[int]) -> tuple[int, int, int]:
    """Load-independent counts of ``pids`` (the daemons): their threads' voluntary context
    switches (each a wake-up after a wait), and their read and write system calls
    (``/proc/PID/io`` ``syscr``, ``syscw``); a process gone counts nothing."""
    woken = reads = writes = 0
    for pid in pids:
        for task in Path(f"/proc/{pid}/task").glob("*"):
            try:
                for line in (task / "status").read_text().splitlines():
                    if line.startswith("voluntary_ctxt_switches:"):
                        woken += int(line.split()[1])
            except OSError:
                continue
        try:
            fields = dict(line.split(": ") for line in
                          Path(f"/proc/{pid}/io").read_text().splitlines())
        except (OSError, ValueError):
            continue
        reads, writes = reads + int(fields.get("syscr", 0)), writes + int(fields.get("syscw", 0))
    return woken, reads, writes


def children_cpu_s(pids: list[int]) -> float:
    """CPU seconds of the processes under ``pids`` (not their own): their reaped children's,
    and those of their live children with everything those reaped (a supervisor server's
    forked supervisors), read from /proc."""
    total, wanted = 0, set(pids)
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat(int(entry.name))
            if fields and int(fields[1]) in wanted:
                total += sum(int(f) for f in fields[11:15])
    for pid in pids:
        fields = _stat(pid)
        if fields:
            total += int(fields[13]) + int(fields[14])
    return total / TICKS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=64)
    parser.add_argument("--cpus", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--settle", type=float, default=10.0)
    parser.add_argument("--timeout", type=float, default=1800.0)
    parser.add_argument("--broker-pid", type=int, default=0,
                        help="also print this process's CPU (the broker's: a bundled broker's "
                             "DIR/broker.pid)")
    parser.add_argument("--stall", type=float, default=120.0,
                        help="give up when no job has ended for this long")
    parser.add_argument("--api-port", type=int, default=20621)
    parser.add_argument("--metrics-port", type=int, default=20622)
    parser.add_argument("--prefix", default=f"spdjobs{os.getpid()}")
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="spd-jobs-"))
    api = f"127.0.0.1:{args.api_port}"
    env = {**os.environ, "SLUICE_HOME": str(home), "SLUICE_TOPIC_PREFIX": args.prefix,
           "SLUICE_CLUSTER": args.prefix, "SLUICE_API": api,
           "SLUICE_WORKER_METRICS": f"127.0.0.1:{args.metrics_port}"}
    print(f"{os.cpu_count()} CPUs; load average {load()}; sluice up --nodes {args.nodes} "
          f"--cpus {args.cpus}")
    try:
        subprocess.run([SLUICE, "up", "--nodes", str(args.nodes), "--cpus", str(args.cpus),
                        "--mem", "512", "--timeout", "900"], env=env, check=True)
        time.sleep(args.settle)
        pids = {p.stem: int(p.read_text()) for p in (home / "run").glob("*.pid")}
        if args.broker_pid:
            pids["broker"] = args.broker_pid
        before, start_load = {n: cpu_s(p) for n, p in pids.items()}, load()
        daemons = [p for n, p in pids.items() if n.startswith("node-")]
        children = children_cpu_s(daemons)
        counts = activity(daemons)
        batches: tuple[float, ...] = shard_batches(env["SLUICE_WORKER_METRICS"])
        started = time.monotonic()
        for first in range(0, args.jobs, ARRAY_MAX):  # ids below MaxArraySize (1001)
            count = min(ARRAY_MAX, args.jobs - first)
            subprocess.run([SLUICE, "submit", "--uid", "nobody", "-D", "/tmp", "-o",
                            "/dev/null", f"--array=0-{count - 1}", "--", "true"], env=env,
                           check=True, stdout=subprocess.DEVNULL)
        done, progress = 0, time.monotonic()
        while done < args.jobs and time.monotonic() - started < args.timeout:
            time.sleep(0.2)
            now_done = ended(api)
            if now_done > done:
                done, progress = now_done, time.monotonic()
            elif time.monotonic() - progress > args.stall:
                print(f"stalled: no job ended for {args.stall:.0f} s; counting to the last end")
                break
        elapsed = progress - started
        used = {n: cpu_s(p) - before[n] for n, p in pids.items()}
        reaped = children_cpu_s(daemons) - children
        counted = [after - before for after, before in zip(activity(daemons), counts,
                                                            strict=True)]
        batches = tuple(after - before for after, before in zip(
            shard_batches(env["SLUICE_WORKER_METRICS"]), batches, strict=True))
    finally:
        subprocess.run([SLUICE, "down"], env=env, check=False, stdout=subprocess.DEVNULL)
    print(f"{done} of {args.jobs} jobs ended in {elapsed:.1f} s: {done / elapsed:.1f} jobs/s "
          f"(load {start_load} -> {load()})")
    _report(used, reaped, done)
    _report_counts(counted, batches, done)


def _report_counts(counted: list[int], batches: tuple[float, ...], done: int) -> None:
    """The daemons' wake-ups and system calls, and the shard's batches, per job ended."""
    per_job = [count / max(done, 1) for count in counted]
    print(f"  daemons a job: {per_job[0]:.1f} wake-ups, {per_job[1]:.1f} read and "
          f"{per_job[2]:.1f} write system calls (their threads' voluntary context switches, "
          "/proc/PID/io)")
    count, records, transactions = batches
    print(f"  shard batches: {count:.0f} ({count / max(done, 1):.2f} a job), "
          f"{records / max(count, 1):.1f} inbox records a batch; {transactions:.0f} "
          f"transactions ({transactions / max(done, 1):.2f} a job)")


def _report(used: dict[str, float], reaped: float, done: int) -> None:
    """CPU seconds by process class, and per job ended."""
    nodes = [n for n in used if n.startswith("node-")]
    classes = [(f"{len(nodes)} node daemons", sum(used.get(n, 0.0) for n in nodes)),
               ("worker", used.get("worker", 0.0)), ("views", used.get("projections", 0.0)),
               ("runs (supervisors)", reaped)]
    if "broker" in used:
        classes.append(("broker", used["broker"]))
    for label, seconds in classes:
        print(f"  {label:18} {seconds:7.1f} CPU s {1000 * seconds / max(done, 1):6.1f} ms a job")
    total = sum(seconds for _label, seconds in classes)
    print(f"  {'all of them':18} {total:7.1f} CPU s {1000 * total / max(done, 1):6.1f} ms a job")


if __name__ == "__main__":
    main()
