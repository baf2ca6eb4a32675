"""``sluice alloc`` (salloc): obtain an allocation, run a command in it, give it back.

``sluice alloc [options] [command [args…]]`` does what salloc does:

1. a job of the asked shape (``-N``, ``-n``, ``-c``, ``--ntasks-per-node``, ``-w``, ``-J`` and
   the allocation options ``-t``, ``-p``, ``-A``, ``-q``, ``--mem``, ``--gres``, ``-G``…) is
   submitted, not requeued, whose batch script only holds the nodes (:data:`RELEASE_SCRIPT`,
   a shell waiting for salloc's signal);
2. it waits for the start ("Pending job allocation N", "Granted job allocation N");
3. the command (default: the user's shell, ``$SHELL``, else ``/bin/sh``) runs *here*, with
   the allocation's variables (``SLURM_JOB_ID``, ``SLURM_JOB_NODELIST``, ``SLURM_NNODES``,
   ``SLURM_NTASKS`` with ``-n``, ``SLUICE_JOB_SLUID``, ``SLURM_JOB_SLUID``…), so that
   ``srun``/``sluice run`` in it starts steps on the allocation's nodes; on a terminal the
   command runs in its own process group, given the terminal's foreground;
4. when the command exits, the allocation is given back ("Relinquishing job allocation N"):
   the holder is signalled (``SIGUSR1``: the job ends ``COMPLETED``; ``SIGUSR2`` after a
   failed command: ``FAILED``, exit code 1; no sooner than :data:`HOLDER_SETTLE_S` after the
   grant, and a cancel if the job has not ended 10 s later), and salloc exits with the
   command's status;
5. if the allocation ends first (time limit, ``scancel``, node failure), salloc says it was
   revoked and sends the command ``SIGHUP``.

Where Slurm differs: the job's exit code is 0 or 1 (Slurm's is the command's own), and a
salloc killed with ``SIGKILL`` leaves its allocation held until its time limit or a
``scancel`` (as Slurm's with its default ``InactiveLimit=0``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from cli.client import ApiError, Client
from streams.settings import Settings

__all__ = ["HOLDER_SETTLE_S", "RELEASE_SCRIPT", "add_parsers", "allocation_environment"]

RELEASE_SCRIPT = ("trap 'kill $! 2>/dev/null; exit 0' USR1; trap 'kill $! 2>/dev/null; exit 1' "
                  "USR2; while :; do sleep 86400 & wait $!; done")
"""salloc's allocation's batch script: hold the nodes until salloc signals, ``SIGUSR1`` (the
job ends with status 0) or ``SIGUSR2`` (1). A shell's traps are set a few microseconds after
it starts, long before salloc can have seen the job start and its command end; anything
else (the time limit's ``SIGTERM``, a cancel) ends it as it would any batch script."""
_PROG = "salloc"
Say = Callable[[str], None]
_REVOKE_POLL_S = 50.0  # one long poll for the allocation's end, below the views' limit
_RELEASE_WAIT_S = 10.0
HOLDER_SETTLE_S = 1.0
"""The least time between the grant and the release: the job's node starts the holder shell
a little after the shard has started the job (and a loaded node later still)."""


def add_parsers(sub: Any) -> None:
    """Register ``alloc``."""
    from cli.run_step import add_allocation_options

    p = sub.add_parser("alloc", help="obtain an allocation and run a command in it (like "
                       "salloc)", usage="sluice alloc [options] [command [args...]]")
    p.add_argument("-N", "--nodes", type=int, default=0)
    p.add_argument("-n", "--ntasks", type=int, default=0)
    p.add_argument("-c", "--cpus-per-task", type=int, default=0)
    p.add_argument("--ntasks-per-node", type=int, default=0)
    p.add_argument("-w", "--nodelist", default="", help="nodes the allocation must include")
    p.add_argument("-J", "--job-name", default="", help="default: the command's name")
    p.add_argument("-Q", "--quiet", action="store_true", help="say nothing but errors")
    add_allocation_options(p, "")
    p.add_argument("command", nargs=argparse.REMAINDER)
    p.set_defaults(run=_alloc)


def allocation_environment(job: Mapping[str, Any], args: argparse.Namespace,
                           base: Mapping[str, str]) -> dict[str, str]:
    """The command's environment: ``base`` with the allocation's Slurm variables (those
    salloc sets) and the SLUIDs ``sluice run`` finds its allocation by: the job's
    (``SLUICE_JOB_SLUID``) and the run's as Slurm names it (``SLURM_JOB_SLUID``), not
    ``SLUICE_RUN_SLUID``, the marker by which a node finds a run's processes to kill them
    (salloc's command is not the run's: on a host that is also a node, it must survive)."""
    from scheduler.topology.hostlist import compress

    nodes = [str(n) for n in job.get("nodes") or []]
    env = {k: v for k, v in base.items() if not k.startswith(("SLURM_", "SLUICE_JOB_",
                                                              "SLUICE_RUN_"))}
    env.update({
        "SLURM_JOB_ID": str(job["job_id"]), "SLURM_JOBID": str(job["job_id"]),
        "SLURM_JOB_SLUID": str(job["run_sluid"]),
        "SLUICE_JOB_SLUID": str(job["job_sluid"]),
        "SLURM_JOB_NAME": str(job.get("name") or ""),
        "SLURM_JOB_PARTITION": str(job.get("partition") or ""),
        "SLURM_JOB_ACCOUNT": str(job.get("account") or ""),
        "SLURM_JOB_QOS": str(job.get("qos") or ""),
        "SLURM_JOB_NODELIST": compress(nodes), "SLURM_NODELIST": compress(nodes),
        "SLURM_JOB_NUM_NODES": str(len(nodes)), "SLURM_NNODES": str(len(nodes)),
        "SLURM_SUBMIT_DIR": str(Path.cwd()), "SLURM_SUBMIT_HOST": socket.gethostname(),
    })
    if args.ntasks:
        env["SLURM_NTASKS"] = env["SLURM_NPROCS"] = str(args.ntasks)
    if args.cpus_per_task:
        env["SLURM_CPUS_PER_TASK"] = str(args.cpus_per_task)
    if args.ntasks_per_node:
        env["SLURM_NTASKS_PER_NODE"] = str(args.ntasks_per_node)
    env.update(_layout(job, nodes, args))
    return env


def _layout(job: Mapping[str, Any], nodes: list[str], args: argparse.Namespace
            ) -> dict[str, str]:
    """salloc's ``SLURM_JOB_CPUS_PER_NODE`` (what each node gave: ``4,1`` for ``-N2 -n5`` on
    4-CPU nodes) and ``SLURM_TASKS_PER_NODE`` (``-n`` tasks, else one per CPU over
    ``-c``, laid out as srun's block layout), when the views say what each node gave."""
    from agents.node.environment import slurm_counts
    from scheduler.jobs.task_layout import layout_tasks

    alloc = job.get("alloc") or {}
    cpus = [int((alloc.get(n) or [0])[0]) for n in nodes]
    if not nodes or not all(cpus):
        return {}
    per_task = max(int(args.cpus_per_task or 1), 1)
    ntasks = int(args.ntasks or 0) or max(sum(cpus) // per_task, len(nodes))
    return {"SLURM_JOB_CPUS_PER_NODE": slurm_counts(cpus),
            "SLURM_TASKS_PER_NODE": slurm_counts(layout_tasks(ntasks, cpus, per_task))}


def _alloc(args: argparse.Namespace, settings: Settings) -> int:
    from cli.run_alloc import (
        NOT_IMMEDIATE,
        NotImmediateError,
        allocate,
        allocation_argv,
        fail,
        signals_interrupt,
        wait_started,
    )
    from cli.run_step import immediate_seconds

    try:
        immediate = immediate_seconds(args)
    except ValueError as exc:
        return fail(_PROG, str(exc), 2)
    command = list(args.command[1:] if args.command[:1] == ["--"] else args.command)
    command = command or [os.environ.get("SHELL") or "/bin/sh"]
    if min(args.ntasks, args.nodes, args.ntasks_per_node, args.cpus_per_task) < 0:
        return fail(_PROG, "counts cannot be negative", 2)
    if os.environ.get("SLUICE_JOB_SLUID") and not args.quiet:
        print(f"{_PROG}: warning: already inside allocation "
              f"{os.environ.get('SLURM_JOB_ID', '')}: a new one is made", file=sys.stderr)
    args.export = "NONE"
    with signals_interrupt():  # SIGTERM, SIGHUP… while pending revoke it, as Ctrl-C
        made = allocate(allocation_argv(args, command, RELEASE_SCRIPT), settings, _PROG)
    if isinstance(made, int):
        return made
    client, decision = made

    def say(text: str) -> None:
        if not args.quiet:
            print(f"{_PROG}: {text}", file=sys.stderr)

    say(f"Pending job allocation {decision.job_id}")
    try:
        with signals_interrupt():
            job = wait_started(client, decision.job_sluid, decision.job_id, _PROG, args.quiet,
                               give_up_s=immediate)
    except NotImmediateError:
        _give_back(client, decision.job_sluid, 1, cancel_only=True)
        return fail(_PROG, NOT_IMMEDIATE)
    except KeyboardInterrupt:
        job = None
    if job is None:  # interrupted, or the views failed: the pending allocation is cancelled
        _give_back(client, decision.job_sluid, 1, cancel_only=True)
        say(f"Job allocation {decision.job_id} has been revoked.")
        return 1
    if job["state"] != "RUNNING":
        return fail(_PROG, f"job {decision.job_id} ended {job['state']} before it started"
                    f"{': ' + job['reason'] if job.get('reason') else ''}")
    say(f"Granted job allocation {decision.job_id}")
    granted_at = time.monotonic()
    revoked = threading.Event()
    status = _run_command(command, allocation_environment(job, args, os.environ), settings,
                          job, say, revoked)
    if not revoked.is_set():
        say(f"Relinquishing job allocation {decision.job_id}")
        _give_back(client, decision.job_sluid, status, granted_at=granted_at)
    return status


def _run_command(command: list[str], env: dict[str, str], settings: Settings,
                 job: Mapping[str, Any], say: Say, revoked: threading.Event) -> int:
    """Run ``command`` to its end (the terminal's foreground if there is one) while a thread
    watches for the allocation ending first (``revoked`` set); its exit status, 128 + a
    signal."""
    interactive = _foreground_terminal()
    try:
        child = subprocess.Popen(command, env=env, process_group=0 if interactive else None)
    except OSError as exc:
        say(f"error: {command[0]}: {exc.strerror or exc}")
        return 127 if isinstance(exc, FileNotFoundError) else 126
    if interactive:
        _give_terminal(child.pid)
    ended = threading.Event()
    watcher = threading.Thread(target=_watch_revocation,
                               args=(settings, job, child, ended, revoked, say, interactive),
                               daemon=True)
    watcher.start()
    with _forwarding(child, interactive):
        code = child.wait()
    ended.set()
    if interactive:
        _reclaim_terminal()
    return code if code >= 0 else 128 - code


def _watch_revocation(settings: Settings, job: Mapping[str, Any], child: subprocess.Popen[bytes],
                      ended: threading.Event, revoked: threading.Event, say: Say, group: bool,
                      ) -> None:
    """Long-poll the allocation's end; if it ends while the command runs, say so and send the
    command SIGHUP (salloc's "Job allocation N has been revoked")."""
    client = Client(settings)
    sluid = str(job["job_sluid"])
    while not ended.is_set():
        try:
            found = client.decisions([sluid], _REVOKE_POLL_S, ended=True).get(sluid)
        except (ApiError, OSError):
            if ended.wait(2.0):
                return
            continue
        if found is None or "job" not in found or ended.is_set():
            continue
        revoked.set()
        say(f"Job allocation {job['job_id']} has been revoked.")
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if group:
                os.killpg(child.pid, signal.SIGHUP)
            else:
                child.send_signal(signal.SIGHUP)
        return


@contextlib.contextmanager
def _forwarding(child: subprocess.Popen[bytes], interactive: bool) -> Iterator[None]:
    """While the command runs: the terminal's interrupts are the command's (salloc stays),
    SIGTERM and SIGHUP are passed on to it."""
    def ignore(signum: int, frame: Any) -> None:
        del signum, frame

    def forward(signum: int, frame: Any) -> None:
        del frame
        with contextlib.suppress(ProcessLookupError):
            if interactive:
                os.killpg(child.pid, signum)
            else:
                child.send_signal(signum)

    handlers = {signal.SIGINT: ignore, signal.SIGQUIT: ignore, signal.SIGTERM: forward,
                signal.SIGHUP: forward}
    old = {sig: signal.signal(sig, handler) for sig, handler in handlers.items()}
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


def _give_back(client: Client, job_sluid: str, status: int, cancel_only: bool = False,
               granted_at: float = 0.0) -> None:
    """End the allocation: the holder's release signal (the job ends COMPLETED, or FAILED
    after a failed command), then a wait for its end; a cancel when the job never started or
    did not end within the wait (the signal refused, or lost: a node drops a signal for a run
    whose batch shell it has not started yet)."""
    from cli.submit import real_user

    cancel = {"job_sluid": job_sluid, "user": real_user()}
    try:
        if not cancel_only:
            # the shard starts the job before its node does: a release sent at once could
            # reach a shell that has not set its traps (a command that ends at once)
            time.sleep(max(0.0, granted_at + HOLDER_SETTLE_S - time.monotonic()))
            release = signal.SIGUSR1 if status == 0 else signal.SIGUSR2
            client.send(job_sluid, "CancelJob", {**cancel, "signal": int(release),
                                                 "signal_scope": "BATCH"})
            if client.decisions([job_sluid], _RELEASE_WAIT_S, ended=True).get(job_sluid):
                return
        client.send(job_sluid, "CancelJob", cancel)
    except (ApiError, ValueError) as exc:
        print(f"{_PROG}: error: could not give the allocation back: {exc}; "
              f"scancel {job_sluid}", file=sys.stderr)


def _foreground_terminal() -> bool:
    """Whether this process has a terminal and is in its foreground."""
    try:
        return os.isatty(0) and os.tcgetpgrp(0) == os.getpgrp()
    except OSError:
        return False


def _give_terminal(pgid: int) -> None:
    """Make the command's process group the terminal's foreground, then wake it: a shell
    that looked before this and found itself in the background stopped itself (SIGTTIN)."""
    old = signal.signal(signal.SIGTTOU, signal.SIG_IGN)
    try:
        os.tcsetpgrp(0, pgid)
        os.killpg(pgid, signal.SIGCONT)
    except OSError:
        pass
    finally:
        signal.signal(signal.SIGTTOU, old)


def _reclaim_terminal() -> None:
    """Take the terminal's foreground back once the command has ended."""
    old = signal.signal(signal.SIGTTOU, signal.SIG_IGN)
    try:
        os.tcsetpgrp(0, os.getpgrp())
    except OSError:
        pass
    finally:
        signal.signal(signal.SIGTTOU, old)
