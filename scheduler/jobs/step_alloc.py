"""A job step's share of its job's resources, as Slurm's stepmgr gives it (20.11 and later).

The job holds, on each of its nodes, CPUs, memory and GPUs (``Job.alloc``). Steps running at the
same time never share them unless one says ``--overlap``:

- **CPUs.** A step holds all the job's CPUs on each of its nodes (Slurm's default, ``--whole``),
  and so can start only on nodes where no other step holds any; with ``--exact`` (also ``-c``
  given, or ``--exclusive`` inside a job) it holds only what its tasks ask there (tasks x
  CPUs per task), taken from what the other steps leave.
- **Memory.** A step with ``--mem`` holds that much on each node, out of what the others leave
  of the job's (when the job holds memory); without it, it holds none (Slurm's ``--mem=0``:
  the job's memory, not taken from the others).
- **GPUs.** A step holds the GPUs it asks on each node (``--gres=gpu:N``; ``--gres=none``:
  none); asking none it holds those the job asked there, as Slurm copies the job's GRES request
  to the step (not the GPUs an ``--exclusive`` job got without asking: Slurm's steps get none
  of those unless they ask).
- **``--overlap``.** The step checks only what can never fit, holds nothing and starts at once.

:func:`place` answers for one step against the job's other steps: a :class:`Placement` (the
nodes, tasks and what it holds on each), :data:`BUSY` (it fits the job but not now: it
waits, Slurm's ``ESLURM_NODES_BUSY``, "Requested nodes are busy") or a :class:`Never` with
Slurm's error for a step that can never fit the job (``ESLURM_TOO_MANY_REQUESTED_CPUS``,
``ESLURM_INVALID_TASK_MEMORY``, ``ESLURM_INVALID_GRES``): refused at once.

When srun named no nodes (``pick_nodes``), the step gets as many of the job's nodes as it has
node counts, chosen in the run's node order, nodes where no step holds CPUs first (Slurm picks
idle nodes first): for each count in turn the first node that can take it. The chosen nodes
run in the run's order, each with its count (the counts in srun's order when they fit so).
Pure: no clock, and every choice follows the run's node order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from scheduler.records import StartStep, StepPending
from scheduler.shard.model import Job, Step

__all__ = ["BUSY", "Never", "Placement", "StepAsk", "ask_of", "held_by_steps", "hold",
           "place"]

BUSY = "Requested nodes are busy"
"""Slurm's words for a step that fits the job but not now (``ESLURM_NODES_BUSY``)."""

Share = tuple[int, int, int]
"""CPUs, memory (MB) and GPUs on one node."""


class StepRefusal:
    """Named reasons of a step that can never fit its job, with Slurm's words."""

    TOO_MANY_CPUS = ("TooManyRequestedCpus", "More processors requested than permitted")
    TASK_MEMORY = ("InvalidTaskMemory", "Memory required by task is not available")
    GRES = ("InvalidGres", "Invalid generic resource (gres) specification")


@dataclass(frozen=True, slots=True)
class StepAsk:
    """What a step asks of its job (a ``StartStep``, or the ``StepPending`` that holds it)."""

    nodes: tuple[str, ...]
    tasks_per_node: tuple[int, ...]
    cpus_per_task: int
    exact: bool = False
    overlap: bool = False
    pick_nodes: bool = False
    mem_mb: int = 0  # on each node; 0 = none asked
    gpus: int = -1  # on each node; -1 = none asked (the job's)


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a step runs and what it holds on each node (same order as ``nodes``)."""

    nodes: tuple[str, ...]
    tasks_per_node: tuple[int, ...]
    cpus: tuple[int, ...]
    mem_mb: tuple[int, ...]
    gpus: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Never:
    """A step that can never fit its job: the named reason and a detail in Slurm's words."""

    reason: str
    detail: str


def ask_of(req: StartStep | StepPending) -> StepAsk:
    """The step's ask, from its request (or the fact that keeps it while it waits)."""
    return StepAsk(nodes=tuple(req.nodes), tasks_per_node=tuple(req.tasks_per_node),
                   cpus_per_task=req.cpus_per_task, exact=req.exact, overlap=req.overlap,
                   pick_nodes=req.pick_nodes, mem_mb=req.mem_per_node_mb,
                   gpus=req.gpus_per_node)


