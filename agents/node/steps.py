"""The job steps one node runs (``LaunchStep`` from the shard, after a ``StartStep`` by srun).

A step's part on this node is its tasks: ``tasks_per_node[rank]`` processes of the step's
command, each under its own supervisor, with the run's environment (the node's view of the
job: :meth:`RunTable.environment`), srun's exported variables (never the node- or step-specific
Slurm ones) and the step's (:func:`agents.node.environment.step_environment`): ``SLURM_PROCID``
counts the tasks over the step's nodes in rank order, ``SLURM_LOCALID`` on this node.

The node connects to srun's output socket (``io_address``, presenting ``io_token``) and forwards
every line of every task's stdout and stderr, then each task's exit (:mod:`agents.node.step_io`).
When the last task on the node has ended it reports ``ReportStepExit`` (the highest exit code,
or the signal that ended a task) to the shard, which ends the step when all nodes have reported
or one failed; ``KillStep`` (a task failed elsewhere, a node failed) and the run's own kill end
the tasks: SIGCONT and SIGTERM, SIGKILL after the grace.

The tasks' starts are not awaited: :meth:`StepTable.poll` reads each supervisor's word when its
lifeline speaks (as the run table does for a batch command), so a working directory on a hung
mount holds only that step: a task silent past the node's ``--start-timeout`` fails the step
(``StartTimedOut``), as a task that could not start does.

A ``LaunchStep`` for a run this node does not hold (or is killing) is refused with a report
(exit code 1), so tasks never run outside an allocation the shard gave. The tasks carry the run's
marker (``SLUICE_RUN_SLUID``), so whatever kills the run (its end, a restarted daemon's sweep)
kills them too.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from agents.node.environment import step_environment
from agents.node.owner import Owner, OwnerRefusedError
from agents.node.proctrack import RunScope, safe_name
from agents.node.runs import START_TIMED_OUT, RunTable
from agents.node.step_input import StepInput, targets_of
from agents.node.step_io import StepOutput
from agents.node.supervised import Supervised
from agents.node.wakeups import Wakeups

__all__ = ["StepTable"]

log = logging.getLogger(__name__)

Reporter = Callable[[str, dict[str, Any], dict[str, Any]], None]
_KEEP = ("SLURM_", "SLUICE_", "SLURMD_", "CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL", "PATH")
_KILL_REPEAT_S = 0.2
SRUN_UNREACHABLE = "SrunUnreachable"
"""The start of a step's end detail when its srun could not be reached (:meth:`StepTable.poll`)."""
_FENCE_CODES = (-signal.SIGKILL, 128 + signal.SIGKILL)
"""A task's end by its supervisor's SIGKILL (at a fence) as ``poll`` reads it."""


@dataclass
class Task:
    """One task of a step on this node."""

    rank: int
    process: Supervised
    pipes: list[IO[bytes]]
    code: int | None = None
    started: bool | None = None  # None until its supervisor said whether it started


@dataclass
class NodeStep:
    """A step's part on this node."""

    command: dict[str, Any]
    output: StepOutput
    tasks: list[Task] = field(default_factory=list)
    kill_reason: str = ""
    fenced: bool = False  # its tasks' supervisors killed them: the daemon was cut off
    deadline: float | None = None
    failed_to_start: str = ""
    start_by: float | None = None  # some task's start is not confirmed yet: the bound


def _srun_env(env: dict[str, str]) -> dict[str, str]:
    """srun's exported variables, without those the node and the step set."""
    return {k: v for k, v in env.items() if not k.startswith(_KEEP)}


