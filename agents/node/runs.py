"""The runs one node daemon is responsible for: prolog, the batch process, kills, epilog.

Each run on this node moves through phases, advanced by :meth:`RunTable.poll` (never blocking
the daemon's loop)::

    launch ─► PROLOG ─► RUNNING (batch host) ─► HELD ─► KILLING ─► EPILOG ─► gone
                  └────► HELD (other nodes, or a failed prolog)   ▲
    KillRun ─────────────────────────────────────────────────────┘

- the prolog (if configured) runs on every node of the run; a failure or timeout is reported
  (``ReportProlog``) and the batch command is not started;
- the batch host runs the command in its own session; its exit is reported (``ReportJobExit``);
- a ``KillRun`` (cancel, time limit, requeue, or the scheduler's end-of-run TERMINATE) sends
  SIGCONT and SIGTERM to **every** process of the run and SIGKILL after the grace period (Slurm's
  KillWait); once nothing of the run is left, the epilog runs (if configured) and its result is
  reported (``ReportEpilog``) — like Slurm, the node stays COMPLETING for that run until then;
- a run whose batch command ends by itself on its only node, leaving nothing, on a node with
  no epilog and no step of it, is released at once and its ``ReportJobExit`` says so
  (``epilog_done``): the scheduler's ``TERMINATE`` then finds nothing to do
  (docs/node-daemon.md, "A run's end in one report").

Every process is started under a supervisor (``agents.node.supervised``), in the run's cgroup
where the host gives one (``agents.node.proctrack``); the run is recorded in the state
directory until nothing of it is left (``agents.node.leftovers``), and :meth:`RunTable.sweep`
kills what earlier daemons left behind.
"""

from __future__ import annotations

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

from agents.node.batch_files import batch_argv, remove_batch_files
from agents.node.end_reports import EndReports
from agents.node.environment import (
    NodeEnv,
    default_output,
    gpus_here,
    output_path,
    run_environment,
)
from agents.node.fence import run_horizon_s
from agents.node.gpus import GpuSlots
from agents.node.job_env import ScriptRefusedError
from agents.node.leftovers import RunRecords, sweep_leftovers
from agents.node.limits import apply_limits
from agents.node.owner import Owner, OwnerRefusedError, resolve_owner, run_uids
from agents.node.proctrack import CgroupTree, RunScope, remove_cgroup, safe_name
from agents.node.supervised import Supervised
from agents.node.supervisor_server import SupervisorServer
from agents.node.wakeups import Wakeups

__all__ = ["Phase", "RunTable", "Scripts"]

log = logging.getLogger(__name__)

TERMINATE = "TERMINATE"
"""The ``KillRun`` reason of the scheduler's end of a run (``scheduler.commands.TERMINATE``)."""

Reporter = Callable[[str, dict[str, Any], dict[str, Any]], None]
EnvOpener = Callable[[dict[str, Any]], dict[str, str]]
ScriptOpener = Callable[[dict[str, Any]], str]
"""The job's own environment from its launch (sealed ``--export`` values opened)."""
_SEEN_LIMIT = 10_000
_KILL_REPEAT_S = 0.2  # a SIGKILL is repeated until the run's supervisor reports the end
_FENCE_CODES = (None, -signal.SIGKILL, 128 + signal.SIGKILL)
"""A run still alive, or whose supervisor ended it with SIGKILL (forked, or started by the
daemon), not yet seen by ``poll``: at a fence, its supervisor is killing it."""
_LEFTOVER_WAIT_S = 5.0  # how long the daemon's loop waits for SIGKILLed leftovers to vanish


class Phase(Enum):
    PROLOG = "prolog"
    RUNNING = "running"
    HELD = "held"
    KILLING = "killing"
    EPILOG = "epilog"


