"""Slurm's sbatch beside ``sluice submit`` on this machine (issue 17, item 1: "at least as fast
as sbatch on the same machine").

    sluice up                                   # with the SLUICE_* settings inherited here
    .venv/bin/python benchmarks/slurm_beside.py --sequential 100 --calls 1000

Starts a Slurm 22.05 controller of its own (Debian's ``slurmctld``, ``slurmd`` and
``slurm-client``: ``apt-get install slurmctld slurmd slurm-client``) in a temporary directory:
its own munged (own key and socket), ``slurmctld -D`` and one ``slurmd -D`` for this host, on
ports of its own. Then it times, with the load average beside each phase:

1. ``--sequential`` calls, alternated one by one: ``sbatch -H --wrap true`` (held, as the
   issue's 558/s figure), ``sluice submit -H -- true`` through the installed ``sluice`` (the
   front, when built) and the same with ``SLUICE_COMMAND_SERVER=off`` (the Python CLI):
   p50 / p90 wall time a call, process start to exit;
2. ``--calls`` calls of each from 1 and from 4 concurrent clients: calls per second.

Every call must succeed (an sbatch that prints no job id, a sluice call that prints no
"Submitted batch job", stops the benchmark). The Slurm side is stopped and removed at the end.
Held jobs are cancelled on both sides afterwards (``scancel``, ``sluice cancel``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

SLUICE = str(Path(sys.executable).with_name("sluice"))


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Slurm:
    """A one-host Slurm of its own under ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.procs: list[subprocess.Popen[bytes]] = []
        self.conf = root / "slurm.conf"
        self.socket = root / "munge.socket"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}

    def start(self) -> None:
        for sub in ("state", "spool", "log"):
            (self.root / sub).mkdir()
        key = self.root / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        subprocess.run(["munged", f"--socket={self.socket}", f"--key-file={key}",
                        f"--pid-file={self.root / 'munged.pid'}",
                        f"--log-file={self.root / 'log' / 'munged.log'}",
                        f"--seed-file={self.root / 'munged.seed'}", "--force"], check=True)
        host = socket.gethostname()
        cpus = os.cpu_count() or 1
        self.conf.write_text("\n".join([
            "ClusterName=beside", f"SlurmctldHost={host}", "SlurmUser=root",
            "SlurmdUser=root", f"SlurmctldPort={free_port()}", f"SlurmdPort={free_port()}",
            "AuthType=auth/munge", f"AuthInfo=socket={self.socket}",
            "CredType=cred/munge", f"StateSaveLocation={self.root / 'state'}",
            f"SlurmdSpoolDir={self.root / 'spool'}",
            f"SlurmctldPidFile={self.root / 'slurmctld.pid'}",
            f"SlurmdPidFile={self.root / 'slurmd.pid'}",
            f"SlurmctldLogFile={self.root / 'log' / 'slurmctld.log'}",
            f"SlurmdLogFile={self.root / 'log' / 'slurmd.log'}",
            "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",
            "SchedulerType=sched/backfill", "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core", "MpiDefault=none", "ReturnToService=2",
            "JobCompType=jobcomp/none", "AccountingStorageType=accounting_storage/none",
            "SwitchType=switch/none", "MaxJobCount=100000",
            f"NodeName={host} CPUs={cpus} State=UNKNOWN",
            f"PartitionName=main Nodes={host} Default=YES MaxTime=INFINITE State=UP", ""]))
        for daemon in ("slurmctld", "slurmd"):
            self.procs.append(subprocess.Popen(
                [daemon, "-D", "-f", str(self.conf)], env=self.env,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            done = subprocess.run(["sinfo", "-h", "-o", "%T"], env=self.env,
                                  capture_output=True, text=True, check=False)
            if done.returncode == 0 and done.stdout.strip() in ("idle", "mixed", "allocated"):
                return
            time.sleep(0.5)
        raise SystemExit(f"Slurm did not come up: {done.stdout} {done.stderr}")

    def stop(self) -> None:
        subprocess.run(["scancel", "--quiet", "-u", "root"], env=self.env, check=False,
                       capture_output=True)
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(20)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
        pid = self.root / "munged.pid"
        if pid.exists():
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid.read_text()), signal.SIGTERM)


def call(kind: str, slurm: Slurm) -> float:
    """One call's wall time; the call must have submitted its job."""
    if kind == "sbatch":
        argv, env, mark = ["sbatch", "-H", "--wrap", "true"], slurm.env, "Submitted batch job"
    else:
        argv, mark = [SLUICE, "submit", "-H", "--", "true"], "Submitted batch job"
        env = {**os.environ, **({"SLUICE_COMMAND_SERVER": "off"} if kind == "python" else {})}
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0 or mark not in done.stdout:
        raise SystemExit(f"{kind} failed ({done.returncode}): {done.stdout} {done.stderr}")
    return elapsed


KINDS = ("sbatch", "front", "python")
NAMES = {"sbatch": "Slurm's sbatch", "front": "sluice submit (installed sluice)",
         "python": "sluice submit, Python CLI"}


def sequential(n: int, slurm: Slurm) -> None:
    before = load()
    times: dict[str, list[float]] = {k: [] for k in KINDS}
    for _ in range(n):
        for kind in KINDS:
            times[kind].append(call(kind, slurm))
    after = load()
    for kind in KINDS:
        values = sorted(times[kind])
        print(f"{n} sequential calls, {NAMES[kind]}: p50 {1e3 * statistics.median(values):.1f} "
              f"ms, p90 {1e3 * values[int(0.9 * len(values))]:.1f} ms "
              f"(load {before} -> {after})")


def clients(n: int, k: int, kind: str, slurm: Slurm) -> None:
    before = load()
    start = time.perf_counter()
    with ThreadPoolExecutor(k) as pool:
        list(pool.map(lambda _i: call(kind, slurm), range(n)))
    elapsed = time.perf_counter() - start
    print(f"{n} calls from {k} client(s), {NAMES[kind]}: {n / elapsed:.1f} calls/s "
          f"(load {before} -> {load()})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sequential", type=int, default=100)
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--python-calls", type=int, default=200,
                        help="calls of the Python CLI in phase 2 (it is the slow one)")
    args = parser.parse_args()
    for tool in ("slurmctld", "slurmd", "sbatch", "munged"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} not found: apt-get install slurmctld slurmd slurm-client "
                             "munge")
    print(f"{os.cpu_count()} CPUs; load average {load()}; sluice: {SLUICE}")
    with tempfile.TemporaryDirectory(prefix="slurm-beside-", ignore_cleanup_errors=True) as tmp:
        slurm = Slurm(Path(tmp))
        try:
            slurm.start()
            call("front", slurm)  # the front's first call starts its command server
            time.sleep(3)
            if args.sequential:
                sequential(args.sequential, slurm)
            for k in (1, 4):
                for kind in KINDS:
                    n = args.python_calls if kind == "python" else args.calls
                    if n:
                        clients(n, k, kind, slurm)
        finally:
            slurm.stop()


if __name__ == "__main__":
    main()
