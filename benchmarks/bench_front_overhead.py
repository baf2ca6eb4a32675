"""CPU a served call costs, front against front: this tree's against a baseline tree's.

    python benchmarks/bench_front_overhead.py --base /tmp/NAME-base --calls 400

Builds each tree's front (``cli/shim/sluice_front.c``, by its own ``cli.front_build``) into a
throw-away virtualenv skeleton (as ``tests/front_venv.py``), starts its command server, then
alternates calls one by one (``sluice submit --bogus``: argparse's refusal, no system needed,
so the figure is the front, the protocol and the child, not a broker) and prints for each tree
the CPU per call: the front's own (this process's children), the server's children's (reaped:
``cutime + cstime`` of the server) and the server's own (``utime + stime``), with the load average.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_TICK = os.sysconf("SC_CLK_TCK")


def skeleton(tree: Path, where: Path) -> Path:
    """A virtualenv skeleton under ``where`` whose ``bin/sluice`` is ``tree``'s front."""
    venv = where / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(sys.executable)
    (venv / "lib").symlink_to(Path(sys.prefix) / "lib")
    shutil.copy(Path(sys.prefix) / "pyvenv.cfg", venv / "pyvenv.cfg")
    # built as the tree's own ``make install`` builds it (its flags, its link)
    subprocess.run([sys.executable, "-m", "cli.front_build", str(venv / "bin" / "sluice")],
                   cwd=tree, env={**os.environ, "PYTHONPATH": str(tree)}, check=True)
    return venv / "bin" / "sluice"


def _server(run_dir: Path) -> int:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                words = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"cli.command_server" in words and any(
                    w.startswith(str(run_dir).encode()) for w in words):
                status = (entry / "status").read_text()
                ppid = int(next(x for x in status.splitlines() if x.startswith("PPid:")).split()[1])
                if ppid == 1 or b"cli.command_server" not in Path(
                        f"/proc/{ppid}/cmdline").read_bytes():
                    return int(entry.name)
    raise RuntimeError("no server")


def _ticks(pid: int) -> tuple[int, int]:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12]), int(fields[13]) + int(fields[14])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", type=Path, required=True, help="the baseline tree")
    parser.add_argument("--calls", type=int, default=400)
    args = parser.parse_args()
    here = Path(__file__).resolve().parents[1]
    trees = {"this tree": here, "baseline": args.base.resolve()}
    work = Path(tempfile.mkdtemp(prefix="front-bench-"))
    fronts = {}
    try:
        for name, tree in trees.items():
            run_dir = work / name.replace(" ", "-") / "run"
            run_dir.mkdir(parents=True, mode=0o700)
            program = skeleton(tree, run_dir.parent)
            env = {**{k: v for k, v in os.environ.items()
                      if not k.startswith(("SLUICE_", "SLURM_", "KAFKA_"))},
                   "XDG_RUNTIME_DIR": str(run_dir), "PYTHONPATH": str(tree)}
            for _ in range(50):  # the first call starts the server
                subprocess.run([str(program), "submit", "--bogus"], env=env,
                               capture_output=True, check=False)
                time.sleep(0.1)
                try:
                    server = _server(run_dir)
                    break
                except RuntimeError:
                    continue
            fronts[name] = (program, env, server, [0.0, 0.0, 0.0])
        load = os.getloadavg()
        for _ in range(args.calls):
            for program, env, server, cpu in fronts.values():
                before_self = resource.getrusage(resource.RUSAGE_CHILDREN)
                own0, kids0 = _ticks(server)
                done = subprocess.run([str(program), "submit", "--bogus"], env=env,
                                      capture_output=True, check=False)
                assert done.returncode == 2, done.stderr
                time.sleep(0.005)  # the server reaps the child at its next accept
                after_self = resource.getrusage(resource.RUSAGE_CHILDREN)
                own1, kids1 = _ticks(server)
                cpu[0] += (after_self.ru_utime + after_self.ru_stime
                           - before_self.ru_utime - before_self.ru_stime)
                cpu[1] += (kids1 - kids0) / _TICK
                cpu[2] += (own1 - own0) / _TICK
        print(f"{args.calls} calls each, alternated; load before {load[0]:.2f} "
              f"{load[1]:.2f} {load[2]:.2f}, after {os.getloadavg()[0]:.2f}")
        for name, (_, _, _, cpu) in fronts.items():
            front, child, server = (1000 * c / args.calls for c in cpu)
            print(f"{name:10} front {front:.2f} ms, server's children {child:.2f} ms, "
                  f"server {server:.2f} ms, total {front + child + server:.2f} ms a call")
    finally:
        for _, _, server, _ in fronts.values():
            with contextlib.suppress(ProcessLookupError):
                os.kill(server, 15)
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