@dataclass(frozen=True, slots=True)
class Scripts:
    """The node's prolog and epilog (Slurm's Prolog= / Epilog=) and their timeouts, and how
    long a batch command may take to start (enter its working directory, open its output)."""

    prolog: str = ""
    epilog: str = ""
    prolog_timeout_s: float = 60.0
    epilog_timeout_s: float = 60.0
    start_timeout_s: float = 30.0


START_TIMED_OUT = "StartTimedOut"
"""The named reason of a batch command that did not start within ``start_timeout_s`` (its
working directory or output path on a mount that does not answer)."""


@dataclass
class Run:
    """One run on this node."""

    launch: dict[str, Any]
    phase: Phase
    process: Supervised | None = None
    scope: RunScope | None = None  # set when its first process starts
    dirty: bool = False  # a process ended without its supervisor seeing the run empty
    files: list[IO[bytes]] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)
    deadline: float | None = None  # script timeout, or the SIGKILL time while killing
    kill_reason: str = ""
    script_timed_out: bool = False  # the prolog or epilog ran past its timeout
    terminated: bool = False  # the scheduler's TERMINATE came: the run has ended there
    start_by: float | None = None  # the batch command's start is not confirmed yet: its bound
    owner: str = ""  # the user the batch command runs as (for the reports)
    exit_reported: bool = False  # its start failed, and that was reported as its exit
    fenced: bool = False  # its supervisor killed it: the daemon was cut off (fence.py)
    # the deadline (monotonic) its current process's supervisor was last given: the lease plus
    # the run's horizon (fence.py); None: never fenced
    fence_at: float | None = None
    lease_over: bool = False  # that deadline passed: its supervisor is killing it, unfed


