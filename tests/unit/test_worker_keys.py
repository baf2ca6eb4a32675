"""A worker's keys against the cluster's recent records (``agents.worker_keys``), with fake
records: what it refuses, what it warns about, and that it never prints a secret's text."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agents import worker_keys
from agents.auth.seal import seal_headers
from streams.settings import Settings

NOW = 1_800_000_000_000


class _Record:
    def __init__(self, value: bytes, headers: list[tuple[str, bytes]], stamp_ms: int) -> None:
        self._value, self._headers, self._stamp = value, headers, stamp_ms

    def value(self) -> bytes:
        return self._value

    def headers(self) -> list[tuple[str, bytes]]:
        return self._headers

    def timestamp(self) -> tuple[int, int]:
        return 1, self._stamp


def _inbox(secret: bytes, age_ms: int) -> list[_Record]:
    value = b"tick"
    return [_Record(value, seal_headers(secret, "clock", NOW - age_ms, value), NOW - age_ms)]


@pytest.fixture
def records(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[_Record]]:
    found: dict[str, list[_Record]] = {}

    def tail(_settings: Settings, topic: str) -> Iterator[Any]:
        yield from found.get(topic.rsplit(".", 1)[-1], [])

    monkeypatch.setattr(worker_keys, "_tail", tail)
    return found


def test_a_missing_secret_is_refused_only_while_another_worker_sealed_recently(
        records: dict[str, list[_Record]], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SLUICE_WORKER_SECRET", raising=False)
    settings = Settings(home=tmp_path)
    records["shard-inbox"] = _inbox(b"x" * 32, age_ms=1000)
    [refusal] = worker_keys.key_problems(settings, NOW).refusals
    assert f"no worker secret at {tmp_path / 'worker' / 'inbox.key'}" in refusal
    records["shard-inbox"] = _inbox(b"x" * 32, age_ms=600_000)  # the cluster idle 10 minutes
    assert worker_keys.key_problems(settings, NOW) == worker_keys.KeyProblems()


def test_a_secret_that_does_not_open_the_newest_record_is_a_warning(
        records: dict[str, list[_Record]], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    mine = tmp_path / "mine.key"
    mine.write_bytes(b"m" * 32)
    monkeypatch.setenv("SLUICE_WORKER_SECRET", str(mine))
    records["shard-inbox"] = _inbox(b"o" * 32, age_ms=1000)
    problems = worker_keys.key_problems(Settings(home=tmp_path), NOW)
    assert problems.refusals == () and len(problems.warnings) == 1
    records["shard-inbox"] = _inbox(b"m" * 32, age_ms=1000)
    assert worker_keys.key_problems(Settings(home=tmp_path), NOW) == worker_keys.KeyProblems()


def test_a_secrets_text_put_where_its_path_belongs_is_never_printed(
        records: dict[str, list[_Record]], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The operator's ``authSecret`` puts the secret's value in ``SLUICE_WORKER_SECRET``."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SLUICE_WORKER_SECRET", "s3cr3t-value-of-the-cluster")
    records["shard-inbox"] = _inbox(b"x" * 32, age_ms=1000)
    [refusal] = worker_keys.key_problems(Settings(home=tmp_path), NOW).refusals
    assert "s3cr3t" not in refusal and "the path SLUICE_WORKER_SECRET names" in refusal
