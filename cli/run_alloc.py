"""``sluice run`` outside a job: srun's own allocation, then the step in it.

Outside an allocation, srun "creates a job allocation if needed" and runs its command as the
allocation's first step; the allocation ends with the step. Here:

1. a job is submitted with srun's shape (``-N``, ``-n``, ``-c``, ``--ntasks-per-node``,
   ``-w``, ``-J`` and the allocation options ``-t``, ``-p``, ``-A``, ``-q``, ``--mem``,
   ``--gres``, ``-G``, ``-C``, ``-x``, ``--exclusive``), not requeued, with no output files,
   whose batch script only holds the allocation (:mod:`cli.alloc_hold`): it waits until the
   run's first step has ended and exits with that step's status, so the job ends ``COMPLETED``
   or ``FAILED`` as its step did;
2. srun waits for the job to start (``GET /v1/decisions?until=started``, a long poll), saying
   so when it is queued, as srun does;
3. the step starts as inside any allocation (:func:`cli.run_step.start_step`): the tasks'
   output comes to this terminal, their exit status is srun's;
4. an interrupt (Ctrl-C) while the allocation is pending cancels the job; once the step runs,
   srun passes signals on to its tasks and two Ctrl-C within a second abort the step and
   cancel the job (:mod:`cli.step_signals`).

Unlike Slurm, the allocation shows a ``.batch`` step (the holder) beside ``.0`` in history.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from cli.arg_parser import Parser
from cli.client import ApiError, Client, Decision, RequestTooLargeError
from streams.settings import Settings

__all__ = ["HOLD_SCRIPT", "NOT_IMMEDIATE", "NotImmediateError", "allocate", "allocation_argv",
           "cancel", "fail", "run_allocated", "signals_interrupt", "wait_started"]

HOLD_SCRIPT = 'exec "${SLUICE_PYTHON:-python3}" -I -m cli.alloc_hold'
"""srun's allocation's batch script: wait for the first step, exit with its status."""

_START_POLL_S = 55.0  # below the views' limit of a long poll
_FIRST_LOOK_S = 1.0
"""How long the first look waits for the start before saying the job is queued: Slurm's srun
says so as soon as its allocation request comes back pending (the controller tried once); the
shard's first pass after the acceptance takes milliseconds, so a job that can start says
nothing, and one that cannot is told within a second, not after a whole long poll."""


def allocation_argv(args: argparse.Namespace, command: list[str], script: str = HOLD_SCRIPT,
                    export: str = "") -> list[str]:
    """``sluice submit`` arguments for an allocation of ``command`` (its shape, its
    allocation options, ``script`` holding it as the batch script; ``export`` the holder's
    environment, by default the caller's ``--export``)."""
    argv = ["-J", args.job_name or Path(command[0]).name, "--no-requeue",
            "-o", "/dev/null", "-e", "/dev/null", "--export", export or args.export]
    if args.nodes:
        argv += ["-N", str(args.nodes)]
    if args.ntasks:
        argv += ["-n", str(args.ntasks)]
    for flag, value in (("-c", args.cpus_per_task), ("--ntasks-per-node", args.ntasks_per_node),
                        ("-w", args.nodelist), ("-t", args.time), ("-p", args.partition),
                        ("-A", args.account), ("-q", args.qos), ("--mem", args.mem),
                        ("--gres", args.gres), ("-G", args.gpus), ("-C", args.constraint),
                        ("-x", args.exclude), ("--gpus-per-node", args.gpus_per_node),
                        ("--mem-per-cpu", args.mem_per_cpu)):
        if value:
            argv += [flag, str(value)]
    if args.exclusive:
        argv.append("--exclusive")
    return [*argv, "--wrap", script]


NOT_IMMEDIATE = "Unable to allocate resources: Requested nodes are busy"
"""srun's and salloc's words when ``-I`` gives up (Slurm's ESLURM_NODES_BUSY, exit 1)."""


class NotImmediateError(Exception):
    """The allocation did not start within ``-I/--immediate``'s seconds."""


_CANCELLING = (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2,
               signal.SIGALRM)
"""Signals that, besides Ctrl-C, revoke the allocation srun or salloc is waiting for, as
Slurm's (``_signal_while_allocating``: all of these but SIGCONT)."""


@contextlib.contextmanager
def signals_interrupt() -> Iterator[None]:
    """While srun or salloc waits for its allocation, the :data:`_CANCELLING` signals raise
    KeyboardInterrupt, so they cancel it as Ctrl-C does. Before, they ended the process and
    left the job queued; once started, srun's holder (:mod:`cli.alloc_hold`), waiting for a
    step that never came, kept its nodes until the time limit (``timeout 8 srun …`` on a busy
    cluster: a job RUNNING with no step, seen 2026-12-08). A signal the caller ignores
    (``nohup``: SIGHUP) stays ignored."""
    def interrupt(number: int, frame: object) -> None:
        del number, frame
        raise KeyboardInterrupt

    old: dict[signal.Signals, Any] = {}
    for sig in _CANCELLING:
        try:
            if signal.getsignal(sig) is signal.SIG_DFL:
                old[sig] = signal.signal(sig, interrupt)
        except ValueError:  # not the main thread: as before
            break
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


def allocate(argv: list[str], settings: Settings, prog: str) -> tuple[Client, Decision] | int:
    """Submit the allocation ``argv`` (:func:`allocation_argv`) and return the client and
    the shard's acceptance, or the exit status after saying why it was not made."""
    from cli.export import seal_spec_env
    from cli.submit import build_spec, spec_problem, with_script

    parser = _submit_parser(prog)
    try:
        submit_args = with_script(parser.parse_args(argv))
        spec = seal_spec_env(build_spec(submit_args), settings)
    except (ValueError, SystemExit) as exc:
        return fail(prog, str(exc) if isinstance(exc, ValueError) else "bad allocation options",
                    2)
    problem = spec_problem(spec)
    if problem:
        return fail(prog, f"Unable to allocate resources: {problem}")
    client = Client(settings)
    try:
        decision = client.submit(spec)
    except KeyboardInterrupt:  # Ctrl-C before the answer: whatever was sent is cancelled
        for job_sluid in client.submitted:
            cancel(client, job_sluid, prog)
        print(f"{prog}: Job allocation has been revoked.", file=sys.stderr)
        return 130
    except RequestTooLargeError as exc:
        return fail(prog, f"{exc}; export fewer variables (--export)", 2)
    except (ApiError, ValueError) as exc:
        return fail(prog, str(exc))
    if not decision.accepted:
        if decision.state == "UNKNOWN":
            return fail(prog, f"no answer about the allocation within the wait; it may still "
                        f"be queued: sluice show job {decision.job_sluid}")
        return fail(prog, f"Unable to allocate resources: {decision.detail} "
                    f"[{decision.reason}]")
    return client, decision


def run_allocated(args: argparse.Namespace, settings: Settings, command: list[str]) -> int:
    """srun outside a job: allocate, run the step, give the allocation back with it."""
    from cli.run_step import immediate_seconds

    try:
        args.give_up_s = immediate_seconds(args)
    except ValueError as exc:
        return fail("srun", str(exc), 2)
    with signals_interrupt():
        made = allocate(allocation_argv(args, command), settings, "srun")
    if isinstance(made, int):
        return made
    client, decision = made
    try:
        with signals_interrupt():  # until the step runs: then srun passes them on (StepSignals)
            return _in_allocation(args, client, decision.job_sluid, decision.job_id, command)
    except NotImmediateError:
        cancel(client, decision.job_sluid, "srun")
        return fail("srun", NOT_IMMEDIATE)
    except KeyboardInterrupt:
        cancel(client, decision.job_sluid, "srun")
        print(f"srun: Force Terminated JobId={decision.job_id}", file=sys.stderr)
        return 130


def _submit_parser(prog: str = "srun") -> argparse.ArgumentParser:
    """``sluice submit``'s own parser (the same options, types and checks)."""
    from cli.submit import add_parsers

    root = Parser(prog=prog, add_help=False)
    sub = root.add_subparsers()
    add_parsers(sub)
    parser: argparse.ArgumentParser = sub.choices["submit"]
    return parser


def _in_allocation(args: argparse.Namespace, client: Client, job_sluid: str, job_id: int,
                   command: list[str]) -> int:
    from cli.run_step import start_step
    from cli.step_signals import StepSignals

    job = wait_started(client, job_sluid, job_id, "srun", give_up_s=args.give_up_s)
    if job is None:
        return 1
    if job["state"] != "RUNNING":
        return fail("srun", f"job {job_id} ended {job['state']} before its step started"
                    f"{': ' + job['reason'] if job.get('reason') else ''}")
    step_args = argparse.Namespace(**{**vars(args), "nodes": 0, "nodelist": ""})
    signals = StepSignals(args.quit_on_interrupt)
    # the job's tasks, at least one per node, as its SLURM_NTASKS says (srun -N2: two tasks)
    tasks = max(int(job.get("ntasks") or 0), len(job.get("nodes") or ()))
    status = start_step(step_args, client, job, str(job["run_sluid"]), command, tasks,
                        args.cpus_per_task or 1, signals)
    if signals.aborted:  # two Ctrl-C: the allocation goes with its step, CANCELLED
        cancel(client, job_sluid, "srun")
        print(f"srun: Force Terminated JobId={job_id}", file=sys.stderr)
        return 130
    return status


def wait_started(client: Client, job_sluid: str, job_id: int, prog: str, quiet: bool = False,
                 give_up_s: float | None = None) -> dict[str, Any] | None:
    """The job's row once it has started (or ended without starting); ``prog`` says when it
    is queued and when it has its resources, unless ``quiet``. ``give_up_s`` (``-I``): raise
    NotImmediateError when it has not started by then (at least the first look's second: the
    shard's first pass after the acceptance decides a job that can start at once)."""
    said = False
    deadline = None if give_up_s is None else time.monotonic() + max(give_up_s, _FIRST_LOOK_S)
    while True:
        longest = _START_POLL_S if said else _FIRST_LOOK_S
        wait = min(longest, max(client.contact.left(), 1.0))  # a silent system: in time
        if deadline is not None:
            if time.monotonic() >= deadline:
                raise NotImmediateError
            wait = min(wait, max(deadline - time.monotonic(), 0.05))
        query = urllib.parse.urlencode({"ids": job_sluid, "wait": f"{wait:.3f}",
                                        "until": "started"})
        try:
            answer = client.get(f"/v1/decisions?{query}", timeout_s=wait + 10)
        except ApiError as exc:
            fail(prog, str(exc))
            return None
        lost = client.contact.lost()
        if lost is not None:  # the views answer from what they last read: nothing moves
            fail(prog, lost)
            return None
        found = answer["decisions"].get(job_sluid)
        if found and "job" in found:
            if said and not quiet:
                print(f"{prog}: job {job_id} has been allocated resources", file=sys.stderr)
            return dict(found["job"])
        if not said and not quiet and give_up_s != 0:  # -I: slurmctld refuses it at once
            print(f"{prog}: job {job_id} queued and waiting for resources", file=sys.stderr)
        said = True


def cancel(client: Client, job_sluid: str, prog: str) -> None:
    """Cancel the allocation (its tasks are killed), saying so only when that fails."""
    from cli.submit import real_user

    try:
        client.send(job_sluid, "CancelJob", {"job_sluid": job_sluid, "user": real_user()})
    except (ApiError, ValueError) as exc:
        fail(prog, f"could not cancel the allocation: {exc}")


def fail(prog: str, message: str, status: int = 1) -> int:
    """Say ``prog: error: message`` as Slurm's commands do; returns ``status``."""
    print(f"{prog}: error: {message}", file=sys.stderr)
    return status