class RunTable:
    """Starts, watches and kills the runs of one node."""

    def __init__(
        self, node: str, state_dir: Path, kill_wait_s: float, report: Reporter,
        scripts: Scripts | None = None, cgroups: CgroupTree | None = None,
        waiting: Callable[[], None] | None = None, node_env: NodeEnv | None = None,
        allow_root: bool = False, open_env: EnvOpener | None = None,
        client_conf: str | Callable[[], str] = "", server: SupervisorServer | None = None,
        fence_s: float = 0.0, open_script: ScriptOpener | None = None,
    ) -> None:
        self.node, self.state_dir = node, state_dir
        # a run's supervisor kills it when the daemon has not fed its lifeline for this long
        # (the node timeout: the scheduler may start the job elsewhere by then); 0: never
        self.fence_s = fence_s
        # SLUICE_CONF of the job's sluice/srun (client_conf.py); a callable is asked once, at
        # the first run (writing it loads the sealing key, and with it cryptography)
        self._client_conf = client_conf
        self.allow_root = allow_root  # AllowRootJobs: jobs of uid 0 run (owner.py)
        self._open_env = open_env or (lambda launch: dict(launch.get("env") or {}))
        # the batch script, opened when it came sealed (agents.auth.sealed_script)
        self._open_script = open_script or (lambda launch: str(launch.get("script") or ""))
        self.kill_wait_s = kill_wait_s
        self.scripts = scripts or Scripts()
        self.cgroups = cgroups
        self._waiting = waiting  # called while a supervisor starts (the daemon heartbeats)
        self._records = RunRecords(state_dir)
        self._report = report
        self._runs: dict[str, Run] = {}
        # run SLUIDs seen (insertion-ordered, bounded) → released at its end (_ends_here)
        self._seen: dict[str, bool] = {}
        self.ends = EndReports(report)  # end reports no TERMINATE has answered yet
        self.node_env = node_env or NodeEnv()
        self.gpus = GpuSlots(self.node_env.gpus)  # which devices each run holds
        self._limit_notes: set[str] = set()
        self.server = server  # forks the supervisors, where it can (supervisor_server.py)
        # whether a job step of the run is held here (set by the daemon: its StepTable)
        self.steps_here: Callable[[str], bool] = lambda run_sluid: False
        # the seconds of lease a new supervisor gets before the run's horizon (set by the
        # daemon: agents.node.fence); None: no lease, only ``fence_s`` of silence
        self.lease: Callable[[], float | None] = lambda: None

    def running(self) -> list[str]:
        """Run SLUIDs this node holds, in start order."""
        return list(self._runs)

    def exited(self) -> list[str]:
        """The runs whose batch command has exited (or whose prolog failed) and whose report
        of it no ``TERMINATE`` has answered yet, held here or not (agents.node.end_reports). A
        heartbeat lists them so the shard can tell a run that still runs here from one whose
        report it never got (docs/node-daemon.md, "Runs the node no longer runs")."""
        return self.ends.waiting()

    def knows(self, run_sluid: str) -> bool:
        """Whether this daemon holds the run or started it before (the runs it remembers)."""
        return run_sluid in self._runs or run_sluid in self._seen

    def launch_of(self, run_sluid: str) -> dict[str, Any] | None:
        """The LaunchRun of a run this node holds and has not begun to kill (job steps start
        only inside such a run)."""
        run = self._runs.get(run_sluid)
        if run is None or run.phase in (Phase.KILLING, Phase.EPILOG) or "job_id" not in run.launch:
            return None
        return run.launch

    def batch_process(self, run_sluid: str) -> Supervised | None:
        """The batch step's process of a run this node runs and is not killing (signals)."""
        run = self._runs.get(run_sluid)
        return run.process if run is not None and run.phase is Phase.RUNNING else None

    def environment(self, launch: dict[str, Any]) -> dict[str, str]:
        """The environment the job's own processes get (the batch step's, and the base of a job
        step's): the run's variables and the job's ``--export`` values, never the daemon's.
        Raises ValueError when the sealed environment cannot be opened."""
        gpus = self.gpus.bind(launch["run_sluid"], gpus_here(launch, self.node))
        env = run_environment({**launch, "env": self._open_env(launch)}, self.node, gpus,
                              self.node_env.cluster)
        if self.client_conf:
            env["SLUICE_CONF"] = self.client_conf
        return env

    @property
    def client_conf(self) -> str:
        """The path jobs get as ``SLUICE_CONF`` ("" for none)."""
        if callable(self._client_conf):
            self._client_conf = self._client_conf()
        return self._client_conf

    def owner(self, launch: dict[str, Any]) -> Owner:
        """The user the job's processes run as (raises OwnerRefusedError: owner.py)."""
        return resolve_owner(str(launch.get("user") or ""), self.allow_root)

    def phase(self, run_sluid: str) -> Phase | None:
        run = self._runs.get(run_sluid)
        return None if run is None else run.phase

    def sweep(self) -> list[str]:
        """Before registering: kill every process left by runs of an earlier daemon (this one
        owns none yet); returns the runs that had some."""
        return sweep_leftovers(self._records, self.cgroups, max(self.kill_wait_s, 1.0))

    # -- commands -------------------------------------------------------------------------

    def launch(self, launch: dict[str, Any]) -> None:
        """Begin a run on this node (at most once per run SLUID)."""
        run_sluid = launch["run_sluid"]
        if not safe_name(run_sluid):
            log.error("node %s: ignoring a launch with an unusable run SLUID %r", self.node,
                      run_sluid[:80])
            return
        if run_sluid in self._seen:
            return
        self._remember(run_sluid)
        run = Run(launch, Phase.HELD)
        self._runs[run_sluid] = run
        if self.scripts.prolog:
            self._script(run, Phase.PROLOG, self.scripts.prolog, self.scripts.prolog_timeout_s)
        elif launch["batch_host"]:
            self._start_batch(run)

    def set_limit(self, run_sluid: str, time_limit_s: int) -> None:
        """``SetRunLimit``: the run's time limit changed (scontrol update TimeLimit=); this
        node's own enforcement (the fallback to the shard's TIMEOUT kill) follows the new one."""
        run = self._runs.get(run_sluid)
        if run is None or time_limit_s < 0:
            return
        run.launch = {**run.launch, "time_limit_s": time_limit_s}
        log.info("node %s: run %s time limit now %s s", self.node, run_sluid,
                 time_limit_s or "UNLIMITED")

    def kill(self, run_sluid: str, reason: str, record: dict[str, Any] | None = None) -> None:
        """SIGTERM what the run has running (SIGKILL after the grace), then its epilog."""
        if not safe_name(run_sluid):
            log.error("node %s: ignoring a kill with an unusable run SLUID %r", self.node,
                      run_sluid[:80])
            return
        resent = 0
        if reason == TERMINATE:
            resent = self.ends.answered(run_sluid)  # the run's end report, if any, was decided
        run = self._runs.get(run_sluid)
        if run is not None and reason == TERMINATE:
            run.terminated = True
        if run is None:
            if run_sluid in self._seen and (record is None or (self._seen[run_sluid]
                                                                and not resent)):
                # nothing of it here; a run released at its end (_ends_here) reported its
                # epilog with its exit, unless that report had to be sent again (refused?
                # the scheduler may have ended the run otherwise and wait for the epilog)
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
        code = None if run.process is None else run.process.poll()
        if run.process is not None and code is None:
            run.phase = Phase.KILLING
            run.deadline = time.monotonic() + self.kill_wait_s
            run.process.signal(signal.SIGCONT)  # as Slurm: a stopped process gets its SIGTERM
            run.process.signal(signal.SIGTERM)
        elif code is not None and run.phase is Phase.RUNNING:
            # the batch command ended just before the kill, and no pass has seen it yet: its
            # exit is still reported (the scheduler waits for it), then the epilog runs
            assert run.process is not None
            run.phase = Phase.KILLING
            run.dirty = run.dirty or not run.process.clean
            self._finished(run_sluid, run, code)
        else:
            self._begin_epilog(run)

    # -- the loop -------------------------------------------------------------------------

    def poll(self) -> None:
        """Advance every run whose process finished; escalate overdue kills and scripts."""
        now = time.monotonic()
        for run_sluid, run in list(self._runs.items()):
            if run.start_by is not None:
                self._starting(run, now)
            process = run.process
            code = None if process is None else process.poll()
            if process is not None and code is None:
                self._overdue(run, now)
                continue
            if process is None:
                continue
            run.dirty = run.dirty or not process.clean
            self._finished(run_sluid, run, code if code is not None else 0)

    def _starting(self, run: Run, now: float) -> None:
        """Look at a batch command whose start is not confirmed: started (the run goes on),
        refused (reported as the launch's failure; the supervisor ends by itself), or still
        silent past ``start_timeout_s`` (its child is blocked, on a hung mount: reported
        ``StartTimedOut`` and killed like any run, so only this run waits, never the loop)."""
        assert run.process is not None and run.start_by is not None
        outcome = run.process.start_outcome()
        run_sluid = run.launch["run_sluid"]
        if outcome is None:
            if now < run.start_by:
                return
            run.start_by = None
            timeout = self.scripts.start_timeout_s
            log.warning("node %s: run %s did not start within %.0f s (its working directory "
                        "or output path does not answer): killed", self.node, run_sluid, timeout)
            self._start_failed(run, 126, f"{START_TIMED_OUT}: the working directory or an "
                                         f"output file did not answer within {timeout:g} s")
            self.kill(run_sluid, START_TIMED_OUT)
            return
        run.start_by = None
        if not isinstance(outcome, OSError):
            log.info("node %s: run %s started (pid %d)", self.node, run_sluid, run.process.pid)
            return
        log.warning("node %s: run %s could not start: %s", self.node, run_sluid, outcome)
        self._start_failed(run, *_launch_failure(outcome))

    def _start_failed(self, run: Run, code: int, why: str) -> None:
        """Report a batch command that never started as its exit (``code``, why)."""
        run.exit_reported = True
        self._report_end(run, "ReportJobExit", {
            "exit_code": code, "signal": 0, "detail": f"launch failed as {run.owner}: {why}"})

    def _report_end(self, run: Run, name: str, fields: dict[str, Any]) -> None:
        """Report the end of the run's batch command (or its prolog's failure); unless the
        scheduler has already ended the run, keep the report until its ``TERMINATE`` answers
        it (:meth:`resend_ends`)."""
        if run.terminated or run.kill_reason == TERMINATE:
            self._report(name, run.launch, fields)
        else:
            self.ends.sent(run.launch["run_sluid"], name, run.launch, fields, time.monotonic())

    def resend_ends(self, now: float, every_s: float, times: int) -> list[str]:
        """Send again the end reports no ``TERMINATE`` has answered for ``every_s``, at most
        ``times`` times each (agents.node.end_reports); the runs whose report was sent."""
        return self.ends.resend_due(now, every_s, times)

    def watch(self, wakeups: Wakeups) -> None:
        """Add what :meth:`poll` must be called for: each live process's end, and the time the
        first overdue check falls due (a script's timeout, a kill's SIGKILL, a time limit)."""
        for run in self._runs.values():
            if run.process is None:
                continue
            wakeups.process(run.process)
            wakeups.at(run.deadline)  # PROLOG/EPILOG timeout, KILLING escalation
            if run.start_by is not None:  # its start: the supervisor's word, or the bound
                wakeups.readable(run.process.lifeline_fileno())
                wakeups.at(run.start_by)
            limit = int(run.launch.get("time_limit_s") or 0)
            if run.phase is Phase.RUNNING and limit > 0:
                wakeups.at(run.started + limit + self.kill_wait_s)

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
                self._report_end(run, "ReportProlog", {
                    "ok": False, "exit_code": -1 if timed_out else code,
                    "detail": "prolog timed out" if timed_out else f"prolog exited {code}"})
        elif run.phase in (Phase.RUNNING, Phase.KILLING) and run.exit_reported:
            self._leftovers_killed(run)  # it never started: its failure was its exit report
            if run.phase is Phase.KILLING:
                self._begin_epilog(run)
            else:
                run.phase = Phase.HELD
        elif run.phase in (Phase.RUNNING, Phase.KILLING):
            gone = self._ends_here(run)  # before the leftovers' kill clears ``dirty``
            self._leftovers_killed(run)  # as Slurm: the batch script's end ends the rest
            exit_code, sig = (0, -code) if code < 0 else (code, 0)
            fields = {"exit_code": exit_code, "signal": sig, "detail": run.kill_reason,
                      **({"fenced": True} if run.fenced else {})}
            if gone:  # nothing left to kill, no epilog: the end and the epilog in one report
                self._seen[run_sluid] = True
                del self._runs[run_sluid]
                self._release(run)
                self._report_end(run, "ReportJobExit", {**fields, "epilog_done": True})
                return
            self._report_end(run, "ReportJobExit", fields)
            if run.phase is Phase.KILLING:
                self._begin_epilog(run)
            else:
                run.phase = Phase.HELD
        elif run.phase is Phase.EPILOG:
            del self._runs[run_sluid]
            self._release(run)
            ok = code == 0 and not timed_out
            self._report("ReportEpilog", run.launch, {
                "ok": ok, "exit_code": -1 if timed_out else code,
                "detail": "" if ok else ("epilog timed out" if timed_out
                                         else f"epilog exited {code}")})

    def _ends_here(self, run: Run) -> bool:
        """Whether the run's end is its end on this node (``ReportJobExit.epilog_done``): its
        only node is this one, no kill has come (nor the scheduler's end), the supervisor saw
        the run empty (no process left, an empty cgroup), no job step of it runs here, and the
        node has no epilog. Then the run is released at once and the scheduler's ``TERMINATE``
        would find nothing to kill and no epilog to run (docs/node-daemon.md, "A run's end in
        one report")."""
        nodes = list(run.launch.get("nodes") or ())
        return (
            run.phase is Phase.RUNNING
            and not run.kill_reason
            and not run.terminated
            and not run.dirty
            and not self.scripts.epilog
            and len(nodes) == 1
            and nodes[0] == self.node
            and not self.steps_here(run.launch["run_sluid"])
        )

    def _overdue(self, run: Run, now: float) -> None:
        assert run.process is not None
        if run.phase in (Phase.PROLOG, Phase.EPILOG):
            if run.deadline is not None and now >= run.deadline:
                run.script_timed_out = True
                run.process.signal(signal.SIGKILL)
                run.deadline = now + _KILL_REPEAT_S  # until the supervisor reports the end
            return
        limit = int(run.launch.get("time_limit_s") or 0)
        overdue = limit > 0 and now - run.started > limit + self.kill_wait_s
        if run.phase is Phase.RUNNING and overdue:
            # The scheduler's TIMEOUT kill has not come (broker down?): enforce it here.
            self.kill(run.launch["run_sluid"], "TIMEOUT")
        elif run.phase is Phase.KILLING and run.deadline is not None and now >= run.deadline:
            run.process.signal(signal.SIGKILL)
            run.deadline = now + _KILL_REPEAT_S

    # -- processes ------------------------------------------------------------------------

    def _remember(self, run_sluid: str) -> None:
        self._seen[run_sluid] = False
        if len(self._seen) > _SEEN_LIMIT:
            self._seen.pop(next(iter(self._seen)))

    def _scope(self, run: Run) -> RunScope:
        """The run's scope, made (cgroup, record) before its first process starts."""
        if run.scope is None:
            run_sluid, tree = run.launch["run_sluid"], self.cgroups
            made = tree is not None and tree.create(run_sluid) is not None
            uids = run_uids(str(run.launch.get("user") or ""))
            run.scope = (tree.scope(run_sluid, uids) if tree is not None and made
                         else RunScope(run_sluid, uids=uids))
            self._records.add(run.scope)
            self._limit(run)
        return run.scope

    def _limit(self, run: Run) -> None:
        """The run's CPU and memory limits in its cgroup, where the host allows (limits.py);
        why not is logged once per reason, and the run goes on without."""
        assert run.scope is not None
        cpus, mem_mb = int(run.launch.get("cpus") or 0), int(run.launch.get("mem_mb") or 0)
        if not (cpus or mem_mb):
            return
        why = ("no cgroup v2 for this run (process tracking by pgid)" if run.scope.cgroup is None
               else apply_limits(run.scope.cgroup, cpus, mem_mb))
        if why and why not in self._limit_notes:
            self._limit_notes.add(why)
            log.warning("node %s: runs get no CPU/memory limits: %s", self.node, why)

    def _leftovers_killed(self, run: Run) -> None:
        """Make sure nothing of the run is left, where a supervisor could not (it was killed):
        by cgroup and by marker (a scan of /proc)."""
        if run.scope is None or not run.dirty:
            return
        run.dirty = False
        if not run.scope.kill_all(_LEFTOVER_WAIT_S):
            log.error("node %s: run %s has processes SIGKILL does not end: %s", self.node,
                      run.scope.run_sluid, sorted(run.scope.pids()))

    def _release(self, run: Run) -> None:
        """The run is gone from this node: its cgroup and record go too."""
        self._leftovers_killed(run)
        self.gpus.free(run.launch["run_sluid"])
        remove_batch_files(self.state_dir, run.launch["run_sluid"])
        if run.scope is not None:
            if run.scope.cgroup is not None:
                remove_cgroup(run.scope.cgroup)
            self._records.remove(run.scope.run_sluid)

    def _begin_epilog(self, run: Run) -> None:
        self._leftovers_killed(run)
        if self.scripts.epilog:
            self._script(run, Phase.EPILOG, self.scripts.epilog, self.scripts.epilog_timeout_s)
        else:
            run.phase = Phase.EPILOG
            self._finished(run.launch["run_sluid"], run, 0)

    def _env(self, launch: dict[str, Any]) -> dict[str, str]:
        """The prolog's and epilog's environment: the daemon's (they are the administrator's
        scripts, run as the daemon's user, as Slurm's) and the run's variables, without the
        job's own ``--export`` values."""
        if "job_id" in launch:
            gpus = self.gpus.bind(launch["run_sluid"], gpus_here(launch, self.node))
            return {**os.environ, **run_environment({**launch, "env": {}}, self.node, gpus,
                                                    self.node_env.cluster,
                                                    os.environ.get("PATH", ""))}
        return {**os.environ, "SLURM_JOB_SLUID": launch["run_sluid"],
                "SLUICE_RUN_SLUID": launch["run_sluid"],
                "SLUICE_JOB_SLUID": launch.get("job_sluid", ""), "SLURMD_NODENAME": self.node}

    def _script(self, run: Run, phase: Phase, path: str, timeout_s: float) -> None:
        run.phase, run.kill_reason = phase, ""
        try:
            run.process = Supervised.start(
                self._scope(run), [path], self._env(run.launch), self.state_dir,
                subprocess.DEVNULL, subprocess.DEVNULL, self.state_dir, waiting=self._waiting,
                server=self.server, **self._leased(run))
            run.deadline = time.monotonic() + timeout_s
        except OSError as exc:
            log.warning("node %s: %s %s could not start: %s", self.node, phase.value, path, exc)
            run.process = None
            self._finished(run.launch["run_sluid"], run, 127)

    def _start_batch(self, run: Run) -> None:
        launch = run.launch
        try:
            owner = self.owner(launch)
            env = self.environment(launch)
            script = self._open_script(launch)
        except (OwnerRefusedError, ValueError) as exc:
            why = (f"{exc.reason}: {exc.detail}" if isinstance(exc, OwnerRefusedError)
                   else f"SealedScript: {exc}" if isinstance(exc, ScriptRefusedError)
                   else f"SealedEnvironment: {exc}")
            log.warning("node %s: run %s refused: %s", self.node, launch["run_sluid"], why)
            self._report_end(run, "ReportJobExit", {"exit_code": 126, "signal": 0,
                                                    "detail": f"launch refused: {why}"})
            return
        run.owner = owner.name
        try:
            run.process, run.files = self._spawn({**launch, "script": script}, self._scope(run),
                                                 owner, env, self._leased(run))
            run.phase, run.started = Phase.RUNNING, time.monotonic()
            run.start_by = run.started + self.scripts.start_timeout_s  # confirmed by poll()
        except OSError as exc:
            log.warning("node %s: run %s could not start: %s", self.node, launch["run_sluid"],
                        exc)
            self._start_failed(run, *_launch_failure(exc))

    def _leased(self, run: Run) -> dict[str, Any]:
        """The fencing arguments of a new supervisor of ``run`` (``Supervised.start``): the
        silence limit, the lease now and the run's horizon; notes its deadline."""
        lease, horizon = self.lease(), run_horizon_s(run.launch)
        run.lease_over = False
        run.fence_at = (None if lease is None or horizon is None
                        else time.monotonic() + lease + horizon)
        return {"fence_s": self.fence_s, "lease_s": lease, "horizon_s": horizon}

    def horizon(self, run_sluid: str) -> float | None:
        """The run's fence horizon (a step's tasks share it); 0 for a run not held here."""
        run = self._runs.get(run_sluid)
        return run_horizon_s(run.launch) if run is not None else 0.0

    def lease_over(self, run_sluid: str) -> bool:
        """Whether the run's lease ran out (its processes are being killed: feed them no more)."""
        run = self._runs.get(run_sluid)
        return run is not None and run.lease_over

    def next_fence(self) -> float | None:
        """The earliest deadline of a run whose lease has not run out (None: none has one)."""
        due = [run.fence_at for run in self._runs.values()
               if run.fence_at is not None and not run.lease_over and run.process is not None]
        return min(due, default=None)

    def _spawn(self, launch: dict[str, Any], scope: RunScope, owner: Owner,
               env: dict[str, str], leased: dict[str, Any]) -> tuple[Supervised, list[IO[bytes]]]:
        """Start the batch command as its owner. The working directory and the output files
        are the owner's business: the child enters and opens them after the switch, creates
        no directory and follows no symlink as the last part of an output path. A pattern
        that expands to nothing (``-o '\\'``, ``%x`` without a name) is the default file's:
        "" would leave the command its supervisor's stderr, the daemon's own log."""
        workdir = launch.get("workdir") or owner.home
        stdout = (output_path(launch.get("output") or "", launch, self.node)
                  or output_path(default_output(launch), launch, self.node))
        stderr = output_path(launch["error"], launch, self.node) if launch.get("error") else ""
        process = Supervised.start(scope, batch_argv(launch, self.state_dir), env,
                                   Path(workdir),
                                   subprocess.DEVNULL, None, self.state_dir,
                                   waiting=self._waiting, owner=owner.spec(),
                                   output=(stdout, stderr), server=self.server,
                                   await_start=False, **leased)
        return process, []

    def feed(self, lease_s: float | None = None) -> None:
        """Feed every run's lifeline (the daemon is alive: see ``fence_s``), with the seconds
        the daemon's lease has left (``agents.node.fence``) if given — its supervisor adds the
        run's horizon — but not a run whose deadline passed (:meth:`fence`)."""
        now = time.monotonic()
        for run in self._runs.values():
            if run.process is not None and not run.lease_over:
                run.process.feed(lease_s)
                if lease_s is not None and run.fence_at is not None:
                    run.fence_at = now + lease_s + (run_horizon_s(run.launch) or 0.0)

    def fence(self, now: float, detail: Callable[[float], str]) -> list[str]:
        """The runs whose deadline (the daemon's lease plus their horizon, ``agents.node.fence``)
        has passed at ``now``: their supervisors are killing them and they are fed no more; one
        running its batch command is marked fenced, its end reported with ``detail(horizon)``
        (the reason ``FENCED``). Returns the runs newly marked fenced."""
        marked = []
        for run_sluid, run in self._runs.items():
            if run.fence_at is None or run.lease_over or now < run.fence_at:
                continue
            run.lease_over = True
            if (run.phase is Phase.RUNNING and run.process is not None
                    and run.process.poll() in _FENCE_CODES and not run.kill_reason):
                run.kill_reason = detail(run_horizon_s(run.launch) or 0.0)
                run.fenced = True
                marked.append(run_sluid)
        return marked

    def terminate_all(self) -> None:
        """On daemon shutdown: stop every run (SIGTERM to all of it, SIGKILL after the grace),
        then remove its cgroup and record."""
        processes = [r.process for r in self._runs.values() if r.process is not None]
        for process in processes:
            process.signal(signal.SIGCONT)
            process.signal(signal.SIGTERM)
        deadline = time.monotonic() + self.kill_wait_s
        for process in processes:
            try:
                process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.signal(signal.SIGKILL)
                try:
                    process.wait(_LEFTOVER_WAIT_S)
                except subprocess.TimeoutExpired:
                    log.error("node %s: supervisor %d did not end", self.node, process.pid)
        for run in self._runs.values():
            for handle in run.files:
                handle.close()
            run.dirty = True  # shutting down: look for leftovers whatever the supervisors said
            self._release(run)


def _launch_failure(exc: OSError) -> tuple[int, str]:
    """The exit code (127: the command is missing, else 126) and words of a failed start."""
    reason = exc.strerror if exc.strerror else str(exc)
    exec_missing = isinstance(exc, FileNotFoundError) and "exec" in str(reason)[:5]
    return (127 if exec_missing else 126), str(reason)
