"""``--export`` values never reach the views (and so neither the API, metrics nor notifications)."""

from __future__ import annotations

import json

from projections.views import Views

SECRET = "s3cr3t-token-value"


def test_an_exported_value_is_in_no_view_row() -> None:
    views = Views()
    spec = {"user": "alice", "command": ["true"], "env": {"API_TOKEN": SECRET}}
    views.apply("JobQueued", {"event_sluid": "e1", "shard": "s", "shard_seq": 1,
                              "time_ms": 1, "job_sluid": "j1", "job_id": 1, "spec": spec})
    assert views.jobs["j1"]["user"] == "alice"
    assert SECRET not in json.dumps(views.jobs)
    assert "API_TOKEN" not in json.dumps(views.jobs)


def test_a_refused_request_changes_no_job_row_and_is_kept_by_subject() -> None:
    views = Views()
    views.apply("JobQueued", {"event_sluid": "e1", "shard": "s", "shard_seq": 1, "time_ms": 1,
                              "job_sluid": "j1", "job_id": 1,
                              "spec": {"user": "alice", "command": ["true"]}})
    before = json.dumps(views.jobs)
    views.apply("RequestDenied", {"event_sluid": "e2", "shard": "s", "shard_seq": 2,
                                  "time_ms": 2, "request": "CancelJob", "subject_sluid": "j1",
                                  "requester": "bob", "reason": "NotOwner", "detail": "no"})
    views.apply("JobRejected", {"event_sluid": "e3", "shard": "s", "shard_seq": 3, "time_ms": 3,
                                "job_sluid": "j1", "reason": "AccessDenied", "detail": "no",
                                "retryable": False})
    assert json.dumps(views.jobs) == before
    assert [d["reason"] for d in views.denials["j1"]] == ["NotOwner", "AccessDenied"]
