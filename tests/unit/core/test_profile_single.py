"""The backfill profile's answers when no node holds two runs (scheduler.scheduling.profile):
the ends on the grid, the runs a pass adds, the first reservation and the ones after it."""

from __future__ import annotations

import numpy as np

from scheduler import ClusterConfig, RegisterNode, decide, evolve, initial_state
from scheduler.jobs.demands import demand_of
from scheduler.scheduling.free import Free
from scheduler.scheduling.profile import INFINITE, Profile
from tests.unit.core.gwt import T0, node_sluid

S = 1000


def _free(nodes: int = 4) -> Free:
    state = initial_state("profile", 5, ClusterConfig())
    for i in range(nodes):
        request = RegisterNode(node_sluid=node_sluid(f"n{i}"), name=f"n{i}", cpus=1, mem_mb=100)
        for fact in decide(state, request, T0):
            state = evolve(state, fact)
    return Free(state.index)


def test_single_run_ends_are_read_on_the_grid_without_changing_the_given_array() -> None:
    free = _free()
    free.njobs[:3] = 1
    free.cpus[:3] = 0
    raw = np.array([T0 + 1, T0 + 2500, 0, INFINITE], dtype=np.int64)  # 0: being killed
    given = raw.copy()
    profile = Profile(free, T0, 2)  # a 2 s grid: not before T0 + 2 s, rounded up
    profile.set_single(raw, lambda: None)  # type: ignore[arg-type, return-value]
    assert (raw == given).all()
    ready = profile.ready_times(demand_of(1, 1, 1, 1, 0, "", 0, False), np.ones(4, np.bool_))
    assert ready.tolist() == [T0 + 2 * S, T0 + 4 * S, T0 + 2 * S, T0]
    free.njobs[3], free.cpus[3] = 1, 0
    profile.add_run(np.array([3]), [(1, 0, 0)], profile.expected_end(T0, 7, killing=False))
    ready = profile.ready_times(demand_of(1, 1, 1, 1, 0, "", 0, False), np.ones(4, np.bool_))
    assert ready.tolist() == [T0 + 2 * S, T0 + 4 * S, T0 + 2 * S, T0 + 8 * S]


def test_the_first_reservation_marks_its_nodes_and_later_ones_keep_the_earliest() -> None:
    profile = Profile(_free(), T0, 1)
    assert (profile.first_reserved == INFINITE).all()
    profile.reserve(T0 + 9 * S, 60 * S, np.array([0, 1]))
    assert profile.first_reserved.tolist() == [T0 + 9 * S, T0 + 9 * S, INFINITE, INFINITE]
    profile.reserve(T0 + 5 * S, 60 * S, np.array([1, 2]))
    profile.reserve(T0 + 20 * S, 60 * S, np.array([2]))
    assert profile.first_reserved.tolist() == [T0 + 9 * S, T0 + 5 * S, T0 + 5 * S, INFINITE]
