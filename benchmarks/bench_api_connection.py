"""The views' API server's CPU per connection (``GET /v1/status``, one request a connection).

    .venv/bin/python benchmarks/bench_api_connection.py TREE [TREE...] [--requests 3000]
                                                        [--repeat 5]

Starts an ``ApiServer`` of each TREE (a checkout; ``PYTHONPATH`` set to it) in a process of its
own, warms it with 200 connections, then opens ``--requests`` connections one after the other
and reads the server process's CPU time (``/proc/PID/stat``) around them. Trees are run in
turn, ``--repeat`` rounds, interleaved (A/B on a shared machine). Prints each run's figure with
the machine's load and the medians; asserts nothing. Written for the per-peer share of the
connections (``projections/peer_uid.py``: one ``sock_diag`` lookup a connection).
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

_SERVER = """
import sys, tempfile, time
sys.path.insert(0, {tree!r})
from pathlib import Path
from projections.http import ApiServer
from projections.service import ProjectionService
from streams.settings import Settings
home = Path(tempfile.mkdtemp(prefix='bench-api-'))
server = ApiServer(ProjectionService(Settings(home=home)), '127.0.0.1', 0)
server.start()
print(server.port, flush=True)
time.sleep(3600)
"""
_REQUEST = b"GET /v1/status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _ask(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port)) as conn:
        conn.sendall(_REQUEST)
        while conn.recv(65536):
            pass


def run(tree: str, requests: int) -> tuple[float, float]:
    """Server CPU (µs) and wall time (ms) per connection for ``tree``."""
    env = {**os.environ, "PYTHONPATH": tree}
    server = subprocess.Popen([sys.executable, "-c", _SERVER.format(tree=tree)], cwd="/tmp",
                              env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        for _ in range(200):
            _ask(port)
        cpu, wall = _cpu_s(server.pid), time.monotonic()
        for _ in range(requests):
            _ask(port)
        return ((_cpu_s(server.pid) - cpu) / requests * 1e6,
                (time.monotonic() - wall) / requests * 1e3)
    finally:
        server.kill()
        server.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+")
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    figures: dict[str, list[float]] = {tree: [] for tree in args.trees}
    for _ in range(args.repeat):
        for tree in args.trees:
            cpu_us, wall_ms = run(tree, args.requests)
            figures[tree].append(cpu_us)
            print(f"{tree}: {cpu_us:.0f} µs server CPU a connection, {wall_ms:.2f} ms wall, "
                  f"load {os.getloadavg()[0]:.2f}", flush=True)
    for tree, values in figures.items():
        print(f"{tree}: median {statistics.median(values):.0f} µs over {len(values)} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
