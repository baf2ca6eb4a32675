"""The CPU a ``sluice submit`` call costs in every process on its path, and the calls' rate.

    sluice up                     # each tree its own system (SLUICE_* settings), same broker
    python benchmarks/bench_submit_cpu.py --calls 1000 --clients 1 --clients 4 \\
        --tree this --tree base:/tmp/NAME-base:/tmp/NAME-base.env

For each ``--tree NAME[:DIR[:ENVFILE]]`` (``DIR`` becomes ``PYTHONPATH``; ``ENVFILE`` holds
``NAME=VALUE`` lines that point the calls at that tree's system: ``SLUICE_TOPIC_PREFIX``,
``SLUICE_HOME``, ``SLUICE_API``), and for each ``--clients K``, ``--calls`` calls of
``sluice submit -H -- true`` (held jobs, as ``slurm_beside.py`` times sbatch) through the
installed ``sluice`` (with ``--own-fronts``: each tree's own front, built as its ``make
install`` builds it) and its command server from K concurrent clients; the trees
take turns, phase by phase (``--rounds`` times), so both see the same load. Around each phase
it reads the CPU time (user + system, ``/proc/PID/stat`` and each thread's) of:

- the fronts (this process's reaped children);
- the command server itself, and its children (the calls, reaped by it: ``cutime + cstime``);
- the views (the relay and the fold), the worker thread by thread (the intake, the shard, the
  faust loop...), the node daemons (the tree's ``$SLUICE_HOME/run/*.pid``);
- the broker (``--broker-pid``, shared by the trees: the phases never overlap);

and prints each one's CPU per call in ms, the calls' rate and the load average. Every call must
print "Submitted batch job"; the held jobs are cancelled after each phase (not measured).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

SLUICE = str(Path(sys.executable).with_name("sluice"))
_TICK = os.sysconf("SC_CLK_TCK")


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _stat(path: str) -> list[str]:
    return Path(path).read_text().rsplit(")", 1)[1].split()


def _cpu(pid: int, children: bool = False) -> float:
    """Seconds of CPU of ``pid`` (with ``children``: of its reaped children only)."""
    try:
        f = _stat(f"/proc/{pid}/stat")
    except OSError:
        return 0.0
    first = 13 if children else 11
    return (int(f[first]) + int(f[first + 1])) / _TICK


def _child_faults(pid: int) -> float:
    """Minor page faults of ``pid``'s reaped children (copy-on-write after a fork among them)."""
    try:
        return float(_stat(f"/proc/{pid}/stat")[8])
    except OSError:
        return 0.0


def _threads(pid: int) -> dict[str, float]:
    """CPU seconds by thread name (threads of one name summed)."""
    out: dict[str, float] = {}
    try:
        tids = [p.name for p in Path(f"/proc/{pid}/task").iterdir()]
    except OSError:
        return out
    for tid in tids:
        try:
            name = Path(f"/proc/{pid}/task/{tid}/comm").read_text().strip()
            f = _stat(f"/proc/{pid}/task/{tid}/stat")
        except OSError:
            continue
        out[name] = out.get(name, 0.0) + (int(f[11]) + int(f[12])) / _TICK
    return out


