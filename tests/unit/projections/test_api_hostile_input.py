"""The views' HTTP API answers hostile input with a 4xx, never a hang or a dropped connection."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from projections.api_auth import Viewer
from projections.decisions import decisions
from projections.http import ApiServer
from projections.service import ProjectionService
from streams.settings import Settings


@pytest.fixture()
def service(tmp_path: Path) -> ProjectionService:
    return ProjectionService(Settings(home=tmp_path))


def test_a_wait_that_is_not_a_number_is_refused_not_waited_on_for_ever(
        service: ProjectionService) -> None:
    # float("nan") parses, and every comparison with it is false: the long poll never ended
    for text in ("nan", "NaN", "-nan"):
        code, payload = decisions(service, {"ids": ["x"], "wait": [text]}, Viewer())
        assert code == 400, payload
        assert "wait" in payload["error"]


@pytest.mark.parametrize("ref", ["9" * 5000, "\u00b2", "\u00b2_1", "1_\u00b2", "\u0663",
                                 "1_" + "9" * 5000])
def test_a_job_id_that_is_not_a_plain_number_is_a_404(service: ProjectionService,
                                                      ref: str) -> None:
    server = ApiServer(service, "127.0.0.1", 0)
    try:
        code, _type, body = server.dispatch(f"/v1/jobs/{ref}", {})
    finally:
        server.httpd.server_close()
    assert code == 404
    assert json.loads(body)["error"] == f"no job {ref}"
