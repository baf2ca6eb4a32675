"""Ended jobs leave the views' memory after MinJobAge and stay answerable from the store.

The service here is the real ``ProjectionService`` over a real RocksDB (no broker: batches of
decoded facts go through ``ProjectionService.fold``, what a batch of ledger messages does after
decoding). The reference is the plain fold, every row in memory, as before.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from projections.decisions import _decision
from projections.extras import history
from projections.http import ApiServer
from projections.service import ProjectionService
from projections.views import ACTIVE_STATES, Views
from streams.rocks import RocksStore
from streams.settings import Settings
from tests.unit.projections.ledger_builder import LedgerBuilder

AGE_S = 60
LATER_MS = (AGE_S + 1) * 1000


def service_at(home: Path, rebuild: bool = False) -> ProjectionService:
    return ProjectionService(Settings(home=home, min_job_age_s=AGE_S), rebuild=rebuild)


def fold(service: ProjectionService, b: LedgerBuilder, batch: int = 5) -> None:
    facts = b.facts
    for start in range(0, len(facts), batch):
        service.fold([(n, r, 0) for n, r in facts[start:start + batch]])


def plain(b: LedgerBuilder) -> Views:
    views = Views()
    for name, record in b.facts:
        views.apply(name, record)
    return views


def stored(service: ProjectionService) -> dict[str, Any]:
    return {row["job_sluid"]: row for row in service.archive.jobs()}


def as_json(value: Any) -> Any:
    return json.loads(json.dumps(value))


def pass_time(b: LedgerBuilder, ms: int = LATER_MS) -> None:
    b.advance(ms)
    b.cycle(0, 0)


class Story:
    """Jobs that end, leave memory, and are named again by queries and late facts."""

    def __init__(self) -> None:
        b = self.b = LedgerBuilder()
        b.node("n1", cpus=64)
        b.node("n2", cpus=64)
        self.old = b.queued(name="old")
        self.old_run = b.started(self.old, ["n1"])
        b.advance(1000)
        b.ended(self.old, self.old_run)
        self.array = b.sluid()
        self.tasks = []
        for task in (0, 1, 2):
            job = b.sluid()
            b.job_ids[job] = len(b.job_ids) + 1
            b.submitted[job] = b.now_ms
            b.fact("JobQueued", job_sluid=job, job_id=b.job_ids[job],
                   spec={"name": "arr", "user": "bob", "command": ["true"]},
                   array_job_sluid=self.array, array_task_id=task)
            self.tasks.append(job)
        for job in self.tasks:
            b.ended(job, "", state="CANCELLED")
        self.refused = b.sluid()
        b.fact("JobRejected", job_sluid=self.refused, reason="InvalidAccount", detail="")
        self.requeued = b.queued(name="again")
        self.requeued_run = b.started(self.requeued, ["n2"])
        b.advance(1000)
        b.ended(self.requeued, self.requeued_run, state="FAILED", exit_code=1)
        self.running = b.queued(name="still running")
        b.started(self.running, ["n1"])
        pass_time(b)
        self.evicted_first = {self.old, *self.tasks, self.refused, self.requeued}

    def late_facts(self) -> None:
        """Facts about jobs that left memory: they must fold as if the rows had stayed."""
        b = self.b
        b.epilog(self.old, self.old_run, "n1", ok=False, detail="epilog exit 1")
        b.fact("JobRejected", job_sluid=self.old, reason="DuplicateSubmission", detail="")
        b.requeued(self.requeued, self.requeued_run, reason="ADMIN", restart_count=1)
        run = b.started(self.requeued, ["n2"], restart_count=1)
        b.advance(2000)
        b.ended(self.requeued, run)
        b.updated(self.old, name="renamed")
        for i in range(20):  # filler that ends and leaves memory in turn
            job = b.queued(name=f"f{i}")
            b.ended(job, b.started(job, ["n2"]))
            b.advance(10_000)
            b.cycle(i, i)


def test_ended_jobs_leave_memory_and_late_facts_fold_as_if_they_had_stayed(tmp_path: Path) -> None:
    story = Story()
    service = service_at(tmp_path)
    fold(service, story.b)
    views = service.views
    assert story.evicted_first.isdisjoint(views.jobs), "ended over MinJobAge ago: not in memory"
    assert story.running in views.jobs
    assert not story.evicted_first & set(views.job_ids.values())
    assert story.array not in views.array_ids

    story.late_facts()
    fold(service, story.b)
    reference = plain(story.b)
    assert stored(service) == as_json(reference.jobs)
    assert service.views.nodes == reference.nodes
    assert service.views.denials.get(story.old) == reference.denials.get(story.old)
    held = set(service.views.jobs)
    assert held < set(reference.jobs)
    horizon = service.views.last_fact_ms - AGE_S * 1000
    for sluid in held:
        row = reference.jobs[sluid]
        assert row["state"] in ACTIVE_STATES or row["end_ms"] >= horizon - 20_000, sluid


def test_queries_answer_for_jobs_that_left_memory(tmp_path: Path) -> None:
    story = Story()
    service = service_at(tmp_path)
    fold(service, story.b)
    views = service.views
    old_id = story.b.job_ids[story.old]
    assert views.job(story.old)["name"] == "old"
    assert views.job(str(old_id))["job_sluid"] == story.old
    first = views.job(story.array)
    assert first is not None and first["job_sluid"] == story.tasks[0]
    assert views.job(f"{first['array_job_id']}_2")["job_sluid"] == story.tasks[2]
    assert views.job(story.refused)["state"] == "REJECTED"
    decision = _decision(views, story.old, until="ended", array=False)
    assert decision is not None and decision["job"]["state"] == "COMPLETED"
    members = _decision(views, story.array, until="", array=True)
    assert members is not None and members["tasks"] == 3
    runs = history(views, {"job": [str(old_id)]})["runs"]
    assert [(r["job_sluid"], r["state"]) for r in runs] == [(story.old, "COMPLETED")]
    every = {r["job_sluid"] for r in history(views, {})["runs"]}
    assert every == set(plain(story.b).jobs)
    api = ApiServer(service, "127.0.0.1", 0)
    try:
        _code, _type, body = api.dispatch("/v1/jobs", {"all": ["1"], "user": ["bob"]})
        listed = json.loads(body)["jobs"]
        assert [j["job_sluid"] for j in listed] == story.tasks
        _code, _type, body = api.dispatch("/v1/jobs", {})
        assert [j["job_sluid"] for j in json.loads(body)["jobs"]] == [story.running]
        code, _type, body = api.dispatch(f"/v1/jobs/{old_id}", {})
        assert code == 200 and json.loads(body)["job"]["job_sluid"] == story.old
        code, _type, body = api.dispatch(f"/v1/jobs/%20{old_id}%2F", {})  # quoted by the client
        assert (code, json.loads(body)["error"]) == (404, f"no job  {old_id}/")
    finally:
        api.httpd.server_close()


def test_a_restart_loads_only_the_retained_jobs(tmp_path: Path) -> None:
    story = Story()
    service = service_at(tmp_path)
    fold(service, story.b)
    held = set(service.views.jobs)
    service.store.close()

    again = service_at(tmp_path)
    assert set(again.views.jobs) == held
    assert again.views.job(str(story.b.job_ids[story.old]))["job_sluid"] == story.old
    story.late_facts()
    fold(again, story.b, batch=len(story.b.facts))  # the replayed ones are ignored
    assert stored(again) == as_json(plain(story.b).jobs)


def test_a_rebuild_gives_the_rows_of_a_fold_that_keeps_everything(tmp_path: Path) -> None:
    story = Story()
    story.late_facts()
    first = service_at(tmp_path)
    fold(first, story.b, batch=3)
    first.store.close()
    rebuilt = service_at(tmp_path, rebuild=True)
    assert rebuilt.views.jobs == {}
    fold(rebuilt, story.b, batch=11)
    assert stored(rebuilt) == as_json(plain(story.b).jobs)


def test_a_store_of_the_previous_release_is_indexed_once_at_start(tmp_path: Path) -> None:
    story = Story()
    reference = plain(story.b)
    path = tmp_path / "projections" / "views.db"
    store = RocksStore(path)  # what the previous release wrote: rows and meta, no index
    store.write({**{f"job:{k}".encode(): json.dumps(v).encode()
                    for k, v in reference.jobs.items()},
                 b"meta": json.dumps({"shard_seq": reference.shard_seq,
                                      "last_fact_ms": reference.last_fact_ms,
                                      "positions": {}}).encode()})
    store.close()
    service = service_at(tmp_path)
    assert set(service.views.jobs) == {story.running}
    assert service.views.job(str(story.b.job_ids[story.old]))["job_sluid"] == story.old
    assert json.loads(service.store.get(b"meta") or b"{}")["archive"] == 1


def test_memory_holds_the_active_jobs_and_a_window_however_many_jobs_ended(
        tmp_path: Path) -> None:
    b = LedgerBuilder()
    b.node("n1", cpus=64)
    service = service_at(tmp_path)
    sizes = []
    for round_ in range(6):
        for _ in range(50):
            job = b.queued(command=["/bin/sleep", "1"])
            b.ended(job, b.started(job, ["n1"]))
            b.advance(1000)
        b.cycle(round_, round_)
        fold(service, b, batch=len(b.facts))
        b.facts.clear()
        views = service.views
        sizes.append((len(views.jobs), len(views.job_ids), len(views.ended)))
    window = AGE_S + 1  # one job a second, dropped once unchanged for MinJobAge
    assert all(jobs <= window and ids <= window and ended <= window
               for jobs, ids, ended in sizes), sizes
    assert sum(1 for _ in service.archive.jobs()) == 300


def test_what_leaves_memory_does_not_depend_on_how_the_ledger_interleaved(tmp_path: Path) -> None:
    story = Story()
    facts = story.b.facts
    held_back = facts[-4:-1]  # the last cycle arrives before the three facts ahead of it
    reordered = [*facts[:-4], facts[-1], *held_back]
    service = service_at(tmp_path)
    service.fold([(n, r, 0) for n, r in reordered])
    assert story.evicted_first.isdisjoint(service.views.jobs)
    assert stored(service) == as_json(plain(story.b).jobs)
