"""``sluice up`` and ``sluice down``: the whole system on one machine, and its end.

``up`` uses the broker at ``KAFKA_BOOTSTRAP`` if one answers there, otherwise starts a local
single-node KRaft broker from the Maven Central jars (``infra.kafka``); then it creates the
topics and starts the worker, the projections and N node daemons as background processes.
Their PIDs go to ``$SLUICE_HOME/run/*.pid`` and their logs to ``$SLUICE_HOME/logs/``. ``down``
stops exactly those PIDs (SIGTERM, then SIGKILL), node daemons first, and the broker only if
``up`` started it.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from cli.client import ApiError, Client
from streams.admin import wait_for_broker
from streams.settings import Settings, system_file_path

__all__ = ["add_parsers", "start_process", "stop_process"]

_MARKER = "cli.main"


def add_parsers(sub: Any) -> None:
    """Register up and down."""
    u = sub.add_parser("up", help="start the whole system (broker if needed, worker, views, nodes)")
    u.add_argument("--nodes", type=int, default=4, help="local node daemons to start")
    u.add_argument("--cpus", type=int, default=4, help="CPUs per local node")
    u.add_argument("--mem", type=int, default=8192, help="MB per local node")
    u.add_argument("--gpus", type=int, default=0, help="GPUs per local node")
    u.add_argument("--timeout", type=float, default=180.0)
    u.set_defaults(run=_up)
    d = sub.add_parser("down", help="stop everything sluice up started")
    d.set_defaults(run=_down)


def _run_dir(settings: Settings) -> Path:
    path = settings.home / "run"
    path.mkdir(parents=True, exist_ok=True)
    return path


def start_process(
    settings: Settings, name: str, argv: list[str], env: dict[str, str] | None = None
) -> int:
    """Start ``python -m cli.main ARGV`` in the background, logging to ``logs/NAME.log``."""
    logs = settings.home / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **settings.as_env(), **(env or {})}
    with (logs / f"{name}.log").open("ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", _MARKER, *argv], stdout=log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, env=env, start_new_session=True,
        )
    (_run_dir(settings) / f"{name}.pid").write_text(f"{process.pid}\n")
    return process.pid


def _alive(pid: int) -> bool:
    """Is ``pid`` a live process of ours? A zombie is not; a process whose command line is
    empty is still being exec'ed (or is not readable yet) and counts as alive."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    if stat.rsplit(")", 1)[-1].split()[0] in {"Z", "X"}:
        return False
    return not cmdline or _MARKER.encode() in cmdline


def stop_process(pid_file: Path, wait_s: float = 15.0) -> bool:
    """SIGTERM the process in ``pid_file`` (if it is still ours), then SIGKILL; remove the file."""
    try:
        pid = int(pid_file.read_text().strip())
    except (OSError, ValueError):
        pid_file.unlink(missing_ok=True)
        return False
    stopped = False
    if _alive(pid):
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + wait_s
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
        stopped = True
    pid_file.unlink(missing_ok=True)
    return stopped


def _broker(settings: Settings, explicit: bool) -> tuple[str, bool]:
    """The bootstrap to use and whether ``up`` started it."""
    try:
        wait_for_broker(settings.bootstrap, timeout_s=3 if not explicit else 30,
                        quiet=not explicit)
        return settings.bootstrap, False
    except TimeoutError:
        if explicit:
            raise
    from infra.kafka import LocalKafka

    print("no broker answers; starting a local Kafka (KRaft) from the Maven Central jars …")
    kafka = LocalKafka.start(settings.home / "kafka")
    return kafka.bootstrap, True


def _up(args: argparse.Namespace, settings: Settings) -> int:
    explicit = "KAFKA_BOOTSTRAP" in os.environ
    bootstrap, started = _broker(settings, explicit)
    settings = settings.with_(bootstrap=bootstrap)
    _run_dir(settings)
    system_file_path(settings.home).write_text(
        json.dumps({"bootstrap": bootstrap, "started_kafka": started}) + "\n"
    )
    from cli.services import prepare_topics

    prepare_topics(settings)
    run = _run_dir(settings)
    if not (run / "worker.pid").exists() or not _alive(int((run / "worker.pid").read_text())):
        start_process(settings, "worker", ["worker"], env={
            "SLUICE_WORKER_METRICS": os.environ.get("SLUICE_WORKER_METRICS", "127.0.0.1:9108")})
    if not (run / "projections.pid").exists() or not _alive(
            int((run / "projections.pid").read_text())):
        start_process(settings, "projections", ["projections"])
    for i in range(1, args.nodes + 1):
        name = f"node{i:02d}"
        pid_file = run / f"node-{name}.pid"
        if pid_file.exists() and _alive(int(pid_file.read_text())):
            continue
        start_process(settings, f"node-{name}", [
            "node", "--name", name, "--cpus", str(args.cpus), "--mem", str(args.mem),
            "--gpus", str(args.gpus),
        ])
    return _wait_ready(settings, args.nodes, args.timeout)


def _wait_ready(settings: Settings, nodes: int, timeout_s: float) -> int:
    client = Client(settings)
    deadline = time.monotonic() + timeout_s
    idle = 0
    run = _run_dir(settings)
    while time.monotonic() < deadline:
        dead = [p.stem for p in sorted(run.glob("*.pid")) if not _alive(int(p.read_text()))]
        if dead:
            print(f"sluice up: {', '.join(dead)} exited; see {settings.home}/logs",
                  file=sys.stderr)
            return 1
        try:
            answer = client.get("/v1/nodes")
            idle = sum(1 for n in answer["nodes"] if n["state"] in {"IDLE", "MIXED", "ALLOCATED"})
            if idle >= nodes:
                print(f"Sluice is up: broker {settings.bootstrap}, {idle} nodes, "
                      f"views at http://{settings.api}/v1/jobs, logs in {settings.home}/logs")
                return 0
        except ApiError:
            pass
        time.sleep(0.5)
    print(f"sluice up: only {idle} of {nodes} nodes came up within {timeout_s:.0f} s; "
          f"see {settings.home}/logs", file=sys.stderr)
    return 1


def _down(args: argparse.Namespace, settings: Settings) -> int:
    run = _run_dir(settings)
    order = [*sorted(run.glob("node-*.pid")), run / "projections.pid", run / "worker.pid"]
    for pid_file in order:
        if pid_file.exists() and stop_process(pid_file):
            print(f"stopped {pid_file.stem}")
    system = system_file_path(settings.home)
    started = False
    if system.exists():
        started = bool(json.loads(system.read_text()).get("started_kafka"))
        system.unlink()
    if started:
        from infra.kafka import stop

        if stop(settings.home / "kafka"):
            print("stopped the local Kafka broker")
    return 0
