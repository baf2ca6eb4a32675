"""A configuration that removes a partition fails the pending jobs that name it, alone or in a
``-p a,b`` list, ``NODE_FAIL``, as Slurm's reconfigure (``_sync_jobs_to_conf``: ``Invalid
partition (b) for JobId=…``); they stayed pending under a name no longer known (a list job's
updates then refused: ``InvalidPartition``). Running jobs keep their runs."""

from __future__ import annotations

from scheduler import ApplyConfig, ConfigApplied, JobEnded, decide
from tests.unit.core.gwt import T0, given, nodes, queued, sluid, spec, started

PARTS = (
    "Nodes:\n  - NodeName: a[1-2]\n    CPUs: 4\n  - NodeName: x1\n    CPUs: 4\n"
    "Partitions:\n"
    "  - PartitionName: a\n    Nodes: a[1-2]\n    Default: YES\n"
)
BOTH = PARTS + "  - PartitionName: b\n    Nodes: x1\n"
ONLY_B, LISTED, ONLY_A, RUNNING = (sluid(i) for i in range(1, 5))


def test_removing_a_partition_fails_its_pending_jobs_and_list_jobs_naming_it() -> None:
    scenario = given(
        nodes("a", 2, cpus=4, partitions=("a",)), nodes("x", 1, cpus=4, partitions=("b",)),
        queued(RUNNING, spec(partition="b"), partition="b"),
        started(RUNNING, ("x1",), 0, 1),
        queued(ONLY_B, spec(partition="b", nodes_min=2), partition="b"),
        queued(LISTED, spec(partition="a,b"), partition="a,b"),
        queued(ONLY_A, spec(partition="a"), partition="a"),
        config=BOTH,
    )
    outcome = scenario.when(ApplyConfig(config_sluid=sluid(900), kind="cluster", text=PARTS),
                            T0 + 1000)
    facts = outcome.facts
    assert isinstance(facts[0], ConfigApplied)
    seqs = [f.shard_seq for f in facts]  # stamped in order: a JobEnded stamped first gave the
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs), seqs  # next fact its seq
    ended = {f.job_sluid: f for f in facts if isinstance(f, JobEnded)}
    assert set(ended) == {ONLY_B, LISTED}
    assert {f.state for f in ended.values()} == {"NODE_FAIL"}
    assert "partition b" in ended[LISTED].reason
    state = outcome.evolved()
    assert state.jobs[ONLY_B].state == "NODE_FAIL" and state.jobs[ONLY_A].is_pending
    assert state.jobs[RUNNING].is_running


def test_a_file_that_keeps_every_partition_fails_nothing() -> None:
    scenario = given(nodes("a", 2, cpus=4, partitions=("a",)),
                     queued(ONLY_A, spec(partition="a"), partition="a"), config=PARTS)
    facts = decide(scenario.state, ApplyConfig(config_sluid=sluid(900), kind="cluster",
                                               text=PARTS + "# same\n"), T0 + 1000)
    assert [type(f) for f in facts] == [ConfigApplied]


def test_a_job_failed_by_a_removed_partition_shows_exit_code_0_1_as_sacct() -> None:
    """Slurm's reconfigure sets the raw status ``exit_code = 1`` (``_sync_jobs_to_conf``),
    which sacct and scontrol print ``WEXITSTATUS:WTERMSIG`` = ``0:1``; Sluice recorded exit
    code 1, signal 0, shown ``1:0`` (found 2026-12-07)."""
    scenario = given(nodes("x", 1, cpus=4, partitions=("b",)),
                     queued(ONLY_B, spec(partition="b", nodes_min=2), partition="b"),
                     config=BOTH)
    facts = decide(scenario.state, ApplyConfig(config_sluid=sluid(900), kind="cluster",
                                               text=PARTS), T0 + 1000)
    ended = [f for f in facts if isinstance(f, JobEnded)]
    assert [(f.state, f.exit_code, f.signal) for f in ended] == [("NODE_FAIL", 0, 1)]
