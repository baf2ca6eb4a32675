"""``GET /v1/denials/<SLUID>`` under ``PrivateData=jobs``: who asked and the detail are shown
to the requester, the job's owner, operators and the service only. Found by h4 (2026-12-07):
the route gave every reader the requester and detail of every refusal (bob's refused cancel of
alice's job named bob and quoted its detail to mallory), where the job rows and dead letters
are filtered by viewer."""

from __future__ import annotations

import json
from pathlib import Path

from projections.api_auth import Viewer
from projections.http import ApiServer
from projections.service import ProjectionService
from streams.settings import Settings


def _denials(server: ApiServer, viewer: Viewer) -> list[dict[str, object]]:
    _code, _type, body = server.dispatch("/v1/denials/j1", {}, viewer)
    return list(json.loads(body)["denials"])


def test_a_refusal_names_its_requester_only_to_those_who_may_see_it(tmp_path: Path) -> None:
    service = ProjectionService(Settings(home=tmp_path))
    views = service.views
    views.apply("JobQueued", {"event_sluid": "e1", "shard": "s", "shard_seq": 1, "time_ms": 1,
                              "job_sluid": "j1", "job_id": 1,
                              "spec": {"user": "alice", "command": ["true"]}})
    views.apply("RequestDenied", {"event_sluid": "e2", "shard": "s", "shard_seq": 2,
                                  "time_ms": 2, "request": "CancelJob", "subject_sluid": "j1",
                                  "requester": "bob", "reason": "NotOwner",
                                  "detail": "job 1 is alice's"})
    server = ApiServer(service, "127.0.0.1", 0)
    try:
        views.private_jobs = False  # Slurm's default: everything shown
        assert _denials(server, Viewer("mallory"))[0]["requester"] == "bob"
        views.private_jobs = True
        views.privileged = ("opal",)
        hidden = _denials(server, Viewer("mallory"))[0]
        assert hidden["requester"] == "" and hidden["detail"] == ""
        assert hidden["reason"] == "NotOwner" and hidden["request"] == "CancelJob"
        assert _denials(server, Viewer(""))[0]["requester"] == ""  # no credential
        for who in (Viewer("bob"), Viewer("alice"), Viewer("opal"), Viewer("x", service=True)):
            seen = _denials(server, who)[0]
            assert seen["requester"] == "bob" and seen["detail"] == "job 1 is alice's", who
    finally:
        service.store.close()
