"""``sluice up``'s last step: wait until every process it started is alive and ready, or say
which one failed and show the end of its log."""

from __future__ import annotations

import socket
import sys
import time
from pathlib import Path

from cli.client import ApiError, Client
from cli.system import pid_alive, run_dir
from streams.settings import Settings

__all__ = ["wait_ready"]


def _kept_node_sluid(settings: Settings, name: str, since_ms: int) -> str:
    """The SLUID a node daemon kept from an earlier run (its ``node.sluid``, older than this
    ``up``), or ""."""
    path = settings.home / "nodes" / name / "node.sluid"
    try:
        if path.stat().st_mtime * 1000 >= since_ms - 2000:
            return ""
        return path.read_text().strip()
    except OSError:
        return ""


def _log_tail(settings: Settings, name: str, lines: int = 8) -> str:
    path = settings.home / "logs" / f"{name}.log"
    try:
        text = path.read_text(errors="replace").splitlines()[-lines:]
    except OSError:
        return f"    (no log at {path})"
    return "\n".join(f"    {line}" for line in text)


def _report_dead(settings: Settings, dead: list[str]) -> None:
    for name in dead:
        print(f"sluice up: {name} exited; the last lines of {settings.home}/logs/{name}.log:\n"
              f"{_log_tail(settings, name)}", file=sys.stderr)


def _stopped(run: Path) -> list[tuple[str, int]]:
    """The processes of ours (pid files in ``run``) that are stopped (``T`` in
    ``/proc/PID/stat``: SIGSTOP, SIGTSTP), as (name, pid). Such a process answers nothing until
    it is continued: ``up`` would wait its whole timeout for it (a node daemon never comes back
    into service), so it says so at once instead."""
    found = []
    for pid_file in sorted(run.glob("*.pid")):
        try:
            pid = int(pid_file.read_text().strip())
            stat = Path(f"/proc/{pid}/stat").read_text()
        except (OSError, ValueError):
            continue
        if stat.rsplit(")", 1)[-1].split()[0] == "T" and pid_alive(pid_file):
            found.append((pid_file.stem, pid))
    return found


def _report_stopped(settings: Settings, stopped: list[tuple[str, int]]) -> None:
    for name, pid in stopped:
        print(f"sluice up: {name} (pid {pid}) is stopped (state T: SIGSTOP or SIGTSTP) and "
              f"answers nothing until continued: `kill -CONT {pid}`, or `sluice down` and up "
              f"again; its log is {settings.home}/logs/{name}.log", file=sys.stderr)


def _metrics_answer(address: str) -> bool:
    if not address:
        return True
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=0.5):
            return True
    except OSError:
        return False


def wait_ready(
    settings: Settings, nodes: int, timeout_s: float, started_nodes: set[str],
    since_ms: int, metrics: str,
) -> int:
    """Wait until every process is alive and ready: the worker's metrics answer, the views
    answer, and every node is in service, registered anew if this ``up`` started it (views kept
    from an earlier run do not count, unless the node came back under the SLUID it kept). Then
    check once more that nothing exited meanwhile. A process of ours that is stopped (SIGSTOP)
    is named at once: it would answer nothing within the timeout."""
    client = Client(settings)
    deadline = time.monotonic() + timeout_s
    ready: list[str] = []
    rows: dict[str, dict[str, object]] = {}
    run = run_dir(settings)
    # A daemon restarted on its old state directory registers again under the SLUID it kept;
    # an unchanged registration is no new fact (the shard knew the node), so its row counts
    # when its SLUID is that one (its process is alive: checked below).
    kept = {sluid for name in started_nodes
            if (sluid := _kept_node_sluid(settings, name, since_ms))}
    while time.monotonic() < deadline:
        dead = [p.stem for p in sorted(run.glob("*.pid")) if not pid_alive(p)]
        if dead:
            _report_dead(settings, dead)
            return 1
        stopped = _stopped(run)
        if stopped:
            _report_stopped(settings, stopped)
            return 1
        try:
            answer = client.get("/v1/nodes")
            rows = {str(n["name"]): n for n in answer["nodes"]}
            ready = sorted(
                n["name"] for n in answer["nodes"]
                if n["state"] in {"IDLE", "MIXED", "ALLOCATED"}
                and (n["name"] not in started_nodes or n.get("registered_ms", 0) >= since_ms - 2000
                     or n.get("node_sluid") in kept)
            )
        except ApiError:
            ready = []
        if len(ready) >= nodes and _metrics_answer(metrics):
            time.sleep(0.5)
            dead = [p.stem for p in sorted(run.glob("*.pid")) if not pid_alive(p)]
            if dead:
                _report_dead(settings, dead)
                return 1
            print(f"Sluice is up: broker {settings.bootstrap}, {len(ready)} nodes, "
                  f"views at http://{settings.api}/v1/jobs, logs in {settings.home}/logs")
            return 0
        time.sleep(0.3)
    waiting = [f"node{i:02d}" for i in range(1, nodes + 1) if f"node{i:02d}" not in ready]
    print(f"sluice up: not ready within {timeout_s:.0f} s: "
          f"{len(ready)} of {nodes} nodes in service (waiting for {', '.join(waiting)})"
          + ("" if _metrics_answer(metrics) else f"; the worker's metrics at {metrics} "
             "do not answer") + f"; see {settings.home}/logs", file=sys.stderr)
    for name in waiting[:_NODES_SHOWN]:
        print(f"sluice up: {name}: {_seen_as(rows.get(name), name in started_nodes, since_ms)}; "
              f"the last lines of its log:\n{_log_tail(settings, f'node-{name}')}", file=sys.stderr)
    return 1


_NODES_SHOWN = 3
"""Waiting nodes whose state and log ``sluice up`` shows when it gives up."""


def _seen_as(row: dict[str, object] | None, started: bool, since_ms: int) -> str:
    """What the views know of a node that is not in service, in a few words."""
    if row is None:
        return "the views have no registration of it"
    state, reason = str(row.get("state", "UNKNOWN")), str(row.get("reason", "") or "")
    if state in {"IDLE", "MIXED", "ALLOCATED"} and started:
        registered = row.get("registered_ms", 0)
        return f"in service, but registered before this start ({registered} < {since_ms})"
    return f"{state}" + (f" ({reason})" if reason else "")
