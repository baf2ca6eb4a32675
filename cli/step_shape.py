"""srun's step options inside a job: which of the job's resources the step asks for.

Slurm (20.11 and later) gives each step resources of its own within the job
(:mod:`scheduler.jobs.step_alloc` decides; these are what srun asks):

- ``--exact`` (also ``-c`` given, or ``--exclusive`` inside a job) → ``exact``: the step holds
  only the CPUs its tasks ask; without it, all the job's CPUs on its nodes (``--whole``,
  Slurm's default);
- ``--overlap`` → ``overlap``: it shares every resource with the other steps, starts at once;
- ``--mem`` → ``mem_per_node_mb``: held on each node, out of the job's;
- ``--gres=gpu[:type]:N``, ``--gpus-per-node``, ``-G`` (spread over the step's nodes) →
  ``gpus_per_node``; ``--gres=none``: 0; none given: -1, those the job asked;
- no ``-w`` → ``pick_nodes``: the shard picks free nodes of the job.

srun's input variables ``SLURM_EXACT`` and ``SLURM_OVERLAP`` act as ``--exact`` and
``--overlap`` (``--whole`` overrides ``SLURM_EXACT``).

Sluice differs: ``--mem-per-cpu`` does not count for a step (only ``--mem``), and a GPU type in
``--gres`` is not checked against the job's.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from typing import Any

__all__ = ["add_step_options", "gpus_asked", "step_shape"]


def add_step_options(p: Any) -> None:
    """srun's options that shape a step's share of its job."""
    p.add_argument("--exact", action="store_true",
                   help="the step holds only the CPUs its tasks ask (default: all the job's "
                        "CPUs on its nodes); implied by -c and by --exclusive inside a job")
    p.add_argument("--whole", action="store_true",
                   help="the step holds all the job's CPUs on its nodes (the default)")
    p.add_argument("--overlap", action="store_true",
                   help="share the job's CPUs, memory and GPUs with its other steps (start "
                        "at once)")


def gpus_asked(args: argparse.Namespace, nnodes: int) -> int:
    """GPUs the step asks on each node: ``--gres``, else ``--gpus-per-node``, else ``-G``
    spread over ``nnodes``; -1 when none is given (ValueError on a bad ``--gres``)."""
    gres = str(getattr(args, "gres", "") or "").strip()
    if gres.lower() == "none":
        return 0
    if gres:
        parts = gres.split(":")
        if parts[0] != "gpu" or len(parts) > 3:
            raise ValueError(f"--gres {gres!r}: expected gpu[:TYPE][:COUNT] or none")
        count = parts[-1] if len(parts) > 1 else "1"
        if len(parts) == 2 and not count.isdigit():  # gpu:TYPE means one of that type
            count = "1"
        if not (count.isascii() and count.isdigit()):
            raise ValueError(f"--gres {gres!r}: the GPU count must be a whole number")
        return int(count)
    per_node, total = _count(getattr(args, "gpus_per_node", 0)), _count(getattr(args, "gpus", 0))
    if per_node:
        return per_node
    if total:
        return -(-total // max(nnodes, 1))
    return -1


def _count(value: object) -> int:
    """A GPU count given as ``N`` or ``TYPE:N`` (0 when none)."""
    text = str(value or "0").rpartition(":")[2]
    if not (text.isascii() and text.isdigit()):
        raise ValueError(f"{value!r}: a GPU count is a whole number ([TYPE:]N)")
    return int(text)


def step_shape(args: argparse.Namespace, nnodes: int, pick_nodes: bool,
               env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The ``StartStep`` fields of the step's share (see the module docstring). srun's input
    variables count as its options: ``SLURM_EXACT`` (``--whole`` overrides it) and
    ``SLURM_OVERLAP`` set to anything."""
    env = os.environ if env is None else env
    exact = bool(getattr(args, "exact", False) or getattr(args, "exclusive", False)
                 or getattr(args, "cpus_per_task", 0)
                 or (env.get("SLURM_EXACT") and not getattr(args, "whole", False)))
    overlap = bool(getattr(args, "overlap", False) or env.get("SLURM_OVERLAP"))
    return {"exact": exact, "overlap": overlap,
            "pick_nodes": pick_nodes, "mem_per_node_mb": int(getattr(args, "mem", 0) or 0),
            "gpus_per_node": gpus_asked(args, nnodes)}
