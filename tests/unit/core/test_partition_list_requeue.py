"""A job submitted to several partitions (``-p a,b``) that is requeued waits under its whole
list again, as Slurm's (its ``part_ptr_list`` outlives the run; ``rebuild_job_part_list`` only
puts the partition used first): it was held to the partition its first run started in, so a
job requeued after a node failure never ran in its other partitions again. An expedited
requeue keeps its partition (a hot swap keeps the nodes of its last run). Core and views."""

from __future__ import annotations

from scheduler import NodeFailed, RequeueJob
from tests.unit.core.gwt import node_sluid
from tests.unit.projections.test_projection_core_contract import Core

CONFIG = (
    "Nodes:\n  - NodeName: n[1-3]\n    CPUs: 4\n"
    "Partitions:\n"
    "  - PartitionName: a\n    Nodes: n[1-2]\n    Default: YES\n"
    "  - PartitionName: b\n    Nodes: n3\n    PriorityTier: 5\n"
    "SlurmctldParameters: enable_expedited_requeue\n"
)


def _started_in_a(core: Core, **fields: object) -> str:
    """A job of -p a,b started in a (b, tried first, being full)."""
    core.submit(partition="b", ntasks=4)
    job = core.submit(partition="a,b", ntasks=2, **fields)
    core.do()
    assert core.state.jobs[job].partition == "a" == core.views.jobs[job]["partition"]
    return job


def test_a_requeued_list_job_waits_under_its_list_and_may_start_in_another_partition() -> None:
    core = Core(CONFIG, 3)
    job = _started_in_a(core)
    run, names = core.run_of(job)
    core.do(RequeueJob(job_sluid=job, user="alice"))
    core.exit(job, 0)
    core.epilogs(job, run, names)
    assert core.state.jobs[job].partition == "b,a" == core.views.jobs[job]["partition"]
    core.do(NodeFailed(node_sluid=node_sluid("n1"), name="n1", reason="", time_ms=0))
    core.do(NodeFailed(node_sluid=node_sluid("n2"), name="n2", reason="", time_ms=0))
    first = core.state.jobs
    blocker = next(s for s, j in first.items() if s != job)
    brun, bnames = core.run_of(blocker)
    core.exit(blocker, 0)
    core.epilogs(blocker, brun, bnames)
    core.do(after_ms=200_000)  # after the requeue delay: a is down, b is free
    started = core.state.jobs[job]
    assert (started.state, started.partition, started.nodes) == ("RUNNING", "b", ("n3",))
    assert core.views.jobs[job]["partition"] == "b"


def test_an_expedited_requeue_keeps_the_partition_of_its_run() -> None:
    core = Core(CONFIG, 3)
    job = _started_in_a(core, requeue="expedite")
    run, names = core.run_of(job)
    core.exit(job, 1)  # a non-zero exit of an expedite job: requeued expedited
    core.epilogs(job, run, names, ok=False)
    assert core.state.jobs[job].expediting
    assert core.state.jobs[job].partition == "a" == core.views.jobs[job]["partition"]