class StepTable:
    """Starts, forwards, watches and kills the job steps of one node."""

    def __init__(self, node: str, state_dir: Path, runs: RunTable, report: Reporter,
                 kill_wait_s: float, waiting: Callable[[], None] | None = None,
                 open_token: Callable[[dict[str, Any]], str] | None = None,
                 open_env: Callable[[dict[str, Any]], dict[str, str]] | None = None) -> None:
        self.node, self.state_dir, self.runs = node, state_dir, runs
        # srun's io_token and environment, opened when sealed (agents.auth.io_token);
        # ValueError: the step is refused
        self._open_token = open_token or (lambda command: str(command.get("io_token") or ""))
        self._open_env = open_env or (lambda command: dict(command.get("env") or {}))
        self._report, self.kill_wait_s, self._waiting = report, kill_wait_s, waiting
        self._steps: dict[str, NodeStep] = {}
        self._gpus: dict[str, tuple[str, tuple[int, ...], bool]] = {}  # step: run, ids, shared
        self._seen: dict[str, None] = {}
        runs.steps_here = self.holds  # a run with a step here is not released at its end

    def holds(self, run_sluid: str) -> bool:
        """Whether a step of the run is held here (tasks running or being killed)."""
        return any(step.command["run_sluid"] == run_sluid for step in self._steps.values())

    def running(self) -> list[str]:
        """Step SLUIDs with tasks on this node."""
        return list(self._steps)

    def launch(self, command: dict[str, Any]) -> None:
        """Start the step's tasks on this node (at most once per step SLUID)."""
        step_sluid = str(command.get("step_sluid", ""))
        if not safe_name(step_sluid) or step_sluid in self._seen:
            return
        self._seen[step_sluid] = None
        if len(self._seen) > 10_000:
            self._seen.pop(next(iter(self._seen)))
        nodes, counts = list(command["nodes"]), list(command["tasks_per_node"])
        run = self.runs.launch_of(command["run_sluid"])
        if run is None or self.node not in nodes or len(counts) != len(nodes):
            self._report("ReportStepExit", command, {
                "step_sluid": step_sluid, "exit_code": 1, "signal": 0,
                "detail": f"{self.node} holds no running allocation of this job"})
            return
        rank = nodes.index(self.node)
        try:
            token, sent_env = self._open_token(command), self._open_env(command)
        except ValueError as exc:
            self._report("ReportStepExit", command, {
                "step_sluid": step_sluid, "exit_code": 1, "signal": 0,
                "detail": f"step refused: {exc}"})
            return
        output = StepOutput.connect(command["io_address"], token, self.node, step_sluid)
        step = NodeStep(command, output)
        self._steps[step_sluid] = step
        first = sum(int(c) for c in counts[:rank])
        try:  # a step's tasks run as the job's owner, as its batch step does (owner.py)
            owner = self.runs.owner(run)
            base = self.runs.environment(run)
        except (OwnerRefusedError, ValueError) as exc:
            self._report("ReportStepExit", command, {
                "step_sluid": step_sluid, "exit_code": 126, "signal": 0,
                "detail": f"step refused: {exc}"})
            return
        step.start_by = time.monotonic() + self.runs.scripts.start_timeout_s
        srun_env = _srun_env(sent_env)
        held = self._resources(command)
        workdir = Path(command.get("workdir") or run.get("workdir") or owner.home)
        mode = str(command.get("input") or "")
        readers = targets_of(mode, range(first, first + int(counts[rank])))
        feeds: list[int] = []
        for local in range(int(counts[rank])):
            env = {**base, **srun_env, **step_environment(command, self.node, local), **held}
            how = ("pty" if mode == "pty" else "pipe") if first + local in readers else (
                "quiet" if mode == "pty" else "")
            try:
                task, feed = self._start(step, first + local, env, workdir, owner, how)
            except OSError as exc:
                self._start_failed(step, first + local, str(exc))
                break
            step.tasks.append(task)
            if feed is not None:
                feeds.append(feed)
        self._feed(step, feeds, terminal=mode == "pty")

    def _resources(self, command: dict[str, Any]) -> dict[str, str]:
        """The variables of what the step holds here (``LaunchStep.cpus``, ``gpus``): its
        CPUs as ``SLURM_CPUS_ON_NODE`` (slurmstepd's, from the step's cores), its GPUs —
        picked among the run's, the lowest no other step of the run holds (an ``--overlap``
        step's are the run's lowest, shared) — as ``CUDA_VISIBLE_DEVICES``,
        ``GPU_DEVICE_ORDINAL``, ``SLURM_STEP_GPUS`` and ``SLURM_GPUS_ON_NODE``. A step holding
        none of the run's GPUs (``--gres=none``) sees none (empty device lists: no device cgroup
        hides them here). A command of an older shard (no counts) leaves the run's."""
        env: dict[str, str] = {}
        if int(command.get("cpus") or 0) > 0:
            env["SLURM_CPUS_ON_NODE"] = str(command["cpus"])
        count = int(command.get("gpus", -1))
        run_ids = self.runs.gpus.held(command["run_sluid"])
        if count < 0 or not run_ids:
            return env
        taken = {i for sluid, (run, ids, shared) in self._gpus.items()
                 if run == command["run_sluid"] and not shared and sluid in self._steps
                 for i in ids}
        overlap = bool(command.get("overlap"))
        free = list(run_ids) if overlap else [i for i in run_ids if i not in taken]
        ids = tuple(sorted((free + [i for i in run_ids if i not in free])[:count]))
        self._gpus[str(command["step_sluid"])] = (command["run_sluid"], ids, overlap)
        text = ",".join(str(i) for i in ids)
        env.update(CUDA_VISIBLE_DEVICES=text, GPU_DEVICE_ORDINAL=text, SLURM_STEP_GPUS=text,
                   SLURM_GPUS_ON_NODE=str(len(ids)))
        return env

    def _start_failed(self, step: NodeStep, rank: int, why: str) -> None:
        """Task ``rank`` could not start: say it on srun's stderr and end the step (FAILED)."""
        if not step.failed_to_start:
            step.failed_to_start = f"task {rank} could not start: {why}"
            step.output.line(rank, 2, f"sluice: {step.failed_to_start}\n".encode(), wait=False)
        step.start_by = None
        self.kill(step.command["run_sluid"], step.command["step_sluid"], "FAILED")

    def _unreachable(self, step: NodeStep) -> None:
        """srun cannot be reached: the step's tasks are killed and its end says why, as
        slurmstepd fails a step whose srun it cannot connect to. A step that waited for the
        job's resources (``StepPending``) starts whenever the steps holding them end; its
        srun may be gone by then (killed, its session closed), and the step ran unattended."""
        address = step.command.get("io_address", "")
        log.warning("node %s: step %s.%s: srun at %s cannot be reached: its tasks are killed",
                    self.node, step.command.get("job_id"), step.command.get("step_id"), address)
        self.kill(step.command["run_sluid"], step.command["step_sluid"],
                  f"{SRUN_UNREACHABLE}: srun at {str(address)[:80]} cannot be reached from "
                  f"{self.node}")

    def _starting(self, step: NodeStep, now: float) -> None:
        """Read the supervisors' word on the tasks not confirmed yet (see the module
        docstring): all started, one could not, or the bound passed."""
        assert step.start_by is not None
        for task in step.tasks:
            if task.started is None:
                outcome = task.process.start_outcome()
                if outcome is not None:
                    task.started = not isinstance(outcome, OSError)
                    if isinstance(outcome, OSError):
                        self._start_failed(step, task.rank, str(outcome))
                        return
        if all(task.started for task in step.tasks):
            step.start_by = None
        elif now >= step.start_by:
            rank = next(task.rank for task in step.tasks if task.started is None)
            timeout = self.runs.scripts.start_timeout_s
            self._start_failed(step, rank, f"{START_TIMED_OUT}: the working directory did not "
                                           f"answer within {timeout:g} s")

    @staticmethod
    def _feed(step: NodeStep, fds: list[int], terminal: bool) -> None:
        """srun's stdin to ``fds`` (the tasks' pipes, or the pty's master), in a thread (which
        waits for the connection to srun: the loop does not)."""
        if fds:
            StepInput(step.output.incoming, fds, fds[0] if terminal else None).start()

    def _start(self, step: NodeStep, rank: int, env: dict[str, str], workdir: Path,
               owner: Owner, how: str) -> tuple[Task, int | None]:
        """Start task ``rank``: its output forwarded to srun; ``how`` it reads srun's stdin:
        "" not (``/dev/null``), "pipe", "pty" (stdin, stdout and stderr a pseudo-terminal),
        or "quiet" (not, and its output dropped: the other tasks of a ``--pty`` step, as
        Slurm's). Returns the task and the descriptor that feeds it (the caller's to close)."""
        if how == "pty":
            return self._start_terminal(step, rank, env, workdir, owner)
        command = step.command
        scope = RunScope(f"{command['run_sluid']}.{command['step_id']}.{rank}"[:64],
                         uids=frozenset({os.getuid(), owner.uid}))
        stdin_r, stdin_w = os.pipe() if how == "pipe" else (None, None)
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        target: int = subprocess.DEVNULL if how == "quiet" else -1
        try:
            process = Supervised.start(
                scope, list(command["command"]), env, workdir,
                out_w if target != subprocess.DEVNULL else target,
                err_w if target != subprocess.DEVNULL else target, self.state_dir,
                waiting=self._waiting, owner=owner.spec(), server=self.runs.server,
                stdin=stdin_r, fence_s=self.runs.fence_s, await_start=False,
                lease_s=self.runs.lease(), horizon_s=self.runs.horizon(command["run_sluid"]))
        except OSError:
            for fd in (out_r, err_r, stdin_w):
                if fd is not None:
                    os.close(fd)
            raise
        finally:
            for fd in (out_w, err_w, stdin_r):
                if fd is not None:
                    os.close(fd)
        pipes: list[IO[bytes]] = [os.fdopen(out_r, "rb", buffering=0),
                                  os.fdopen(err_r, "rb", buffering=0)]
        step.output.forward(rank, 1, pipes[0])
        step.output.forward(rank, 2, pipes[1])
        return Task(rank, process, pipes), stdin_w

    def _start_terminal(self, step: NodeStep, rank: int, env: dict[str, str], workdir: Path,
                        owner: Owner) -> tuple[Task, int]:
        """Task ``rank`` in a pseudo-terminal of its own (``srun --pty``), owned by the job's
        owner as a login's terminal is; returns the task and a duplicate of the master."""
        command = step.command
        scope = RunScope(f"{command['run_sluid']}.{command['step_id']}.{rank}"[:64],
                         uids=frozenset({os.getuid(), owner.uid}))
        master, slave = os.openpty()
        try:
            if owner.switch:  # a daemon that runs jobs as their owners (root)
                os.fchown(slave, owner.uid, -1)
                os.fchmod(slave, 0o620)
            terminal_env = {**env, "TERM": env.get("TERM") or "xterm"}
            process = Supervised.start(scope, list(command["command"]), terminal_env, workdir,
                                       slave, slave, self.state_dir, waiting=self._waiting,
                                       owner=owner.spec(), server=self.runs.server, stdin=slave,
                                       tty=True, fence_s=self.runs.fence_s,
                                       await_start=False, lease_s=self.runs.lease(),
                                       horizon_s=self.runs.horizon(command["run_sluid"]))
            feed = os.dup(master)
        except OSError:
            os.close(master)
            raise
        finally:
            os.close(slave)
        terminal = os.fdopen(master, "rb", buffering=0)
        step.output.forward_terminal(rank, terminal)
        return Task(rank, process, [terminal]), feed

    def kill(self, run_sluid: str, step_sluid: str, reason: str) -> None:
        """SIGTERM the step's tasks here (SIGKILL after the grace)."""
        step = self._steps.get(step_sluid)
        if step is None or step.command["run_sluid"] != run_sluid or step.deadline is not None:
            return
        step.kill_reason = reason
        step.deadline = time.monotonic() + self.kill_wait_s
        for task in step.tasks:
            if task.code is None:
                task.process.signal(signal.SIGCONT)
                task.process.signal(signal.SIGTERM)

    def feed(self, lease_s: float | None = None) -> None:
        """Feed every live task's lifeline (see ``RunTable.fence_s``), with the lease (its
        supervisor adds the run's horizon), but not the tasks of a run whose lease ran out
        (``RunTable.fence``: they die with it)."""
        for step in self._steps.values():
            if self.runs.lease_over(step.command["run_sluid"]):
                continue
            for task in step.tasks:
                if task.code is None:
                    task.process.feed(lease_s)

    def fence(self, detail: Callable[[float], str]) -> list[str]:
        """The steps of runs whose lease ran out (``RunTable.fence``: their tasks' supervisors
        are killing them, as the batch command's), not already being killed for another reason:
        marked fenced, their end reported so (``ReportStepExit.fenced``) with ``detail(horizon)``
        (the reason ``FENCED``). Returns the steps newly marked."""
        marked = []
        for step_sluid, step in self._steps.items():
            run_sluid = step.command["run_sluid"]
            if step.fenced or step.deadline is not None or not self.runs.lease_over(run_sluid):
                continue
            if all(task.code is not None and task.code not in _FENCE_CODES
                   for task in step.tasks):
                continue  # every task had ended by itself before the fence
            step.fenced = True
            step.kill_reason = detail(self.runs.horizon(run_sluid) or 0.0)
            marked.append(step_sluid)
        return marked

    def live_tasks(self, run_sluid: str, step_sluid: str = "") -> list[Supervised]:
        """The processes of the run's tasks (of one step, if named) that run here and are not
        being killed (signals)."""
        return [task.process for sluid, step in self._steps.items()
                if step.command["run_sluid"] == run_sluid and step.deadline is None
                and (not step_sluid or sluid == step_sluid)
                for task in step.tasks if task.code is None]

    def kill_run(self, run_sluid: str, reason: str) -> None:
        """The run is being killed: so are its steps."""
        for step_sluid, step in list(self._steps.items()):
            if step.command["run_sluid"] == run_sluid:
                self.kill(run_sluid, step_sluid, reason)

    def poll(self) -> None:
        """Collect ended tasks; report steps whose tasks have all ended; escalate kills."""
        now = time.monotonic()
        for step_sluid, step in list(self._steps.items()):
            if step.start_by is not None:
                self._starting(step, now)
            if (step.start_by is None and step.deadline is None and step.output.unreachable
                    and any(task.code is None for task in step.tasks)):
                self._unreachable(step)  # once its tasks' start is confirmed: said once
            for task in step.tasks:
                if task.code is None and (code := task.process.poll()) is not None:
                    task.code = code
                    step.output.ended(task.rank, code, task.pipes)
            if any(task.code is None for task in step.tasks):
                if step.deadline is not None and now >= step.deadline:
                    for task in step.tasks:
                        if task.code is None:
                            task.process.signal(signal.SIGKILL)
                    step.deadline = now + _KILL_REPEAT_S
                continue
            del self._steps[step_sluid]
            self._gpus.pop(step_sluid, None)
            self._finished(step)

    def watch(self, wakeups: Wakeups) -> None:
        """Add what :meth:`poll` must be called for: each live task's end, and a kill's SIGKILL
        time."""
        for step in self._steps.values():
            alive = [task for task in step.tasks if task.code is None]
            for task in alive:
                wakeups.process(task.process)
                if task.started is None and step.start_by is not None:
                    wakeups.readable(task.process.lifeline_fileno())
            if alive:
                wakeups.at(step.deadline)
                wakeups.at(step.start_by)

    def _finished(self, step: NodeStep) -> None:
        # a step that failed to start counts only the tasks known to have run or to have failed
        # to (127 or 126, as a shell's), not those killed before they could: their signal is
        # not the step's
        codes = [t.code or 0 for t in step.tasks
                 if t.started is not None or not step.failed_to_start]
        signals = [-c for c in codes if c < 0]
        exits = [c for c in codes if c > 0]
        exit_code = max(exits) if exits else (1 if step.failed_to_start else 0)
        detail = step.failed_to_start or (f"killed: {step.kill_reason}" if step.kill_reason
                                          else "")
        step.output.close()
        self._report("ReportStepExit", step.command, {
            "step_sluid": step.command["step_sluid"], "exit_code": exit_code,
            "signal": signals[0] if signals else 0, "detail": detail,
            **({"fenced": True} if step.fenced else {})})
        log.info("node %s: step %s.%s ended (exit %d)", self.node, step.command["job_id"],
                 step.command["step_id"], exit_code)

    def terminate_all(self) -> None:
        """On daemon shutdown: end every task (SIGTERM, SIGKILL after the grace)."""
        tasks = [t for s in self._steps.values() for t in s.tasks if t.code is None]
        for task in tasks:
            task.process.signal(signal.SIGCONT)
            task.process.signal(signal.SIGTERM)
        deadline = time.monotonic() + self.kill_wait_s
        for task in tasks:
            try:
                task.process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                task.process.signal(signal.SIGKILL)
        for step in self._steps.values():
            step.output.close()
        self._steps.clear()
        self._gpus.clear()
