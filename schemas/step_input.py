"""A step's ``input`` (srun's ``--input`` and ``--pty``), as srun, the shard and the node daemon
read it: ``all`` (every task), ``none``, ``pty`` (task 0 in a pseudo-terminal), a task id, or ""
(a request from before the field: as ``none``)."""

from __future__ import annotations

__all__ = ["NAMED_INPUTS", "input_task"]

NAMED_INPUTS = frozenset({"", "none", "all", "pty"})
"""The inputs that are no task id."""

_TASK_DIGITS = 6
"""A task id has at most this many digits (a step has at most 4,096 tasks a node)."""


def input_task(value: str) -> int | None:
    """The task id ``value`` names (decimal ASCII digits), else None."""
    if value.isdecimal() and value.isascii() and len(value) <= _TASK_DIGITS:
        return int(value)
    return None
