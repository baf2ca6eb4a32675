"""A run's CPU and memory limits in its real cgroup v2, or the reason the host gives none."""

from __future__ import annotations

from agents.node.limits import apply_limits
from agents.node.proctrack import CgroupTree


def _controllers(tree: CgroupTree) -> set[str]:
    return set((tree.node_dir / "cgroup.controllers").read_text().split())


def test_limits_are_written_where_the_host_delegates_the_controllers_else_the_reason(
    tree: CgroupTree,
) -> None:
    run_dir = tree.create("sLIMITS")
    assert run_dir is not None
    why = apply_limits(run_dir, cpus=2, mem_mb=64)
    if {"cpu", "memory"} <= _controllers(tree):
        assert why == ""
        assert (run_dir / "cpu.max").read_text().split() == ["200000", "100000"]
        assert (run_dir / "memory.max").read_text().strip() == str(64 * 1024 * 1024)
    else:  # this host (e.g. a hybrid one, controllers on cgroup v1): the run goes unlimited
        assert "controller is not delegated" in why and str(tree.node_dir) in why
        assert not (run_dir / "memory.max").exists()


def test_a_launch_without_an_allocation_sets_no_limit(tree: CgroupTree) -> None:
    run_dir = tree.create("sNOLIMIT")
    assert run_dir is not None
    assert apply_limits(run_dir, cpus=0, mem_mb=0) == "the launch carries no allocation"