def _server(tree: str, python: str) -> int:
    """The command server of interpreter ``python`` serving ``tree`` (its ``PYTHONPATH``); 0
    when none."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            words = (entry / "cmdline").read_bytes().split(b"\0")
            env = (entry / "environ").read_bytes().split(b"\0")
            status = (entry / "status").read_text()
        except OSError:
            continue
        if b"cli.command_server" not in words or f"PYTHONPATH={tree}".encode() not in env \
                or words[0] != python.encode():
            continue
        ppid = int(next(x for x in status.splitlines() if x.startswith("PPid:")).split()[1])
        try:
            parent = Path(f"/proc/{ppid}/cmdline").read_bytes()
        except OSError:
            parent = b""
        if b"cli.command_server" not in parent:
            return int(entry.name)
    return 0


class Tree:
    def __init__(self, spec: str) -> None:
        name, _, rest = spec.partition(":")
        directory, _, env_file = rest.partition(":")
        self.name = name
        self.dir = str(Path(directory or Path(__file__).resolve().parents[1]).resolve())
        self.env = dict(os.environ)
        if env_file:
            for line in Path(env_file).read_text().splitlines():
                key, sep, value = line.strip().partition("=")
                if sep and not key.startswith("#"):
                    self.env[key.removeprefix("export ")] = value
        self.env["PYTHONPATH"] = self.dir
        self.env.pop("SLUICE_COMMAND_SERVER", None)
        self.home = Path(self.env["SLUICE_HOME"])
        self.program = SLUICE

    def own_front(self, where: Path) -> None:
        """Call through this tree's own front, built as its ``make install`` would."""
        from bench_front_overhead import skeleton

        self.program = str(skeleton(Path(self.dir), where / self.name))

    def pids(self) -> dict[str, int]:
        run = self.home / "run"
        return {p.stem: int(p.read_text()) for p in sorted(run.glob("*.pid"))}

    def call(self, argv: list[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run([self.program, *argv], env=self.env, capture_output=True, text=True,
                              check=False)


def snapshot(tree: Tree, broker: int) -> dict[str, float]:
    snap: dict[str, float] = {}
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    snap["front"] = used.ru_utime + used.ru_stime
    server = _server(tree.dir, str(Path(tree.program).with_name("python")))
    snap["server"] = _cpu(server) if server else 0.0
    snap["server's children"] = _cpu(server, children=True) if server else 0.0
    snap["#faults"] = _child_faults(server) if server else 0.0
    for name, pid in tree.pids().items():
        if name in {"worker", "projections"}:
            for thread, cpu in _threads(pid).items():
                snap[f"{'views' if name == 'projections' else name}/{thread}"] = cpu
        else:
            key = "node daemons" if name.startswith("node-") else name
            snap[key] = snap.get(key, 0.0) + _cpu(pid)
    if broker:
        snap["broker"] = _cpu(broker)
    return snap


def one(tree: Tree) -> float:
    start = time.perf_counter()
    done = tree.call(["submit", "-H", "--", "true"])
    elapsed = time.perf_counter() - start
    if done.returncode != 0 or "Submitted batch job" not in done.stdout:
        raise SystemExit(f"{tree.name}: call failed ({done.returncode}): {done.stdout} "
                         f"{done.stderr}")
    return elapsed


def phase(tree: Tree, calls: int, k: int, broker: int) -> None:
    before_load = load()
    before = snapshot(tree, broker)
    start = time.perf_counter()
    with ThreadPoolExecutor(k) as pool:
        walls = sorted(pool.map(lambda _i: one(tree), range(calls)))
    elapsed = time.perf_counter() - start
    time.sleep(1.0)  # the last calls' folds and the server's reaping
    after = snapshot(tree, broker)
    faults = (after.pop("#faults") - before.pop("#faults")) / calls
    per = {key: 1e3 * (after.get(key, 0.0) - before.get(key, 0.0)) / calls
           for key in after}
    groups: dict[str, float] = {}
    for key, ms in per.items():
        group = key.split("/")[0]
        groups[group] = groups.get(group, 0.0) + ms
    total = sum(groups.values())
    print(f"== {tree.name}: {calls} calls from {k} client(s): {calls / elapsed:.1f} calls/s, "
          f"wall p50 {1e3 * statistics.median(walls):.1f} ms, p90 "
          f"{1e3 * walls[int(0.9 * len(walls))]:.1f} ms; CPU a call {total:.2f} ms "
          f"(load {before_load} -> {load()})")
    for group, ms in sorted(groups.items(), key=lambda x: -x[1]):
        threads = sorted(((k2.split("/", 1)[1], v) for k2, v in per.items()
                          if k2.startswith(group + "/") and v >= 0.05), key=lambda x: -x[1])
        detail = ", ".join(f"{t} {v:.2f}" for t, v in threads)
        if group == "server's children":
            detail = f"{faults:.0f} minor page faults a call"
        print(f"   {group:20} {ms:6.2f} ms" + (f"  ({detail})" if detail else ""))
    sys.stdout.flush()


def cancel_held(tree: Tree) -> None:
    tree.call(["cancel", "--me", "--state", "PENDING"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--clients", type=int, action="append", default=[])
    parser.add_argument("--tree", action="append", default=[],
                        help="NAME[:DIR[:ENVFILE]] (repeat; the trees take turns)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--broker-pid", type=int, default=0)
    parser.add_argument("--no-cancel", action="store_true")
    parser.add_argument("--own-fronts", action="store_true",
                        help="each tree's own front (built into a virtualenv skeleton), not "
                        "the installed sluice")
    args = parser.parse_args()
    trees = [Tree(spec) for spec in args.tree or ["this"]]
    if args.own_fronts:
        where = Path(tempfile.mkdtemp(prefix="submit-cpu-"))
        for tree in trees:
            tree.own_front(where)
    print(f"{os.cpu_count()} CPUs; load {load()}; sluice: {SLUICE}")
    for tree in trees:  # the first call starts the tree's command server
        one(tree)
        time.sleep(2.5)
        one(tree)
    for _ in range(args.rounds):
        for k in args.clients or [1, 4]:
            for tree in trees:
                phase(tree, args.calls, k, args.broker_pid)
                if not args.no_cancel:
                    cancel_held(tree)


if __name__ == "__main__":
    main()
