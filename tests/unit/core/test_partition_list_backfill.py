"""Backfill walks a ``-p a,b`` job over each of its partitions, as Slurm's backfill does: it
starts it in the first where it fits without delaying a reservation, else reserves its earliest
start over them (it neither started nor reserved for such a job)."""

from __future__ import annotations

from scheduler import JobPending, JobStarted
from scheduler.schedule import schedule_with_plan
from scheduler.scheduling.planned_starts import planned_starts
from tests.unit.core.gwt import T0, Scenario, given, nodes, queued, sluid, spec, started

S = 1000
R1, R2, WIDE, SHORT, LONG = (sluid(i) for i in range(1, 6))
CONFIG = (
    "Nodes:\n  - NodeName: a[1-2]\n    CPUs: 4\n  - NodeName: x1\n    CPUs: 4\n"
    "Partitions:\n"
    "  - PartitionName: a\n    Nodes: a[1-2]\n    Default: YES\n"
    "  - PartitionName: b\n    Nodes: x1\n"
)


def _scenario(policy: str) -> Scenario:
    """a1 busy until T0+100 s, b's x1 until T0+300 s; WIDE (both of a's nodes, 100 s) waits for
    a1; SHORT (50 s) and LONG (200 s) of ``-p a,b`` follow."""
    return given(
        nodes("a", 2, cpus=4, partitions=("a",)), nodes("x", 1, cpus=4, partitions=("b",)),
        queued(R1, spec(partition="a", ntasks=4, time_limit_s=100), partition="a"),
        started(R1, ("a1",), 100, 1),
        queued(R2, spec(partition="b", ntasks=4, time_limit_s=300), partition="b"),
        started(R2, ("x1",), 300, 2),
        queued(WIDE, spec(partition="a", nodes_min=2, nodes_max=2, time_limit_s=100),
               partition="a", time_ms=T0 + 1),
        queued(SHORT, spec(partition="a,b", time_limit_s=50), partition="a,b", time_ms=T0 + 2),
        queued(LONG, spec(partition="a,b", time_limit_s=200), partition="a,b", time_ms=T0 + 3),
        config=CONFIG + f"SchedulerParameters: {{bf_policy: {policy}, bf_resolution: 1}}\n",
    )


def test_backfill_starts_a_list_job_in_a_partition_where_it_fits_before_the_reservation() -> None:
    result = schedule_with_plan(_scenario("easy").state, T0 + 10 * S)
    starts = {f.job_sluid: f for f in result.facts if isinstance(f, JobStarted)}
    assert list(starts) == [SHORT]
    assert (starts[SHORT].partition, starts[SHORT].nodes) == ("a", ("a2",))
    assert result.reserved_starts == {WIDE: T0 + 100 * S}
    pending = {f.job_sluid: f.reason for f in result.facts if isinstance(f, JobPending)}
    assert LONG not in starts and pending.get(LONG, "Priority") == "Priority"


def test_conservative_reserves_a_list_job_at_its_earliest_start_over_its_partitions() -> None:
    """LONG could start in b at T0+300 s, in a after WIDE at T0+200 s: reserved in a."""
    result = schedule_with_plan(_scenario("conservative").state, T0 + 10 * S)
    assert [f.job_sluid for f in result.facts if isinstance(f, JobStarted)] == [SHORT]
    assert result.reserved_starts == {WIDE: T0 + 100 * S, LONG: T0 + 200 * S}
    assert set(result.reservations[LONG].nodes) <= {"a1", "a2"}


def test_squeue_start_plans_a_list_job() -> None:
    plans = {p.job_sluid: p for p in planned_starts(_scenario("easy").state, T0 + 10 * S, 10)}
    assert plans[LONG].start_ms == T0 + 200 * S
