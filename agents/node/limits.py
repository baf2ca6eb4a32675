"""CPU and memory limits of a run's cgroup v2 (``cpu.max``, ``memory.max``), where the host
allows them.

The run's allocation on this node comes in its ``LaunchRun`` (``cpus``, ``mem_mb``). The limits
need the ``cpu`` and ``memory`` controllers enabled down to the run's cgroup: the daemon enables
them in its node directory's ``cgroup.subtree_control`` (the node directory holds no process),
which works only when every ancestor delegates them (root, or systemd ``Delegate=yes``). Where
they are not available — no cgroup v2 (``--proctrack pgid``), a hybrid host whose controllers
are bound to cgroup v1, an ancestor that does not delegate them — the run runs without limits
and :func:`apply_limits` says why (the daemon logs it once per reason).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["apply_limits"]

_PERIOD_US = 100_000


def _controllers(path: Path) -> set[str]:
    try:
        return set((path / "cgroup.controllers").read_text().split())
    except OSError:
        return set()


def apply_limits(run_dir: Path, cpus: int, mem_mb: int) -> str:
    """Write the run's limits; "" when every asked-for limit is in force, else why not."""
    wanted = {name for name, value in (("cpu", cpus), ("memory", mem_mb)) if value > 0}
    if not wanted:
        return "the launch carries no allocation"
    node_dir = run_dir.parent
    missing = wanted - _controllers(node_dir)
    if missing:
        return (f"the {'/'.join(sorted(missing))} controller is not delegated to {node_dir} "
                "(cgroup v1 host, or an ancestor without it in cgroup.subtree_control)")
    try:
        (node_dir / "cgroup.subtree_control").write_text(
            " ".join(f"+{name}" for name in sorted(wanted)))
        if cpus > 0:
            (run_dir / "cpu.max").write_text(f"{cpus * _PERIOD_US} {_PERIOD_US}")
        if mem_mb > 0:
            (run_dir / "memory.max").write_text(str(mem_mb * 1024 * 1024))
    except OSError as exc:
        return f"{exc.filename or run_dir}: {exc.strerror or exc}"
    return ""
