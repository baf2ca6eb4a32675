"""Ended jobs leave the projections' memory and are still answered, against a real broker.

The real projections service, API and extras read a ledger written with a transactional
producer as the shard writes it; ``MinJobAge`` is 60 s of the ledger's own time.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from tests.unit.projections.kafka_ledger import LedgerWriter, running_projections, settings_for
from tests.unit.projections.test_views_retention import AGE_S, Story, as_json, plain, stored


def test_ended_jobs_leave_memory_and_are_answered_across_restart_and_rebuild(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    prefix = f"viewsret{uuid.uuid4().hex[:8]}"  # a ledger of its own, however often it runs
    settings = settings_for(kafka_bootstrap, tmp_path, prefix).with_(min_job_age_s=AGE_S)
    writer = LedgerWriter(settings)
    story = Story()
    writer.write(story.b.facts)
    old_id = story.b.job_ids[story.old]
    with running_projections(settings) as proj:
        proj.wait_applied(story.b.shard, len(story.b.facts))
        with proj.service.lock:
            assert story.evicted_first.isdisjoint(proj.service.views.jobs)
        assert proj.get_json(f"/v1/jobs/{old_id}")["job"]["job_sluid"] == story.old
        assert proj.get_json(f"/v1/jobs/{story.array}")["job"]["job_sluid"] == story.tasks[0]
        runs = proj.get_json(f"/v1/history?job={story.old}")["runs"]
        assert [r["state"] for r in runs] == ["COMPLETED"]
        listed = proj.get_json("/v1/jobs?all=1")["jobs"]
        assert {j["job_sluid"] for j in listed} == set(plain(story.b).jobs)
        decided = proj.get_json(f"/v1/decisions?ids={story.old}&until=ended&wait=5")
        assert decided["decisions"][story.old]["job"]["state"] == "COMPLETED"

        seen = len(story.b.facts)
        story.late_facts()
        writer.write(story.b.facts[seen:])
        proj.wait_applied(story.b.shard, len(story.b.facts))
        with proj.service.lock:
            assert stored(proj.service) == as_json(plain(story.b).jobs)
            held = set(proj.service.views.jobs)

    with running_projections(settings) as proj:  # a restart resumes with the same memory
        proj.wait_applied(story.b.shard, len(story.b.facts))
        with proj.service.lock:
            assert set(proj.service.views.jobs) == held
        assert proj.get_json(f"/v1/jobs/{old_id}")["job"]["name"] == "renamed"

    with running_projections(settings, rebuild=True) as proj:
        proj.wait_applied(story.b.shard, len(story.b.facts))
        with proj.service.lock:
            assert stored(proj.service) == as_json(plain(story.b).jobs)
            assert set(proj.service.views.jobs) == held
