"""Which of a node's GPUs each run holds: the indices behind ``CUDA_VISIBLE_DEVICES``.

The shard allocates GPU *counts* per node (``LaunchRun.alloc_gpus``); the node picks the
devices, as slurmd's gres plugin binds them: the lowest indices no other run on the node holds.
Indices are given back when the run leaves the node. A count larger than the free devices (a
node that registered fewer GPUs than it has, a restarted daemon that lost its bindings) gets the
lowest free ones and then the lowest indices, so a run never sees a device the node lacks.
"""

from __future__ import annotations

__all__ = ["GpuSlots"]


class GpuSlots:
    """The GPU indices of one node and the runs holding them."""

    def __init__(self, total: int) -> None:
        self.total = max(total, 0)
        self._held: dict[str, tuple[int, ...]] = {}

    def bind(self, run_sluid: str, count: int) -> tuple[int, ...]:
        """The indices ``run_sluid`` holds (chosen on its first call)."""
        if run_sluid in self._held:
            return self._held[run_sluid]
        count = min(max(count, 0), self.total)
        taken = {i for ids in self._held.values() for i in ids}
        free = [i for i in range(self.total) if i not in taken]
        chosen = (free + [i for i in range(self.total) if i in taken])[:count]
        ids = tuple(sorted(chosen))
        self._held[run_sluid] = ids
        return ids

    def held(self, run_sluid: str) -> tuple[int, ...]:
        """The indices ``run_sluid`` holds (() when none)."""
        return self._held.get(run_sluid, ())

    def free(self, run_sluid: str) -> None:
        """The run left the node: its devices are free again."""
        self._held.pop(run_sluid, None)
