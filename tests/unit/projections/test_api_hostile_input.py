"""The views' HTTP API answers hostile input with a 4xx, never a hang or a dropped connection."""

from __future__ import annotations

from pathlib import Path

import pytest

from projections.api_auth import Viewer
from projections.decisions import decisions
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
