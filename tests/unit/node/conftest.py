"""The node tests' cgroup: a fresh node directory under ``sluice-tests/`` of the cgroup2 mount,
emptied and removed after the test (skipped with the reason where the host gives none)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from agents.node.proctrack import CgroupTree, detect_cgroups, remove_cgroup
from tests.unit.node.procs import NO_CGROUP, cgroup2_mount


@pytest.fixture
def tree() -> Iterator[CgroupTree]:
    mount = cgroup2_mount()
    if mount is None:
        pytest.skip(NO_CGROUP)
    found, reason = detect_cgroups(str(mount / "sluice-tests"), f"t{uuid.uuid4().hex[:10]}")
    if found is None:
        pytest.skip(reason)
    yield found
    for run_sluid in found.runs():
        found.scope(run_sluid).kill_all(5)
        remove_cgroup(found.run_dir(run_sluid))
    remove_cgroup(found.node_dir)
