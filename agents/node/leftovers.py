"""What a node daemon remembers of its runs across its own death, and the sweep at start.

``<state_dir>/runs/<run_sluid>`` is written before the first process of a run starts and
removed once nothing of the run is left; it holds the run's cgroup (if any). A daemon that
starts again owns no run (the scheduler ends the old ones as a node failure), so before it
registers, :func:`sweep_leftovers` kills every process of every recorded run, and of every
``run-*`` cgroup under the node's cgroup directory, found by cgroup and by run marker.
"""

from __future__ import annotations

import contextlib
import json
import logging
from pathlib import Path

from agents.node.proctrack import CgroupTree, RunScope, remove_cgroup, safe_name

__all__ = ["RunRecords", "sweep_leftovers"]

log = logging.getLogger(__name__)


class RunRecords:
    """The small local record of the runs this daemon started processes for."""

    def __init__(self, state_dir: Path) -> None:
        self.directory = state_dir / "runs"

    def add(self, scope: RunScope) -> None:
        """Record a run (atomically: a half-written record is never read)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / scope.run_sluid
        temporary = path.with_name(f".{scope.run_sluid}.tmp")
        temporary.write_text(json.dumps({
            "run_sluid": scope.run_sluid, "cgroup": str(scope.cgroup or ""),
            "cgroup_name": scope.cgroup_name,
            "uids": None if scope.uids is None else sorted(scope.uids)}) + "\n")
        temporary.replace(path)

    def remove(self, run_sluid: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            (self.directory / run_sluid).unlink()

    def scopes(self) -> list[RunScope]:
        """Every recorded run (an unreadable record still names its run by its file name)."""
        found: list[RunScope] = []
        with contextlib.suppress(FileNotFoundError):
            for path in sorted(self.directory.iterdir()):
                if not safe_name(path.name):
                    continue
                try:
                    data = json.loads(path.read_text())
                    cgroup = str(data.get("cgroup") or "")
                    uids = data.get("uids")  # none in a record of an earlier release
                    found.append(RunScope(path.name, Path(cgroup) if cgroup else None,
                                          str(data.get("cgroup_name") or ""),
                                          None if uids is None
                                          else frozenset(int(uid) for uid in uids)))
                except (OSError, ValueError, AttributeError, TypeError):
                    found.append(RunScope(path.name))
        return found


def sweep_leftovers(records: RunRecords, cgroups: CgroupTree | None,
                    timeout_s: float = 10.0) -> list[str]:
    """Kill whatever is left of earlier runs; returns the run SLUIDs that had processes left.

    A run whose processes outlive ``timeout_s`` (uninterruptible sleep) keeps its record, so
    the next start tries again; its cgroup stays until it is empty.
    """
    scopes = {scope.run_sluid: scope for scope in records.scopes()}
    if cgroups is not None:
        for run_sluid in cgroups.runs():
            scopes.setdefault(run_sluid, cgroups.scope(run_sluid))
    had_processes: list[str] = []
    for run_sluid, scope in sorted(scopes.items()):
        if scope.pids():
            had_processes.append(run_sluid)
        if not scope.kill_all(timeout_s):
            log.error("run %s: processes left that SIGKILL does not end: %s", run_sluid,
                      sorted(scope.pids()))
            continue
        if scope.cgroup is not None:
            remove_cgroup(scope.cgroup)
        records.remove(run_sluid)
    return had_processes
