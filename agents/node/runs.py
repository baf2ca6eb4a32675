"""The runs one node daemon is responsible for: prolog, the batch process, kills, epilog.

Each run on this node moves through phases, advanced by :meth:`RunTable.poll` (never blocking
the daemon's loop)::

    launch ─► PROLOG ─► RUNNING (batch host) ─► HELD ─► KILLING ─► EPILOG ─► gone
                  └────► HELD (other nodes, or a failed prolog)   ▲
    KillRun ─────────────────────────────────────────────────────┘

- the prolog (if configured) runs on every node of the run; a failure or timeout is reported
  (``ReportProlog``) and the batch command is not started;
- the batch host runs the command in its own session; its exit is reported (``ReportJobExit``);
- a ``KillRun`` (cancel, time limit, or the scheduler's end-of-run TERMINATE) sends SIGTERM to the
  run's process group and SIGKILL after the grace period; once nothing of the run is left, the
  epilog runs (if configured) and its result is reported (``ReportEpilog``) — like Slurm, the
  node stays COMPLETING for that run until then.
"""

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
from enum import Enum
from pathlib import Path
from typing import IO, Any

from agents.node.environment import output_path, run_environment

__all__ = ["Phase", "RunTable", "Scripts"]

log = logging.getLogger(__name__)

Reporter = Callable[[str, dict[str, Any], dict[str, Any]], None]
_PR_SET_PDEATHSIG = 1
_SEEN_LIMIT = 10_000


def _die_with_parent() -> None:
    """In the child: get SIGKILL when the daemon dies (a killed daemon is a failed node)."""
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


class Phase(Enum):
    PROLOG = "prolog"
    RUNNING = "running"
    HELD = "held"
    KILLING = "killing"
    EPILOG = "epilog"


@dataclass(frozen=True, slots=True)
class Scripts:
    """The node's prolog and epilog (Slurm's Prolog= / Epilog=) and their timeouts."""

    prolog: str = ""
    epilog: str = ""
    prolog_timeout_s: float = 60.0
    epilog_timeout_s: float = 60.0


@dataclass
class Run:
    """One run on this node."""

    launch: dict[str, Any]
    phase: Phase
    process: subprocess.Popen[bytes] | None = None
    files: list[IO[bytes]] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)
    deadline: float | None = None  # script timeout, or the SIGKILL time while killing
    kill_reason: str = ""
    script_timed_out: bool = False  # the prolog or epilog ran past its timeout


