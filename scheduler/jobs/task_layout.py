"""How a job's ``-n`` tasks spread over its nodes, Slurm's way (pure).

Two rules, both Slurm's:

- :func:`spread_tasks` is the allocation (select/cons_tres's node evaluation, which gives each
  node in turn as many CPUs as it has free while leaving one for each node after it, then its
  task distribution): ``-N2 -n5`` on two idle 4-CPU nodes gets 4 tasks (4 CPUs) on the first
  node and 1 on the second, not 3 and 3;
- :func:`layout_tasks` is the launch (``_task_layout_block`` of ``slurm_step_layout.c``, and the
  batch step's ``SLURM_TASKS_PER_NODE``): tasks dealt to the nodes in turns while a node has
  CPUs for another, then in turns regardless (over-subscription); the tasks of a node are
  consecutive (block).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["layout_tasks", "spread_tasks"]


def spread_tasks(ntasks: int, rooms: Sequence[int]) -> list[int]:
    """Tasks per node for ``ntasks`` over nodes with room for ``rooms`` tasks each (in the
    allocation's order): each node takes what it has room for, leaving one task for each node
    after it; every node gets at least one task (``ntasks`` below the node count counts as
    one per node)."""
    count = len(rooms)
    remaining = max(ntasks, count)
    tasks: list[int] = []
    for position, room in enumerate(rooms):
        take = max(1, min(room, remaining - (count - position - 1)))
        tasks.append(take)
        remaining -= take
    return tasks


def layout_tasks(ntasks: int, cpus: Sequence[int], cpus_per_task: int = 1) -> list[int]:
    """Tasks per node for ``ntasks`` over nodes holding ``cpus`` CPUs each (Slurm's block
    layout: dealt in turns up to each node's ``cpus // cpus_per_task``, then in turns over
    every node); at least one task per node."""
    count = len(cpus)
    if not count:
        return []
    rooms = [max(c // max(cpus_per_task, 1), 1) for c in cpus]
    total = max(ntasks, count)
    tasks = [0] * count
    placed, turn, oversubscribe = 0, 0, False
    while placed < total:
        room_left = False
        for node in range(count):
            if placed >= total:
                break
            if turn < rooms[node] or oversubscribe:
                tasks[node] += 1
                placed += 1
                room_left = room_left or turn + 1 < rooms[node]
        if not room_left:
            oversubscribe = True
        turn += 1
    return tasks
