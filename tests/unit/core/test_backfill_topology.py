"""Backfill reservations on a topology: the plugin says where (and so when) a reserved job goes.

Given running jobs and a block topology, when a pass runs, then the blocked job's reservation
is the block placement the plugin would make at its start (not the first free nodes in node
order), and backfill may use the nodes of the other blocks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import given as for_all
from hypothesis import strategies as st

from scheduler import ApplyConfig, ConfigApplied, JobPending, JobStarted, decide, evolve
from scheduler.schedule import PassResult, Reservation, schedule_with_plan
from scheduler.scheduling.placement import place_job
from scheduler.scheduling.reserve_topology import (
    MAX_PLACEMENTS,
    SCAN_PLACEMENTS,
    TopologyStart,
    _block_screen,
    _Search,
)
from scheduler.topology import BlockIndex
from tests.unit.core.gwt import T0, M, Scenario, given, node_sluid, nodes, queued, sluid, spec

S = 1000
EASY = "SchedulerParameters: {bf_policy: easy, bf_resolution: 1}\n"
CONSERVATIVE = "SchedulerParameters: {bf_policy: conservative, bf_resolution: 1}\n"
TWO_BLOCKS = "BlockName=b1 Nodes=n[1-4]\nBlockName=b2 Nodes=n[5-8]\nBlockSizes=4\n"
FOUR_BLOCKS = (
    "BlockName=b1 Nodes=n[1-4]\nBlockName=b2 Nodes=n[5-8]\n"
    "BlockName=b3 Nodes=n[9-12]\nBlockName=b4 Nodes=n[13-16]\nBlockSizes=4,8\n"
)
B1, B2 = ("n1", "n2", "n3", "n4"), ("n5", "n6", "n7", "n8")
WIDE, OTHER, LATER = sluid(10), sluid(11), sluid(12)


def _running(job_sluid: str, job_id: int, names: tuple[str, ...], limit_s: int) -> list[object]:
    """A job queued and started on ``names`` at T0 with a ``limit_s`` time limit."""
    return [
        queued(job_sluid, spec(nodes_min=len(names), time_limit_s=limit_s)),
        JobStarted(
            **M,
            job_sluid=job_sluid,
            job_id=job_id,
            run_sluid=sluid(500 + job_id),
            restart_count=0,
            nodes=names,
            node_sluids=tuple(node_sluid(n) for n in names),
            partition="main",
            user="alice",
            time_limit_s=limit_s,
            submit_ms=T0,
        ),
    ]


def _cluster(
    count: int, runs: Sequence[tuple[tuple[str, ...], int]], *jobs: object, config: str = EASY
) -> Scenario:
    """``count`` nodes, jobs running on ``runs`` (nodes, limit), then ``jobs`` queued."""
    history: list[object] = [nodes("n", count)]
    for k, (names, limit) in enumerate(runs):
        history += _running(sluid(1 + k), 1 + k, names, limit)
    return given(*history, *jobs, config=config)  # type: ignore[arg-type]


def _with_topology(scenario: Scenario, text: str) -> Scenario:
    [applied] = decide(
        scenario.state, ApplyConfig(config_sluid=sluid(90), kind="topology", text=text), T0
    )
    assert isinstance(applied, ConfigApplied)
    scenario.state = evolve(scenario.state, applied)
    return scenario


def _pass(scenario: Scenario, at_s: int = 10) -> PassResult:
    return schedule_with_plan(scenario.state, T0 + at_s * S)


def _started(result: PassResult) -> dict[str, tuple[str, ...]]:
    return {f.job_sluid: f.nodes for f in result.facts if isinstance(f, JobStarted)}


def _pending(result: PassResult) -> dict[str, str]:
    return {f.job_sluid: f.reason for f in result.facts if isinstance(f, JobPending)}


def _spanning() -> Scenario:
    """n1-n3 busy until 300 s, n6-n7 until 100 s: at 100 s n4-n8 are free, and the first four
    in node order (n4-n7) span both blocks, while b2 (n5-n8) is whole."""
    return _cluster(
        8,
        [(("n1", "n2", "n3"), 300), (("n6", "n7"), 100)],
        queued(WIDE, spec(nodes_min=4, time_limit_s=100), time_ms=T0 + 1),
    )


def test_without_a_topology_the_reservation_is_the_first_free_nodes_in_node_order() -> None:
    result = _pass(_spanning())
    assert result.reservations == {
        WIDE: Reservation(T0 + 100 * S, T0 + 200 * S, ("n4", "n5", "n6", "n7"))
    }


def test_a_block_jobs_reservation_lies_inside_one_base_block() -> None:
    result = _pass(_with_topology(_spanning(), TWO_BLOCKS))
    assert result.reservations == {WIDE: Reservation(T0 + 100 * S, T0 + 200 * S, B2)}


def test_the_reservation_waits_for_a_whole_block_though_enough_nodes_are_free_now() -> None:
    # n3, n4, n7, n8 are free now (four nodes, two blocks); b1 is whole at 100 s, b2 at 300 s
    scenario = _cluster(
        8,
        [(("n1", "n2"), 100), (("n5", "n6"), 300)],
        queued(WIDE, spec(nodes_min=4, time_limit_s=100), time_ms=T0 + 1),
    )
    flat = _pass(scenario)
    assert _started(flat) == {WIDE: ("n3", "n4", "n7", "n8")}
    result = _pass(_with_topology(scenario, TWO_BLOCKS))
    assert _pending(result) == {WIDE: "Resources"}
    assert result.reservations == {WIDE: Reservation(T0 + 100 * S, T0 + 200 * S, B1)}


def test_backfill_may_use_the_other_blocks_nodes_but_not_the_reserved_block() -> None:
    scenario = _cluster(
        8,
        [(("n1", "n2"), 100), (("n5", "n6"), 300)],
        queued(WIDE, spec(nodes_min=4, time_limit_s=100), time_ms=T0 + 1),
        queued(OTHER, spec(nodes_min=2, time_limit_s=1000), time_ms=T0 + 2),
        queued(LATER, spec(nodes_min=1, time_limit_s=1000), time_ms=T0 + 3),
    )
    result = _pass(_with_topology(scenario, TWO_BLOCKS))
    # OTHER runs long past the reservation's start, on b2's free nodes; LATER would need
    # n3 or n4, which b1's reservation holds
    assert _started(result) == {OTHER: ("n7", "n8")}
    assert result.reservations[WIDE] == Reservation(T0 + 100 * S, T0 + 200 * S, B1)
    assert _pending(result) == {WIDE: "Resources", LATER: "Priority"}


def test_the_reservation_takes_the_aggregate_the_plugin_would_choose() -> None:
    # blocks of 4, aggregates of 8 (b1+b2, b3+b4): a 6-node job must lie inside one pair.
    # At 100 s n5-n10 are six free nodes (b2+b3, not a pair); b1+b2 is whole at 1000 s,
    # b3+b4 only at 2000 s
    scenario = _cluster(
        16,
        [
            (("n1", "n2", "n3", "n4"), 1000),
            (("n5", "n6"), 100),
            (("n11", "n12"), 200),
            (("n13", "n14", "n15", "n16"), 2000),
        ],
        queued(WIDE, spec(nodes_min=6, time_limit_s=100), time_ms=T0 + 1),
    )
    flat = _pass(scenario)
    assert flat.reservations[WIDE].start_ms == T0 + 100 * S
    assert flat.reservations[WIDE].nodes == ("n5", "n6", "n7", "n8", "n9", "n10")
    reservation = _pass(_with_topology(scenario, FOUR_BLOCKS)).reservations[WIDE]
    assert reservation.start_ms == T0 + 1000 * S
    assert len(reservation.nodes) == 6 and set(reservation.nodes) <= set(B1 + B2)


def test_a_topo_exclusive_job_holds_its_whole_block_and_backfill_goes_elsewhere() -> None:
    # n1 busy until 100 s, n5 until 200 s: no block is free of jobs before 100 s
    scenario = _cluster(
        8,
        [(("n1",), 100), (("n5",), 200)],
        queued(WIDE, spec(nodes_min=2, time_limit_s=100, exclusive_topo=True), time_ms=T0 + 1),
        queued(OTHER, spec(nodes_min=1, time_limit_s=1000), time_ms=T0 + 2),
    )
    result = _pass(_with_topology(scenario, TWO_BLOCKS))
    reservation = result.reservations[WIDE]
    assert reservation.start_ms == T0 + 100 * S
    assert sorted(reservation.nodes + reservation.blocked) == list(B1)
    assert len(reservation.nodes) == 2 and reservation.blocked
    [(job, where)] = _started(result).items()
    assert job == OTHER and set(where) <= set(B2)


def test_conservative_reservations_on_a_topology_do_not_overlap() -> None:
    # both wide jobs want a whole block: the first gets b1 at 100 s, the second b2 at 300 s
    scenario = _cluster(
        8,
        [(("n1", "n2"), 100), (("n5", "n6"), 300)],
        queued(WIDE, spec(nodes_min=4, time_limit_s=1000), time_ms=T0 + 1),
        queued(OTHER, spec(nodes_min=4, time_limit_s=1000), time_ms=T0 + 2),
        config=CONSERVATIVE,
    )
    result = _pass(_with_topology(scenario, TWO_BLOCKS))
    assert result.reservations == {
        WIDE: Reservation(T0 + 100 * S, T0 + 1100 * S, B1),
        OTHER: Reservation(T0 + 300 * S, T0 + 1300 * S, B2),
    }


def test_no_topology_reservation_beyond_the_backfill_window() -> None:
    config = "SchedulerParameters: {bf_policy: easy, bf_resolution: 1, bf_window: 1}\n"
    scenario = _cluster(
        8,
        [(("n1", "n2"), 100), (("n5", "n6"), 300)],
        queued(WIDE, spec(nodes_min=4, time_limit_s=100), time_ms=T0 + 1),
        config=config,
    )
    assert _pass(_with_topology(scenario, TWO_BLOCKS)).reservations == {}


def _search(size: int, feasible: Callable[[int], bool]) -> tuple[_Search, list[int]]:
    tried: list[int] = []
    empty = np.zeros(0, dtype=np.int64)

    def attempt(t: int) -> TopologyStart | None:
        tried.append(t)
        return TopologyStart(t, empty, empty, ()) if feasible(t) else None

    return _Search(list(range(size)), attempt), tried


def test_the_search_finds_the_first_feasible_candidate_in_few_placements() -> None:
    """One run (availability only grows): the first candidate where the plugin places, as a
    walk over every candidate would find, in about 2·log2(candidates) placements."""
    for size in (1, 2, 3, 7, 100, 5000):
        for first in sorted({0, min(1, size - 1), size // 3, size - 1}):
            search, tried = _search(size, lambda t, first=first: t >= first)  # type: ignore[misc]
            found = search.first([0])
            assert found is not None and found[1].start_ms == first
            assert len(tried) <= 2 * max(size, 2).bit_length() + 2
        search, tried = _search(size, lambda t: False)
        assert search.first([0]) is None and len(tried) <= max(size, 2).bit_length() + 1


def test_the_search_goes_run_by_run_when_availability_can_shrink() -> None:
    """Feasible at 5-7 only, then from 20: with a break at 8 (a reservation begins to
    overlap), the window at 5-7 is found; a run whose last candidate fails is skipped."""
    search, tried = _search(30, lambda t: 5 <= t <= 7 or t >= 20)
    found = search.first([0, 8])
    assert found is not None and found[1].start_ms == 5
    search, tried = _search(30, lambda t: t >= 20)
    found = search.first([0, 8])
    assert found is not None and found[1].start_ms == 20
    assert tried[:3] == [0, 7, 8]  # run [0, 7] ruled out by its last candidate


def test_the_search_is_bounded_however_many_runs_fail() -> None:
    """After SCAN_PLACEMENTS the rest is searched as one run; never more than MAX_PLACEMENTS."""
    size = 10_000
    search, tried = _search(size, lambda t: t >= 9_000)
    found = search.first(list(range(0, size, 2)))  # 5,000 runs of two candidates
    assert found is not None and found[1].start_ms == 9_000
    assert len(tried) <= MAX_PLACEMENTS
    search, tried = _search(size, lambda t: False)
    assert search.first(list(range(0, size, 2))) is None and len(tried) <= MAX_PLACEMENTS
    assert SCAN_PLACEMENTS < MAX_PLACEMENTS


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@for_all(
    st.lists(st.booleans(), min_size=16, max_size=16),
    st.integers(1, 16),
    st.sampled_from((0, 1, 2, 3, 4, 6, 8)),
    st.booleans(),
    st.booleans(),
    st.booleans(),
)
def test_the_block_screen_never_rules_out_a_placement_the_plugin_would_make(
    available: list[bool],
    nodes_min: int,
    segment: int,
    spread: bool,
    consolidate: bool,
    exclusive: bool,
) -> None:
    """The cheap screen tried before the plugin is only a necessary condition."""
    job_spec = spec(
        nodes_min=nodes_min,
        segment=segment,
        spread_segments=spread,
        consolidate_segments=consolidate,
        exclusive_topo=exclusive,
    )
    scenario = _with_topology(_cluster(16, [], queued(WIDE, job_spec)), FOUR_BLOCKS)
    topology = scenario.state.index.topology_for("main")
    assert isinstance(topology, BlockIndex)
    job = scenario.state.jobs[WIDE]
    mask = np.array(available, dtype=np.bool_)
    screen = _block_screen(topology, job)
    placed = place_job(topology, job, mask, ~mask, T0)
    if not isinstance(placed, str) and screen is not None:
        assert screen(mask)
