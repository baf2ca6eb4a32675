"""A whole Sluice system for one test: its own topics, state directory, API port and processes.

The processes are the real ones (``python -m cli.main worker|projections|node``) against the
real broker of the session fixture; the harness only starts, kills and stops them.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agents.auth.node_keys import command_key_paths, ensure_keys, env_key_paths
from cli.client import ApiError, Client
from cli.services import prepare_topics
from streams.settings import Settings

_ERROR_LINE = re.compile(
    r"Traceback \(most recent call last\)|\[(ERROR|CRITICAL)\]| ERROR | CRITICAL ")
"""A log line that starts an error worth showing when a process died."""

__all__ = ["LocalSystem", "Run", "free_port", "sluice_up_with"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


Run = Callable[..., subprocess.CompletedProcess[str]]
"""``run(*argv)``: ``sluice ARGV...`` against the system of :func:`sluice_up_with`."""


@contextmanager
def sluice_up_with(kafka_bootstrap: str, tmp: Path, prefix: str, nodes: int,
                   cluster_yaml: str) -> Iterator[Run]:
    """``sluice up --nodes NODES`` (2 CPUs, 1 GiB each) in ``tmp`` under its own topics and
    ports, ``cluster_yaml`` applied; yields ``run``; ``sluice down`` at the end."""
    unique = f"{prefix}{os.getpid()}x{int(time.time() * 1000) % 10**8}"
    env = {
        **os.environ, "KAFKA_BOOTSTRAP": kafka_bootstrap, "SLUICE_HOME": str(tmp / "home"),
        "SLUICE_TOPIC_PREFIX": unique, "SLUICE_CLUSTER": unique,
        "SLUICE_API": f"127.0.0.1:{free_port()}",
        "SLUICE_WORKER_METRICS": f"127.0.0.1:{free_port()}",
        "SLUICE_ALLOW_ROOT_JOBS": "true",  # the test may run as root: its jobs are root's
    }

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "cli.main", *argv], cwd=tmp, env=env,
                              capture_output=True, text=True, timeout=240, check=False)

    up = run("up", "--nodes", str(nodes), "--cpus", "2", "--mem", "1024")
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        (tmp / "cluster.yaml").write_text(cluster_yaml)
        applied = run("config", "apply", str(tmp / "cluster.yaml"))
        assert applied.returncode == 0, applied.stdout + applied.stderr
        yield run
    finally:
        run("down")


class LocalSystem:
    """Worker, projections and node daemons as child processes of the test."""

    def __init__(self, bootstrap: str, home: Path, prefix: str, partitions: int = 3,
                 shards: int = 1, shard_map: str = "") -> None:
        base = Settings(
            bootstrap=bootstrap, prefix=prefix, cluster=prefix, partitions=partitions,
            shards=shards, shard_map=shard_map, home=home, api=f"127.0.0.1:{free_port()}",
            allow_root_jobs=True,  # the tests run as root and submit as root (AllowRootJobs)
        )
        # One cluster's keys for every process, whatever SLUICE_HOME each is given (two
        # workers of one cluster sign with the same key, as they share the worker secret).
        (command_key, command_pub), (env_key, env_pub) = (command_key_paths(base),
                                                          env_key_paths(base))
        self.settings = base.with_(command_key=str(command_key), command_pubkey=str(command_pub),
                                   env_key=str(env_key), env_pubkey=str(env_pub))
        ensure_keys(self.settings)
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self.client = Client(self.settings)
        prepare_topics(self.settings)

    def start(
        self, name: str, *argv: str, env: dict[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        logs = self.settings.home / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, **self.settings.as_env(), "PYTHONUNBUFFERED": "1", **(env or {})}
        with (logs / f"{name}.log").open("ab") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "cli.main", *argv], stdout=log,
                stderr=subprocess.STDOUT, env=env, start_new_session=True,
            )
        self.processes[name] = process
        return process

    def start_core(self) -> None:
        self.start("worker", "worker", "--loglevel", "info")
        self.start("projections", "projections")

    def start_nodes(self, count: int, cpus: int = 4, mem: int = 8192, gpus: int = 0) -> list[str]:
        names = [f"n{i:02d}" for i in range(1, count + 1)]
        for name in names:
            self.start_node(name, cpus, mem, gpus)
        return names

    def start_node(
        self, name: str, cpus: int = 4, mem: int = 8192, gpus: int = 0, *extra: str
    ) -> None:
        self.start(name, "node", "--name", name, "--cpus", str(cpus), "--mem", str(mem),
                   "--gpus", str(gpus), "--heartbeat", "0.5", "--kill-wait", "3", *extra)

    def shard_owner(self, workers: Mapping[str, Path]) -> str | None:
        """The live worker (name → its SLUICE_HOME) that owns a shard now, by the
        ``worker/owned.json`` it writes (None while none does)."""
        for name, home in workers.items():
            process = self.processes.get(name)
            if process is None or process.poll() is not None:
                continue
            try:
                owned = json.loads((Path(home) / "worker" / "owned.json").read_text())
            except (OSError, ValueError):
                continue
            if owned["pid"] == process.pid and owned["shards"]:
                return name
        return None

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        process = self.processes.pop(name)
        os.killpg(process.pid, sig)
        process.wait(30)

    def wait(self, predicate: Callable[[], Any], timeout_s: float, what: str) -> Any:
        deadline = time.monotonic() + timeout_s
        last_error: Exception | None = None
        while time.monotonic() < deadline:
            dead = [n for n, p in self.processes.items() if p.poll() is not None]
            if dead:
                raise AssertionError(f"{dead} exited while waiting for {what}:\n"
                                     f"{self.log_tail()}")
            try:
                value = predicate()
                if value:
                    return value
            except (ApiError, KeyError) as exc:
                last_error = exc
            time.sleep(0.2)
        raise AssertionError(f"timed out waiting for {what} ({last_error}); "
                             f"logs in {self.settings.home / 'logs'}:\n{self.log_tail()}")

    def wait_nodes_idle(self, count: int, timeout_s: float = 90) -> list[dict[str, Any]]:
        def idle() -> list[dict[str, Any]] | None:
            nodes = self.client.get("/v1/nodes")["nodes"]
            ready = [n for n in nodes if n["state"] == "IDLE"]
            return ready if len(ready) >= count else None

        return list(self.wait(idle, timeout_s, f"{count} idle nodes"))

    def log_tail(self, lines: int = 30) -> str:
        """Each log's last ``lines``, after its earlier errors (tracebacks, ERROR and CRITICAL
        lines, 12 lines each, 80 at most): why a process died is rarely in its last lines
        (faust logs a page of shutdown after a crash)."""
        out = []
        for path in sorted((self.settings.home / "logs").glob("*.log")):
            text = path.read_text(errors="replace").splitlines()
            tail = max(0, len(text) - lines)
            shown: list[str] = []
            end = 0
            for i, line in enumerate(text[:tail]):
                if i >= end and _ERROR_LINE.search(line) and len(shown) < 80:
                    end = min(i + 12, tail)
                    shown.extend(text[i:end])
            if shown:
                out.append(f"--- {path.name} (its errors before the tail)\n" + "\n".join(shown))
            out.append(f"--- {path.name}\n" + "\n".join(text[tail:]))
        return "\n".join(out)

    def stop(self) -> None:
        for process in self.processes.values():
            try:
                os.killpg(process.pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
        for process in self.processes.values():
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(5)
        self.processes.clear()


def apply_config(system: LocalSystem, text: str, kind: str = "cluster") -> None:
    """Send a configuration and wait until the views show it in force."""
    import hashlib

    sluid = system.client.sluids.new()
    system.client.send(sluid, "ApplyConfig", {"config_sluid": sluid, "kind": kind, "text": text,
                                             "source": f"test-{kind}.yaml"})
    digest = hashlib.sha256(text.encode()).hexdigest()
    system.wait(
        lambda: system.client.get("/v1/config")["config"].get(kind, {}).get("digest") == digest,
        60, f"the {kind} configuration to apply",
    )