def held_by_steps(steps: tuple[Step, ...] | list[Step]) -> dict[str, Share]:
    """Per node: what the running steps hold (``--overlap`` steps and waiting ones hold none;
    a step started before allocations were recorded holds none either)."""
    held: dict[str, list[int]] = {}
    for step in steps:
        if step.waiting is not None or step.overlap or len(step.cpus) != len(step.nodes):
            continue
        mem = step.mem_mb or (0,) * len(step.nodes)
        gpus = step.gpus or (0,) * len(step.nodes)
        for name, cpus, mb, gpu in zip(step.nodes, step.cpus, mem, gpus, strict=True):
            total = held.setdefault(name, [0, 0, 0])
            total[0] += cpus
            total[1] += mb
            total[2] += gpu
    return {name: (t[0], t[1], t[2]) for name, t in held.items()}


def hold(held: dict[str, Share], placement: Placement) -> None:
    """Add what a step just placed holds to ``held`` (:func:`held_by_steps`'s form), as
    :func:`held_by_steps` would count it once it runs (an ``--overlap`` step holds nothing:
    the caller does not add it)."""
    for name, cpus, mb, gpus in zip(placement.nodes, placement.cpus, placement.mem_mb,
                                    placement.gpus, strict=True):
        total = held.get(name, (0, 0, 0))
        held[name] = (total[0] + cpus, total[1] + mb, total[2] + gpus)


def place(job: Job, ask: StepAsk, steps: tuple[Step, ...] | list[Step], *,
          held: dict[str, Share] | None = None) -> Placement | Never | str:
    """Where ``ask`` runs in ``job`` now, beside ``steps`` (the job's other steps):
    a :class:`Placement`, :data:`BUSY`, or :class:`Never` (see the module docstring).
    ``held``: :func:`held_by_steps` of ``steps`` when the caller keeps it already (one walk of
    the steps for many asks, not one per ask)."""
    if len(job.alloc) != len(job.nodes):  # a run from before allocations were recorded
        return Placement(ask.nodes, ask.tasks_per_node,
                         tuple(t * ask.cpus_per_task for t in ask.tasks_per_node),
                         (0,) * len(ask.nodes), (0,) * len(ask.nodes))
    shares = dict(zip(job.nodes, job.alloc, strict=True))
    held = held_by_steps(steps) if held is None else held
    if ask.gpus < 0:  # none asked: the GPUs the job asked on each node (Slurm copies its GRES)
        ask = replace(ask, gpus=min(job.demand.gpus, *(share[2] for share in job.alloc)))
    if not ask.pick_nodes:
        for name, tasks in zip(ask.nodes, ask.tasks_per_node, strict=True):
            never = _never(job, name, shares[name], ask, tasks)
            if never is not None:
                return never
        if not all(_fits(shares[name], held.get(name, (0, 0, 0)), ask, tasks)
                   for name, tasks in zip(ask.nodes, ask.tasks_per_node, strict=True)):
            return BUSY
        return _placement(shares, ask, list(zip(ask.nodes, ask.tasks_per_node, strict=True)))
    return _picked(job, shares, held, ask)


def _picked(job: Job, shares: dict[str, Share], held: dict[str, Share],
            ask: StepAsk) -> Placement | Never | str:
    """``place`` for a step whose nodes the shard picks."""
    if len(ask.tasks_per_node) > len(job.nodes):
        return Never(StepRefusal.TOO_MANY_CPUS[0],
                     f"{StepRefusal.TOO_MANY_CPUS[1]}: {len(ask.tasks_per_node)} node(s) "
                     f"asked, job {job.job_id} has {len(job.nodes)}")
    never: list[Never] = []

    def fits_ever(name: str, tasks: int) -> bool:
        refusal = _never(job, name, shares[name], ask, tasks)
        if refusal is not None:
            never.append(refusal)
        return refusal is None

    if _choose(list(job.nodes), ask.tasks_per_node, fits_ever) is None:
        return never[0]
    idle = [n for n in job.nodes if held.get(n, (0, 0, 0))[0] == 0]
    busy = set(job.nodes).difference(idle)
    order = idle + [n for n in job.nodes if n in busy]

    def fits_now(name: str, tasks: int) -> bool:
        return (_never(job, name, shares[name], ask, tasks) is None
                and _fits(shares[name], held.get(name, (0, 0, 0)), ask, tasks))

    chosen = _choose(order, ask.tasks_per_node, fits_now)
    if chosen is None:
        return BUSY
    rank = {name: i for i, name in enumerate(job.nodes)}
    names = sorted((name for name, _ in chosen), key=rank.__getitem__)
    in_order = list(zip(names, ask.tasks_per_node, strict=True))
    if all(fits_now(name, tasks) for name, tasks in in_order):
        return _placement(shares, ask, in_order)
    return _placement(shares, ask, sorted(chosen, key=lambda pair: rank[pair[0]]))


