"""Replay, audit and verify on a recorded workload of the whole system (real broker, worker,
projections and node daemons): jobs that wait, fail, are held, cancelled, and an expedited job
that loses a node and restarts elsewhere.

One workload is recorded per module; every test reads its ledger.
"""

from __future__ import annotations

import getpass
import io
import itertools
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import scheduler
from cli.audit import run as audit_run
from cli.audit import verify
from projections.replay import Fact, merge, read_facts, views_at
from projections.views import Views
from streams.settings import Settings
from streams.topics import Topics
from tests.e2e.harness import LocalSystem, apply_config
from tests.unit.projections.kafka_ledger import SchemaOnlyConsumer

pytestmark = [pytest.mark.kafka, pytest.mark.e2e, pytest.mark.slow]


def sluice(system: LocalSystem, *argv: str, cwd: Path) -> str:
    env = {**os.environ, **system.settings.as_env()}
    done = subprocess.run([sys.executable, "-m", "cli.main", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


class Recorded:
    """A finished workload: its settings, its ledger, and a few moments of it."""

    def __init__(self, settings: Settings, facts: list[Fact], marks: dict[str, int],
                 live_jobs: list[dict[str, Any]]) -> None:
        self.settings, self.facts, self.marks, self.live_jobs = settings, facts, marks, live_jobs


@pytest.fixture(scope="module")
def recorded(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Recorded]:
    home = tmp_path_factory.mktemp("audit")
    system = LocalSystem(kafka_bootstrap, home / "home", f"a{os.getpid()}{int(time.time())}")
    work = home / "work"
    work.mkdir()
    try:
        system.start("worker", "worker", "--loglevel", "info",
                     env={"SLUICE_NODE_TIMEOUT": "2"})
        system.start("projections", "projections")
        system.start_nodes(3, cpus=2)
        system.wait_nodes_idle(3)
        apply_config(system, "SlurmctldParameters: enable_expedited_requeue\n")
        marks = {"start": int(time.time() * 1000)}
        # three fit at once on 3 two-CPU nodes; job 4 waits for Resources. Sent in one go
        # (not four CLI calls, which a loaded machine can spread over the jobs' run time)
        for _ in range(4):
            sluid = system.client.sluids.new()
            system.client.send(sluid, "SubmitJob", {"job_sluid": sluid, "spec": {
                "user": getpass.getuser(), "name": "wide", "cpus_per_task": 2,
                "command": ["sleep", "20"], "workdir": str(work)}})
        sluice(system, "submit", "-J", "fails", "--", "sh", "-c", "exit 3", cwd=work)
        sluice(system, "submit", "-H", "-J", "held", "--", "true", cwd=work)
        system.wait(lambda: system.client.get("/v1/jobs/6")["job"], 30, "job 6 queued")

        def three_wide_running() -> bool:
            jobs = system.client.get("/v1/jobs?all=1")["jobs"]
            return sum(j["name"] == "wide" and j["state"] == "RUNNING" for j in jobs) == 3

        system.wait(three_wide_running, 30, "three wide jobs running at once")
        marks["busy"] = int(time.time() * 1000)
        time.sleep(0.5)
        sluice(system, "release", "6", cwd=work)
        sluice(system, "submit", "-J", "doomed", "-t", "5", "--requeue=expedite", "--", "sh",
               "-c", 'if [ "$SLURM_RESTART_COUNT" = 0 ]; then sleep 60; fi', cwd=work)
        system.wait(lambda: system.client.get("/v1/jobs/7")["job"]["state"] == "RUNNING", 60,
                    "job 7 running")
        victim = system.client.get("/v1/jobs/7")["job"]["nodes"][0]
        system.kill(victim)
        sluice(system, "submit", "-J", "cancelled", "-N", "3", "--", "true", cwd=work)
        system.wait(lambda: system.client.get("/v1/jobs/8")["job"], 30, "job 8 queued")
        sluice(system, "cancel", "8", cwd=work)

        def settled() -> bool:
            jobs = system.client.get("/v1/jobs?all=1")["jobs"]
            return len(jobs) == 8 and all(
                j["state"] not in ("PENDING", "RUNNING", "COMPLETING") for j in jobs)

        system.wait(settled, 120, "every job ended")
        # the close-rule test needs a quiet cycle closed by the idle rule alone
        system.wait(lambda: _has_idle_close(read_facts(system.settings)), 60,
                    "an idle cycle close (every 10 s on a quiet shard)")
        live = system.client.get("/v1/jobs?all=1")["jobs"]
        yield Recorded(system.settings, read_facts(system.settings), marks, live)
    finally:
        system.stop()


def _has_idle_close(facts: list[Fact]) -> bool:
    """Two CycleCompleted in a row in shard order: a cycle that closed with no fact of its own."""
    ordered = sorted(facts, key=lambda f: (f.shard, f.record["shard_seq"]))
    return any(a.name == b.name == "CycleCompleted" and a.shard == b.shard
               for a, b in itertools.pairwise(ordered))


def test_verify_re_decides_every_recorded_cycle_without_a_divergence(recorded: Recorded) -> None:
    reports = verify(recorded.settings, recorded.facts)

    assert len(reports) == 1
    report = reports[0]
    print("\n".join(report.lines()))
    assert report.divergences == [], "\n".join(report.lines())
    assert report.checked == report.cycles > 5
    assert report.requests > 0 and report.facts == len(recorded.facts)


def _close_every_batch(state: Any, now_ms: int, decided: bool, inbox: Any) -> bool:
    return True


def _close_only_batches_with_facts(state: Any, now_ms: int, decided: bool, inbox: Any) -> bool:
    return decided and inbox is not None


@pytest.mark.parametrize("rule", [_close_every_batch, _close_only_batches_with_facts])
def test_verify_reports_divergences_when_the_close_rule_is_not_the_one_that_ran(
    recorded: Recorded, monkeypatch: pytest.MonkeyPatch, rule: Any,
) -> None:
    """verify runs the core's cycle, close rule included: another rule diverges from the ledger
    (closing every batch closes the quiet ones between recorded cycles; closing only batches
    with facts drops the idle closes a quiet shard records every 10 s)."""
    import scheduler.cycle

    monkeypatch.setattr(scheduler.cycle, "cycle_closes", rule)
    [report] = verify(recorded.settings, recorded.facts)

    assert report.divergences, "\n".join(report.lines())
    assert any("CycleCompleted" in str(d["recorded"]) + str(d["redecided"])
               for d in report.divergences)


def test_replay_shows_the_queue_as_it_was_with_pending_reasons(recorded: Recorded) -> None:
    busy = views_at(recorded.facts, recorded.marks["busy"])
    pending = {j["name"]: j["reason"] for j in busy.jobs.values() if j["state"] == "PENDING"}
    running = [j for j in busy.jobs.values() if j["state"] == "RUNNING"]

    assert pending.get("held") == "JobHeldUser"
    assert len(running) == 3 and all(j["name"] == "wide" for j in running)
    assert pending.get("wide") in ("Resources", "Priority")
    assert pending.get("fails") in ("Resources", "Priority")
    before = views_at(recorded.facts, recorded.marks["start"] - 1)
    assert not any(j for j in before.jobs.values() if j["name"] == "fails")

    out = io.StringIO()
    assert audit_run(["replay", "--at", str(recorded.marks["busy"])], out,
                     recorded.settings) == 0
    text = out.getvalue()
    assert "(JobHeldUser)" in text and " R " in text and "NODELIST" in text


def test_replay_of_the_whole_ledger_equals_the_live_views(recorded: Recorded) -> None:
    replayed = views_at(recorded.facts)
    for live in recorded.live_jobs:
        assert replayed.jobs[live["job_sluid"]] == live


def test_audit_explains_each_decision_of_a_job(recorded: Recorded) -> None:
    out = io.StringIO()
    assert audit_run(["audit", "4", "--json"], out, recorded.settings) == 0
    entries = json.loads(out.getvalue())
    facts = [e["fact"] for e in entries]

    assert facts[0] == "JobQueued" and facts[-1] == "JobEnded"
    assert "JobStarted" in facts
    waits = [e["why"] for e in entries if e["fact"] == "JobPending"]
    assert any("waiting for resources" in w or "higher priority" in w for w in waits), waits
    started = next(e["why"] for e in entries if e["fact"] == "JobStarted")
    assert "started in" in started and "the other nodes of the partition were" in started

    text = io.StringIO()
    assert audit_run(["audit", "5"], text, recorded.settings) == 0
    assert "ended FAILED" in text.getvalue() and "exit code 3:0" in text.getvalue()


def test_an_expedited_requeue_after_a_node_failure_is_explained(recorded: Recorded) -> None:
    out = io.StringIO()
    audit_run(["audit", "7", "--json"], out, recorded.settings)
    entries = json.loads(out.getvalue())
    facts = [e["fact"] for e in entries]

    assert facts.count("JobStarted") == 2 and facts[-1] == "JobEnded", facts
    assert {"JobExpediting", "JobRequeued"} <= set(facts)
    why = {e["fact"]: e["why"] for e in entries}
    assert "ahead of every other job" in why["JobExpediting"]
    assert "requeued for run 1: NODE_FAIL" in why["JobRequeued"]
    first_end = next(e for e in entries if e["fact"] == "JobEnded")
    assert first_end["record"]["state"] == "NODE_FAIL"
    assert entries[-1]["record"]["state"] == "COMPLETED"


def test_snapshot_plus_tail_equals_full_replay(recorded: Recorded) -> None:
    ordered = list(merge(recorded.facts))
    middle = len(ordered) // 2

    full = Views()
    for fact in ordered:
        full.apply(fact.name, fact.record)
    half = Views()
    for fact in ordered[:middle]:
        half.apply(fact.name, fact.record)
    snapshot = json.loads(json.dumps({"jobs": half.jobs, "nodes": half.nodes,
                                      "shard_seq": half.shard_seq}))
    resumed = Views(jobs=snapshot["jobs"], nodes=snapshot["nodes"],
                    shard_seq=snapshot["shard_seq"],
                    job_ids={j["job_id"]: s for s, j in snapshot["jobs"].items() if j["job_id"]})
    for fact in ordered[middle:]:
        resumed.apply(fact.name, fact.record)
    assert resumed.jobs == full.jobs and resumed.nodes == full.nodes

    shard = ordered[0].shard
    core_full = scheduler.initial_state(shard, recorded.settings.cluster_id)
    for fact in ordered:
        core_full = scheduler.evolve(core_full, scheduler.from_record(fact.name, fact.record))
    core_half = scheduler.initial_state(shard, recorded.settings.cluster_id)
    for fact in ordered[:middle]:
        core_half = scheduler.evolve(core_half, scheduler.from_record(fact.name, fact.record))
    core = scheduler.restore_state(scheduler.state_meta(core_half), dict(core_half.jobs),
                                   dict(core_half.nodes))
    for fact in ordered[middle:]:
        core = scheduler.evolve(core, scheduler.from_record(fact.name, fact.record))
    assert core.jobs == core_full.jobs and core.nodes == core_full.nodes
    assert scheduler.state_meta(core) == scheduler.state_meta(core_full)



def test_the_running_system_announced_every_run_start_exactly_once(recorded: Recorded) -> None:
    starts = sorted(f.record["run_sluid"] for f in recorded.facts if f.name == "JobStarted")
    user = SchemaOnlyConsumer(recorded.settings.bootstrap, Topics(recorded.settings).job_starts)
    try:
        received = user.read_all()
    finally:
        user.close()
    assert sorted(r["run_sluid"] for r, _h in received) == starts
