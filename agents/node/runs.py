"""The runs one node daemon is responsible for: child processes, kills and exit reports."""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from agents.node.environment import output_path, run_environment

__all__ = ["RunTable"]

log = logging.getLogger(__name__)

ExitReporter = Callable[[dict[str, Any], int, int, str], None]
_PR_SET_PDEATHSIG = 1
_SEEN_LIMIT = 10_000


def _die_with_parent() -> None:
    """In the child: get SIGKILL when the daemon dies (a killed daemon is a failed node)."""
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


@dataclass
class Run:
    """One run on this node."""

    launch: dict[str, Any]
    process: subprocess.Popen[bytes] | None
    files: list[IO[bytes]] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)
    kill_reason: str = ""
    kill_deadline: float | None = None


class RunTable:
    """Starts, watches and kills the runs of one node."""

    def __init__(
        self, node: str, state_dir: Path, kill_wait_s: float, report: ExitReporter
    ) -> None:
        self.node, self.state_dir = node, state_dir
        self.kill_wait_s = kill_wait_s
        self._report = report
        self._runs: dict[str, Run] = {}
        self._seen: dict[str, None] = {}  # insertion-ordered, bounded

    def running(self) -> list[str]:
        """Run SLUIDs this node holds, in start order."""
        return list(self._runs)

    def launch(self, launch: dict[str, Any]) -> None:
        """Start a run (batch host) or hold its allocation (other nodes); at most once."""
        run_sluid = launch["run_sluid"]
        if run_sluid in self._seen:
            return
        self._seen[run_sluid] = None
        if len(self._seen) > _SEEN_LIMIT:
            self._seen.pop(next(iter(self._seen)))
        if not launch["batch_host"]:
            self._runs[run_sluid] = Run(launch, None)
            return
        try:
            self._runs[run_sluid] = self._start(launch)
        except OSError as exc:
            log.warning("node %s: run %s could not start: %s", self.node, run_sluid, exc)
            self._report(launch, 127 if isinstance(exc, FileNotFoundError) else 126, 0,
                         f"could not start: {exc}")

    def _start(self, launch: dict[str, Any]) -> Run:
        workdir = Path(launch.get("workdir") or self.state_dir)
        out_pattern = launch.get("output") or "sluice-%j.out"
        stdout_path = workdir / output_path(out_pattern, launch, self.node)
        stdout_path.parent.mkdir(parents=True, exist_ok=True)
        stdout = stdout_path.open("ab")
        files: list[IO[bytes]] = [stdout]
        stderr: IO[bytes] | int = subprocess.STDOUT
        if launch.get("error"):
            err_path = workdir / output_path(launch["error"], launch, self.node)
            stderr = err_path.open("ab")
            files.append(stderr)
        env = {**os.environ, **run_environment(launch, self.node)}
        try:
            process = subprocess.Popen(
                list(launch["command"]), cwd=workdir, env=env, stdin=subprocess.DEVNULL,
                stdout=stdout, stderr=stderr, start_new_session=True,
                preexec_fn=_die_with_parent,  # noqa: PLW1509 - a daemon restart is a node failure
            )
        except OSError:
            for handle in files:
                handle.close()
            raise
        log.info("node %s: run %s started (pid %d)", self.node, launch["run_sluid"], process.pid)
        return Run(launch, process, files)

    def kill(self, run_sluid: str, reason: str) -> None:
        """SIGTERM the run's process group now, SIGKILL after the grace period."""
        run = self._runs.get(run_sluid)
        if run is None:
            return
        if run.process is None:  # an allocation without a process: nothing to signal
            self._runs.pop(run_sluid)
            return
        if run.kill_deadline is None:
            run.kill_reason = reason
            run.kill_deadline = time.monotonic() + self.kill_wait_s
            _signal_group(run.process, signal.SIGTERM)

    def poll(self) -> None:
        """Reap finished runs, report their exits, escalate overdue kills, enforce limits."""
        now = time.monotonic()
        for run_sluid, run in list(self._runs.items()):
            process = run.process
            if process is None:
                continue
            code = process.poll()
            if code is None:
                self._escalate(run, now)
                continue
            for handle in run.files:
                handle.close()
            del self._runs[run_sluid]
            exit_code, sig = (0, -code) if code < 0 else (code, 0)
            self._report(run.launch, exit_code, sig, run.kill_reason)

    def _escalate(self, run: Run, now: float) -> None:
        assert run.process is not None
        limit = int(run.launch.get("time_limit_s") or 0)
        if run.kill_deadline is None and limit > 0 and now - run.started > limit + self.kill_wait_s:
            # The scheduler's TIMEOUT kill has not come (broker down?): enforce locally.
            self.kill(run.launch["run_sluid"], "TIMEOUT")
        elif run.kill_deadline is not None and now >= run.kill_deadline:
            _signal_group(run.process, signal.SIGKILL)
            run.kill_deadline = now + self.kill_wait_s

    def terminate_all(self) -> None:
        """On daemon shutdown: stop every child (SIGTERM, then SIGKILL)."""
        processes = [r.process for r in self._runs.values() if r.process is not None]
        for process in processes:
            _signal_group(process, signal.SIGTERM)
        deadline = time.monotonic() + self.kill_wait_s
        for process in processes:
            try:
                process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal_group(process, signal.SIGKILL)


def _signal_group(process: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, sig)
