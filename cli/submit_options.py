"""sbatch options beyond the core ones of :mod:`cli.submit`: GPU requests in all of Slurm's
forms, ``--open-mode``, ``--kill-on-invalid-dep`` and the options Sluice accepts without acting
on them.

GPUs (:func:`gpu_request`): ``--gres=gpu``, ``gpu:N``, ``gpu:TYPE``, ``gpu:TYPE:N`` (per node;
no count is one GPU, as Slurm's gres parser; ``none`` is none), ``-G/--gpus=[TYPE:]N`` (the
whole job), ``--gpus-per-node=[TYPE:]N``, ``--gpus-per-task=[TYPE:]N`` (the job's GPUs are that
times its tasks, as ``--gpus``). A GRES other than ``gpu`` is refused: Sluice schedules GPUs
alone (licenses are ``-L``).

``--open-mode=append|truncate`` travels as Slurm's ``SLURM_OPEN_MODE`` (``a``/``t``) in the
job's environment, which slurmctld sets too and the node reads to open the output files
(:mod:`agents.node.supervise`): truncated unless ``a``, as Slurm's default (``JobFileAppend=0``).
An inherited ``SLURM_OPEN_MODE`` (sbatch run inside such a job) is dropped when no
``--open-mode`` is given, so the new job gets the default.

:data:`ACCEPTED` are sbatch options a batch script may carry that Sluice takes and ignores,
each for the reason given, so a script written for Slurm is not refused for them.
"""

from __future__ import annotations

import argparse
import re

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (issue 17)
if TYPE_CHECKING:
    from collections.abc import Mapping, MutableMapping
    from typing import Any

__all__ = ["ACCEPTED", "add_submit_options", "gpu_request", "memory_env", "open_mode_env"]

ACCEPTED: Mapping[tuple[str, ...], str] = {
    ("--hint",): "task binding hints: Sluice binds no task to cores or threads",
    ("-m", "--distribution"): "steps' tasks are spread by block (docs/slurm-compat.md)",
    ("--cpu-bind",): "no task is bound to CPUs",
    ("--mem-bind",): "no task is bound to memory",
    ("--ntasks-per-core",): "nodes are one thread a core (S:C:T 1:CPUS:1)",
    ("--threads-per-core",): "nodes are one thread a core",
    ("--cores-per-socket",): "sockets are not tracked",
    ("--sockets-per-node",): "sockets are not tracked",
    ("-B", "--extra-node-info"): "sockets, cores and threads are not tracked",
    ("--propagate",): "the node sets the job's limits (docs/node-daemon.md)",
    ("--wckey",): "no workload characterization keys",
    ("--acctg-freq",): "no accounting sampling",
    ("--profile",): "no profiling plugin",
    ("--gres-flags",): "GPUs are counted per node, no binding",
    ("--time-min",): "the job gets its --time (no shrinking to fit backfill)",
}
"""Options taken with a value and ignored, with why."""
ACCEPTED_FLAGS: Mapping[tuple[str, ...], str] = {
    ("--no-kill", "-k"): "a node failure ends the run as its requeue policy says",
    ("--get-user-env",): "the node gives every job a login's HOME, USER, SHELL and PATH",
    ("--overcommit", "-O"): "one CPU a task at least is counted",
    ("--spread-job",): "placement is the scheduler's (docs/scheduling.md)",
    ("--oversubscribe", "-s"): "jobs share nodes unless --exclusive (OverSubscribe=OK)",
}
"""Options without a value taken and ignored, with why (``--get-user-env``'s optional timeout
and mode, ``=10L``, are not taken: a value would be taken for the script's name; for the same
reason ``--propagate`` takes its value, ``--propagate=ALL`` for the bare form). ``--spread-job``
took a value, which sbatch's never does: ``sbatch --spread-job job.sh`` took the script's name
for it."""


def add_submit_options(parser: argparse.ArgumentParser) -> None:
    """Add the GPU forms, ``--open-mode`` and :data:`ACCEPTED` to ``submit``'s parser."""
    parser.add_argument("--gpus-per-task", default="", metavar="[TYPE:]N",
                        help="GPUs for each task (the job's: that times -n)")
    parser.add_argument("--open-mode", type=_open_mode, default=None,
                        help="append|truncate the output files (default truncate, as Slurm)")
    parser.add_argument("--kill-on-invalid-dep", type=_yes_no, default=False, metavar="yes|no",
                        help="yes: cancel the job once its dependency can never be satisfied; "
                             "no (default): it stays pending (DependencyNeverSatisfied)")
    for flags, why in ACCEPTED.items():
        parser.add_argument(*flags, default="", dest=f"ignored_{flags[-1][2:]}",
                            help=f"accepted, ignored: {why}")
    for flags, why in ACCEPTED_FLAGS.items():
        parser.add_argument(*flags, action="store_true", dest=f"ignored_{flags[0][2:]}",
                            help=f"accepted, ignored: {why}")