def _choose(order: list[str], counts: tuple[int, ...], fits: Callable[[str, int], bool],
            ) -> list[tuple[str, int]] | None:
    """For each count in turn, the first node of ``order`` not taken that ``fits``; None when
    a count finds none. ``fits`` is asked once per node and count at most: a node passed over
    for a count (taken, or it did not fit) is passed over for that count again, so each count
    resumes where it stopped (an ``srun -N 1000`` in a 1,000-node job walked the taken nodes
    for every node it placed: cubic, 10 s of the shard's time; red team, 2026-12-07)."""
    taken: list[tuple[str, int]] = []
    names: set[str] = set()
    resume: dict[int, int] = {}
    for tasks in counts:
        i = resume.get(tasks, 0)
        while i < len(order) and (order[i] in names or not fits(order[i], tasks)):
            i += 1
        if i == len(order):
            return None
        resume[tasks] = i + 1
        taken.append((order[i], tasks))
        names.add(order[i])
    return taken


def _need(share: Share, ask: StepAsk, tasks: int) -> Share:
    """What the step holds on a node where the job holds ``share`` and it runs ``tasks``."""
    cpus = tasks * ask.cpus_per_task if ask.exact else share[0]
    mem = ask.mem_mb if share[1] > 0 else 0
    return cpus, mem, max(ask.gpus, 0)


def _never(job: Job, name: str, share: Share, ask: StepAsk, tasks: int) -> Never | None:
    """Why the step can never run ``tasks`` on ``name`` in ``job``, or None."""
    if tasks * ask.cpus_per_task > share[0]:
        return Never(StepRefusal.TOO_MANY_CPUS[0],
                     f"{StepRefusal.TOO_MANY_CPUS[1]}: {tasks} task(s) of {ask.cpus_per_task} "
                     f"CPU(s) on {name}, which holds {share[0]} CPU(s) of job {job.job_id}")
    if share[1] > 0 and ask.mem_mb > share[1]:
        return Never(StepRefusal.TASK_MEMORY[0],
                     f"{StepRefusal.TASK_MEMORY[1]}: --mem {ask.mem_mb}M on {name}, where job "
                     f"{job.job_id} holds {share[1]}M")
    if ask.gpus > share[2]:
        return Never(StepRefusal.GRES[0],
                     f"{StepRefusal.GRES[1]}: {ask.gpus} GPU(s) on {name}, where job "
                     f"{job.job_id} holds {share[2]}")
    return None


def _fits(share: Share, held: Share, ask: StepAsk, tasks: int) -> bool:
    """Whether the step can run ``tasks`` on a node now, beside what the others ``held``
    (an ``--overlap`` step always can; a whole step only where no step holds CPUs)."""
    if ask.overlap:
        return True
    need = _need(share, ask, tasks)
    if not ask.exact and held[0] > 0:
        return False
    return all(n <= s - h for n, s, h in zip(need, share, held, strict=True) if n > 0)


def _placement(shares: dict[str, Share], ask: StepAsk,
               pairs: list[tuple[str, int]]) -> Placement:
    needs = [_need(shares[name], ask, tasks) for name, tasks in pairs]
    return Placement(nodes=tuple(n for n, _ in pairs), tasks_per_node=tuple(t for _, t in pairs),
                     cpus=tuple(n[0] for n in needs), mem_mb=tuple(n[1] for n in needs),
                     gpus=tuple(n[2] for n in needs))
