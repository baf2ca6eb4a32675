from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.harness import LocalSystem


@pytest.fixture
def system(kafka_bootstrap: str, tmp_path: Path, unique: str) -> Iterator[LocalSystem]:
    local = LocalSystem(kafka_bootstrap, tmp_path / "home", f"t{unique}")
    try:
        yield local
    finally:
        local.stop()
