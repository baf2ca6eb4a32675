"""A job's dependency as squeue (``%E``) and ``scontrol show job`` print it.

Slurm keeps in ``Dependency`` what is left to wait for, each item marked with its state:
``afterok:38(unfulfilled)``, ``afterok:38(failed)`` (``DependencyNeverSatisfied``); once the
dependency is satisfied it is cleared, ``(null)`` (``_depend_list2str`` in slurmctld's
``job_scheduler.c``). The views keep the dependency as submitted and the job's pending reason,
so the CLI shows: ``(null)`` for a job that has started (its dependency was met); a one-item
dependency of a pending job marked by its reason (``Dependency``: unfulfilled,
``DependencyNeverSatisfied``: failed); anything else as submitted (which items of several are
met, or whether a job pending for another reason, held or not yet eligible, has its dependency
met, is not in the row).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["shown_dependency"]

_ONE_ITEM = re.compile(r"(?:singleton|[a-z]+:[^:,?]+)")
_MARKS = {"Dependency": "(unfulfilled)", "DependencyNeverSatisfied": "(failed)"}


def shown_dependency(row: Mapping[str, Any]) -> str:
    """``row``'s ``Dependency`` as Slurm shows it (see the module's docstring)."""
    text = str(row.get("dependency") or "")
    if not text or int(row.get("start_ms") or 0) > 0:
        return "(null)"
    mark = _MARKS.get(str(row.get("reason") or ""), "") if row.get("state") == "PENDING" else ""
    if mark and _ONE_ITEM.fullmatch(text):
        return f"{text}{mark}"
    return text
