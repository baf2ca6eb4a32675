"""Write the golden replay logs: ``python -m tests.logs.regenerate``.

Each ``*.jsonl`` file is a script and its recording, one JSON object per line:

- ``{"at": ms, "request": {"name": "SubmitJob", "body": {...}}}`` — a request decided at ``at``;
- ``{"at": ms, "pass": true}`` — one ``schedule`` pass at ``at``;
- ``{"fact": {"name": "JobQueued", "body": {...}}}`` — a fact produced by the line before;
- last, ``{"state": {...}}`` — a summary of the final state.

``tests/unit/core/test_golden.py`` re-decides the script and expects the same facts, folds the
facts and expects the same state, and checks that a snapshot plus the tail equals the full fold.
Regenerate only when a behaviour change is intended, and review the diff.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from scheduler import (
    ApplyConfig,
    CancelJob,
    CloseCycle,
    HoldJob,
    JobSpec,
    NodeFailed,
    RegisterNode,
    ReleaseJob,
    ReportEpilog,
    ReportJobExit,
    ShardState,
    SubmitJob,
    UpdateJob,
    as_record,
    decide,
    evolve,
    from_record,
    initial_state,
    schedule,
)
from scheduler.records import PlanStarts
from schemas.sluid import compose, format_sluid

HERE = Path(__file__).parent
T0 = 1_750_000_000_000
SHARD, CLUSTER = "golden", 11
Step = tuple[int, Any]  # (time, request or "pass")


def sl(kind: int, n: int) -> str:
    """A readable SLUID: cluster ``kind``, fixed time, sequence ``n``."""
    return format_sluid(compose(kind, T0 - 60_000, n))


def job(n: int) -> str:
    return sl(3, n)


def node(n: int) -> str:
    return sl(4, n)


def spec(**fields: Any) -> JobSpec:
    return JobSpec(**{"user": "alice", "command": ("run.sh",), **fields})


def exit_of(state: ShardState, job_sluid: str, code: int = 0, signal: int = 0) -> ReportJobExit:
    j = state.jobs[job_sluid]
    return ReportJobExit(
        job_sluid=j.job_sluid,
        run_sluid=j.run_sluid,
        node_sluid=j.node_sluids[0],
        node_name=j.nodes[0],
        exit_code=code,
        signal=signal,
    )


def epilog_of(state: ShardState, job_sluid: str, n: int) -> ReportEpilog:
    j = state.jobs[job_sluid]
    return ReportEpilog(
        job_sluid=j.job_sluid, run_sluid=j.run_sluid, node_sluid=node(n), node_name=f"n{n}", ok=True
    )


def lifecycle() -> Iterator[Step | Any]:
    """Nodes join; jobs queue, start, complete, fail, time out, get cancelled, lose a node."""
    for i in range(1, 5):
        yield T0, RegisterNode(node_sluid=node(i), name=f"n{i}", cpus=4, mem_mb=8000)
    yield T0 + 1, SubmitJob(job_sluid=job(1), spec=spec(nodes_min=2, time_limit_s=600))
    yield T0 + 2, SubmitJob(job_sluid=job(2), spec=spec(ntasks=2, time_limit_s=60))
    yield T0 + 3, SubmitJob(job_sluid=job(3), spec=spec(nodes_min=3, time_limit_s=300))
    yield T0 + 4, SubmitJob(job_sluid=job(4), spec=spec(nodes_min=0))
    yield T0 + 4, SubmitJob(job_sluid=job(2), spec=spec())
    yield T0 + 5, "pass"
    yield T0 + 10_000, lambda s: exit_of(s, job(1))
    yield T0 + 10_001, "pass"
    yield T0 + 70_000, "pass"
    yield T0 + 70_500, lambda s: exit_of(s, job(2), signal=9)
    yield T0 + 71_000, SubmitJob(job_sluid=job(5), spec=spec(time_limit_s=100))
    yield T0 + 71_001, "pass"
    yield T0 + 80_000, CancelJob(job_sluid=job(5))
    yield T0 + 80_100, lambda s: exit_of(s, job(5), signal=15)
    yield (
        T0 + 90_000,
        NodeFailed(node_sluid=node(1), name="n1", reason="Not responding", time_ms=T0 + 90_000),
    )
    yield T0 + 90_001, "pass"
    for i in (2, 3):  # the surviving nodes' epilogs complete the requeue (JobRequeue=1)
        yield T0 + 92_000 + i, lambda s, i=i: epilog_of(s, job(3), i)
    yield T0 + 95_000, RegisterNode(node_sluid=node(1), name="n1", cpus=4, mem_mb=8000)
    yield T0 + 95_001, CloseCycle(inbox_partition=0, inbox_from=0, inbox_to=20)


def backfill() -> Iterator[Step | Any]:
    """EASY: a short job backfills behind a wide one, a long one waits; then conservative."""
    text = "SchedulerParameters: {bf_policy: easy, bf_resolution: 1}\n"
    yield T0, ApplyConfig(config_sluid=sl(5, 1), kind="cluster", text=text, source="easy.yaml")
    for i in range(1, 5):
        yield T0, RegisterNode(node_sluid=node(i), name=f"n{i}", cpus=1, mem_mb=0)
    yield T0 + 1, SubmitJob(job_sluid=job(1), spec=spec(nodes_min=3, time_limit_s=100))
    yield T0 + 2, "pass"
    yield T0 + 3, SubmitJob(job_sluid=job(2), spec=spec(nodes_min=4, time_limit_s=100))
    yield T0 + 4, SubmitJob(job_sluid=job(3), spec=spec(time_limit_s=50))
    yield T0 + 5, SubmitJob(job_sluid=job(4), spec=spec(time_limit_s=500))
    yield T0 + 6, "pass"
    conservative = text.replace("easy", "conservative")
    yield T0 + 7, ApplyConfig(config_sluid=sl(5, 2), kind="cluster", text=conservative)
    yield T0 + 8, "pass"
    yield T0 + 9, PlanStarts(request_sluid=sl(6, 1), user="alice")  # squeue --start: a plan
    yield T0 + 10, PlanStarts(request_sluid=sl(6, 2), user="alice")  # within 10 s: reused
    yield T0 + 60_000, lambda s: exit_of(s, job(3))
    yield T0 + 100_002, lambda s: exit_of(s, job(1))
    yield T0 + 100_003, "pass"
    yield T0 + 100_004, ApplyConfig(config_sluid=sl(5, 3), kind="cluster", text="Nodes: 3\n")


def control() -> Iterator[Step | Any]:
    """Arrays with a limit, dependencies, hold/release, updates, QOS limits."""
    text = "QOS:\n  - Name: q\n    MaxJobsPerUser: 2\nOperators: [root]\nPriorityWeightAge: 100\n"
    yield T0, ApplyConfig(config_sluid=sl(5, 1), kind="cluster", text=text)
    for i in range(1, 4):
        yield T0, RegisterNode(node_sluid=node(i), name=f"n{i}", cpus=2, mem_mb=0)
    yield T0 + 1, SubmitJob(job_sluid=job(1), spec=spec(array="0-3%2", time_limit_s=60))
    yield T0 + 2, SubmitJob(job_sluid=job(2), spec=spec(dependency="afterok:1", qos="q"))
    yield T0 + 3, SubmitJob(job_sluid=job(3), spec=spec(hold=True, qos="q"))
    yield T0 + 4, SubmitJob(job_sluid=job(4), spec=spec(dependency="singleton", name="s"))
    yield T0 + 5, SubmitJob(job_sluid=job(5), spec=spec(dependency="singleton", name="s"))
    yield T0 + 6, HoldJob(job_sluid=job(5), admin=True, user="root")
    yield T0 + 7, "pass"
    yield T0 + 8, UpdateJob(job_sluid=job(3), changes={"time_limit_s": "120"})
    yield T0 + 9, ReleaseJob(job_sluid=job(5), user="alice")
    yield T0 + 10, ReleaseJob(job_sluid=job(3))
    yield T0 + 11, CancelJob(job_sluid=job(1))
    yield T0 + 12, "pass"


SCENARIOS = {"lifecycle": lifecycle, "backfill": backfill, "control": control}


def record(name: str, obj: Any) -> dict[str, Any]:
    kind, body = as_record(obj)
    return {name: {"name": kind, "body": body}}


def summary(state: ShardState) -> dict[str, Any]:
    """What the golden compares at the end: jobs, nodes and counters."""
    jobs = {
        s: {
            "job_id": j.job_id,
            "state": j.state,
            "reason": j.reason,
            "nodes": list(j.nodes),
            "start_ms": j.start_ms,
            "end_ms": j.end_ms,
            "hold": j.hold,
            "array_task_id": j.array_task_id,
        }
        for s, j in sorted(state.jobs.items())
    }
    nodes = {n.name: n.state for n in sorted(state.nodes.values(), key=lambda n: n.name)}
    index = state.index
    return {
        "jobs": jobs,
        "nodes": nodes,
        "shard_seq": state.shard_seq,
        "next_job_id": state.meta.next_job_id,
        "inbox_offset": state.inbox_offset,
        "free_cpus": dict(zip(index.names, index.free_cpus.tolist(), strict=True)),
        "config": state.config.cluster_name,
        "policy": state.config.scheduler.policy,
    }


def run_script(steps: Iterator[Any]) -> tuple[list[dict[str, Any]], ShardState]:
    """Decide the script; return the golden lines and the final state."""
    state = initial_state(SHARD, CLUSTER)
    lines: list[dict[str, Any]] = []
    for at, what in steps:
        if what == "pass":
            lines.append({"at": at, "pass": True})
            facts = schedule(state, at)
        else:
            request = what(state) if callable(what) else what
            lines.append({"at": at, **record("request", request)})
            facts = decide(state, request, at)
        for fact in facts:
            state = evolve(state, fact)
            lines.append(record("fact", fact))
    lines.append({"state": summary(state)})
    return lines, state


def read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def requests_of(lines: list[dict[str, Any]]) -> Iterator[tuple[int, Any]]:
    """The script back from a golden file."""
    for line in lines:
        if "pass" in line:
            yield line["at"], "pass"
        elif "request" in line:
            yield line["at"], from_record(line["request"]["name"], line["request"]["body"])


def main() -> None:
    for name, scenario in SCENARIOS.items():
        lines, _ = run_script(scenario())
        path = HERE / f"{name}.jsonl"
        path.write_text("".join(json.dumps(line, sort_keys=True) + "\n" for line in lines))
        print(f"{path}: {len(lines)} lines")


if __name__ == "__main__":
    main()
