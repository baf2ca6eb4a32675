"""The batch script goes to the batch host alone (red team, 2026-12-07).

Every node of a job got a ``LaunchRun`` carrying the whole batch script, which only the batch
host runs (the other nodes hold the allocation for its steps): a 256 kB script, the most a job
may store, on 256 nodes was 64 MB of node commands in the shard's one transaction. Slurm sends
the script with the batch host's launch alone (``REQUEST_BATCH_JOB_LAUNCH``)."""

from __future__ import annotations

from scheduler import evolve, node_commands
from scheduler.records import JobStarted, LaunchRun
from tests.unit.core.gwt import given, nodes, queued, schedule_pass, sluid, spec


def test_only_the_batch_hosts_launch_carries_the_batch_script() -> None:
    script = "#!/bin/sh\n" + "echo x\n" * 30_000
    scenario = given(nodes("n", 4), queued(sluid(1), spec(nodes_min=4, script=script)))
    facts = scenario.when(schedule_pass()).facts
    for fact in facts:
        scenario.state = evolve(scenario.state, fact)
    [started] = [f for f in facts if isinstance(f, JobStarted)]
    launches = [c for c in node_commands(scenario.state, started) if isinstance(c, LaunchRun)]
    assert [c.batch_host for c in launches] == [True, False, False, False]
    assert launches[0].script == script
    assert [c.script for c in launches[1:]] == ["", "", ""]
    assert {c.command for c in launches} == {("true",)}  # the Kubernetes bridge checks it