class RunTable:
    """Starts, watches and kills the runs of one node."""

    def __init__(
        self, node: str, state_dir: Path, kill_wait_s: float, report: Reporter,
        scripts: Scripts | None = None,
    ) -> None:
        self.node, self.state_dir = node, state_dir
        self.kill_wait_s = kill_wait_s
        self.scripts = scripts or Scripts()
        self._report = report
        self._runs: dict[str, Run] = {}
        self._seen: dict[str, None] = {}  # insertion-ordered, bounded

    def running(self) -> list[str]:
        """Run SLUIDs this node holds, in start order."""
        return list(self._runs)

    def phase(self, run_sluid: str) -> Phase | None:
        run = self._runs.get(run_sluid)
        return None if run is None else run.phase

    # -- commands -------------------------------------------------------------------------

    def launch(self, launch: dict[str, Any]) -> None:
        """Begin a run on this node (at most once per run SLUID)."""
        run_sluid = launch["run_sluid"]
        if run_sluid in self._seen:
            return
        self._remember(run_sluid)
        run = Run(launch, Phase.HELD)
        self._runs[run_sluid] = run
        if self.scripts.prolog:
            self._script(run, Phase.PROLOG, self.scripts.prolog, self.scripts.prolog_timeout_s)
        elif launch["batch_host"]:
            self._start_batch(run)

    def kill(self, run_sluid: str, reason: str, record: dict[str, Any] | None = None) -> None:
        """SIGTERM what the run has running (SIGKILL after the grace), then its epilog."""
        run = self._runs.get(run_sluid)
        if run is None:
            if run_sluid in self._seen and record is None:
                return
            # A run this node does not hold (restarted daemon): still answer with an epilog so
            # the scheduler can release the node.
            self._remember(run_sluid)
            run = Run({**(record or {}), "run_sluid": run_sluid, "nodes": [self.node]},
                      Phase.HELD)
            self._runs[run_sluid] = run
        if run.phase in (Phase.KILLING, Phase.EPILOG):
            return
        run.kill_reason = reason
        if run.process is not None and run.process.poll() is None:
            run.phase = Phase.KILLING
            run.deadline = time.monotonic() + self.kill_wait_s
            _signal_group(run.process, signal.SIGTERM)
        else:
            self._begin_epilog(run)

    # -- the loop -------------------------------------------------------------------------

    def poll(self) -> None:
        """Advance every run whose process finished; escalate overdue kills and scripts."""
        now = time.monotonic()
        for run_sluid, run in list(self._runs.items()):
            process = run.process
            code = None if process is None else process.poll()
            if process is not None and code is None:
                self._overdue(run, now)
                continue
            if process is None:
                continue
            self._finished(run_sluid, run, code if code is not None else 0)

    def _finished(self, run_sluid: str, run: Run, code: int) -> None:
        for handle in run.files:
            handle.close()
        run.files, run.process, run.deadline = [], None, None
        timed_out, run.script_timed_out = run.script_timed_out, False
        if run.phase is Phase.PROLOG:
            if code == 0 and not timed_out:
                run.phase = Phase.HELD
                if run.launch["batch_host"]:
                    self._start_batch(run)
            else:
                run.phase = Phase.HELD
                self._report("ReportProlog", run.launch, {
                    "ok": False, "exit_code": -1 if timed_out else code,
                    "detail": "prolog timed out" if timed_out else f"prolog exited {code}"})
        elif run.phase in (Phase.RUNNING, Phase.KILLING):
            exit_code, sig = (0, -code) if code < 0 else (code, 0)
            self._report("ReportJobExit", run.launch, {
                "exit_code": exit_code, "signal": sig, "detail": run.kill_reason})
            if run.phase is Phase.KILLING:
                self._begin_epilog(run)
            else:
                run.phase = Phase.HELD
        elif run.phase is Phase.EPILOG:
            del self._runs[run_sluid]
            ok = code == 0 and not timed_out
            self._report("ReportEpilog", run.launch, {
                "ok": ok, "exit_code": -1 if timed_out else code,
                "detail": "" if ok else ("epilog timed out" if timed_out
                                         else f"epilog exited {code}")})

    def _overdue(self, run: Run, now: float) -> None:
        assert run.process is not None
        if run.phase in (Phase.PROLOG, Phase.EPILOG):
            if run.deadline is not None and now >= run.deadline:
                run.script_timed_out = True
                _signal_group(run.process, signal.SIGKILL)
                run.deadline = None
            return
        limit = int(run.launch.get("time_limit_s") or 0)
        overdue = limit > 0 and now - run.started > limit + self.kill_wait_s
        if run.phase is Phase.RUNNING and overdue:
            # The scheduler's TIMEOUT kill has not come (broker down?): enforce it here.
            self.kill(run.launch["run_sluid"], "TIMEOUT")
        elif run.phase is Phase.KILLING and run.deadline is not None and now >= run.deadline:
            _signal_group(run.process, signal.SIGKILL)
            run.deadline = now + self.kill_wait_s

    # -- processes ------------------------------------------------------------------------

    def _remember(self, run_sluid: str) -> None:
        self._seen[run_sluid] = None
        if len(self._seen) > _SEEN_LIMIT:
            self._seen.pop(next(iter(self._seen)))

    def _begin_epilog(self, run: Run) -> None:
        if self.scripts.epilog:
            self._script(run, Phase.EPILOG, self.scripts.epilog, self.scripts.epilog_timeout_s)
        else:
            run.phase = Phase.EPILOG
            self._finished(run.launch["run_sluid"], run, 0)

    def _env(self, launch: dict[str, Any]) -> dict[str, str]:
        if "job_id" in launch:
            return {**os.environ, **run_environment(launch, self.node)}
        return {**os.environ, "SLURM_JOB_SLUID": launch["run_sluid"],
                "SLUICE_RUN_SLUID": launch["run_sluid"],
                "SLUICE_JOB_SLUID": launch.get("job_sluid", ""), "SLURMD_NODENAME": self.node}

    def _script(self, run: Run, phase: Phase, path: str, timeout_s: float) -> None:
        run.phase, run.kill_reason = phase, ""
        try:
            run.process = subprocess.Popen(
                [path], cwd=self.state_dir, env=self._env(run.launch),
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True, preexec_fn=_die_with_parent,  # noqa: PLW1509
            )
            run.deadline = time.monotonic() + timeout_s
        except OSError as exc:
            log.warning("node %s: %s %s could not start: %s", self.node, phase.value, path, exc)
            run.process = None
            self._finished(run.launch["run_sluid"], run, 127)

    def _start_batch(self, run: Run) -> None:
        launch = run.launch
        try:
            run.process, run.files = self._spawn(launch)
            run.phase, run.started = Phase.RUNNING, time.monotonic()
            log.info("node %s: run %s started (pid %d)", self.node, launch["run_sluid"],
                     run.process.pid)
        except OSError as exc:
            log.warning("node %s: run %s could not start: %s", self.node, launch["run_sluid"],
                        exc)
            self._report("ReportJobExit", launch, {
                "exit_code": 127 if isinstance(exc, FileNotFoundError) else 126, "signal": 0,
                "detail": f"could not start: {exc}"})

    def _spawn(self, launch: dict[str, Any]) -> tuple[subprocess.Popen[bytes], list[IO[bytes]]]:
        workdir = Path(launch.get("workdir") or self.state_dir)
        stdout_path = workdir / output_path(launch.get("output") or "sluice-%j.out", launch,
                                            self.node)
        stdout_path.parent.mkdir(parents=True, exist_ok=True)
        files: list[IO[bytes]] = [stdout_path.open("ab")]
        stderr: IO[bytes] | int = subprocess.STDOUT
        if launch.get("error"):
            stderr = (workdir / output_path(launch["error"], launch, self.node)).open("ab")
            files.append(stderr)
        try:
            process = subprocess.Popen(
                list(launch["command"]), cwd=workdir, env=self._env(launch),
                stdin=subprocess.DEVNULL, stdout=files[0], stderr=stderr,
                start_new_session=True, preexec_fn=_die_with_parent,  # noqa: PLW1509
            )
        except OSError:
            for handle in files:
                handle.close()
            raise
        return process, files

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