def _open_mode(text: str) -> str:
    """sbatch's ``--open-mode``: a word starting with ``a`` or ``t`` (any case), as
    ``arg_set_open_mode``."""
    if text[:1].lower() in ("a", "t"):
        return text[:1].lower()
    raise argparse.ArgumentTypeError(f"invalid --open-mode {text!r}: use append or truncate")


def _yes_no(text: str) -> bool:
    """sbatch's ``--kill-on-invalid-dep``: ``yes`` or ``no`` (any case), as Slurm's."""
    if text.lower() in ("yes", "no"):
        return text.lower() == "yes"
    raise argparse.ArgumentTypeError(f"invalid --kill-on-invalid-dep {text!r}: use yes or no")


def open_mode_env(mode: str, env: MutableMapping[str, str]) -> None:
    """Set the job environment's ``SLURM_OPEN_MODE`` to ``mode`` (``a``/``t``), or drop an
    inherited one when no mode was asked."""
    if mode:
        env["SLURM_OPEN_MODE"] = mode
    else:
        env.pop("SLURM_OPEN_MODE", None)


def memory_env(per_node_mb: int, per_cpu_mb: int, env: MutableMapping[str, str]) -> None:
    """sbatch's ``SLURM_MEM_PER_CPU`` (``--mem-per-cpu``) or ``SLURM_MEM_PER_NODE`` (``--mem``),
    which it sets in the environment the job takes (its ``opt.c``), so a job asked per CPU sees
    ``SLURM_MEM_PER_CPU`` and no ``SLURM_MEM_PER_NODE`` (the node sets that one from the
    allocation otherwise: ``agents/node/environment.py``). Inherited ones (sbatch inside a
    job) are dropped: they were the other job's."""
    env.pop("SLURM_MEM_PER_CPU", None)
    env.pop("SLURM_MEM_PER_NODE", None)
    if per_cpu_mb > 0:
        env["SLURM_MEM_PER_CPU"] = str(per_cpu_mb)
    elif per_node_mb > 0:
        env["SLURM_MEM_PER_NODE"] = str(per_node_mb)


_TYPE_NAME = re.compile(r"[A-Za-z0-9_.-]+", re.ASCII)
"""A GPU type's name (``a100``, ``h100-80gb``)."""


def _typed_count(option: str, text: str) -> tuple[int, str]:
    """``[TYPE:]N`` → (N, TYPE); ValueError when N is no whole number."""
    kind, _, number = str(text).rpartition(":")
    if not (number.isascii() and number.isdigit()) or not _TYPE_NAME.fullmatch(kind or "x"):
        raise ValueError(f"{option} {text!r}: expected [TYPE:]COUNT, a whole number of GPUs")
    return int(number), kind


def _gres(text: str) -> tuple[int, str]:
    """``--gres``: (GPUs per node, type) of ``gpu[:TYPE][:N]`` (``none``: no GPU)."""
    if text.lower() == "none":
        return 0, ""
    items = [item.strip() for item in text.split(",") if item.strip()]
    others = [item for item in items if item.split(":")[0] != "gpu"]
    if others or len(items) != 1:
        raise ValueError(f"--gres {text!r}: Sluice schedules the GRES gpu alone: gpu[:TYPE][:COUNT]"
                         + (f" ({others[0].split(':')[0]!r} is not one; licenses are -L)"
                            if others else ""))
    parts = items[0].split(":")
    if len(parts) > 3:
        raise ValueError(f"--gres {text!r}: expected gpu[:TYPE][:COUNT]")
    last = parts[-1] if len(parts) > 1 else ""
    if last.isascii() and last.isdigit():
        return int(last), (parts[1] if len(parts) == 3 else "")
    if len(parts) == 3 or not _TYPE_NAME.fullmatch(last or "x") or last.isdigit():
        raise ValueError(f"--gres {text!r}: the GPU count must be a whole number")
    return 1, last  # gpu, gpu:TYPE: one GPU, as Slurm


def gpu_request(args: argparse.Namespace, ntasks: int) -> tuple[int, str, int]:
    """(GPUs per node, GPU type, GPUs of the whole job) asked by ``--gres``, ``-G/--gpus``,
    ``--gpus-per-node`` and ``--gpus-per-task`` (ValueError for a malformed one, or two
    different types)."""
    per_node, kind = _typed_count("--gpus-per-node", args.gpus_per_node or "0")
    total, total_kind = _typed_count("-G/--gpus", args.gpus or "0")
    types = {kind, total_kind}
    if args.gres:
        per_node, gres_kind = _gres(args.gres)
        types.add(gres_kind)
    if getattr(args, "gpus_per_task", ""):
        per_task, task_kind = _typed_count("--gpus-per-task", args.gpus_per_task)
        total, types = per_task * max(ntasks, 1), {*types, task_kind}
    named = sorted(t for t in types if t)
    if len(named) > 1:
        raise ValueError(f"GPUs of two types asked ({', '.join(named)}): one type a job")
    return per_node, (named[0] if named else ""), total


def ignored(args: argparse.Namespace) -> dict[str, Any]:
    """The accepted-and-ignored options given (for tests and ``--verbose``)."""
    return {k[len("ignored_"):]: v for k, v in vars(args).items()
            if k.startswith("ignored_") and v}
