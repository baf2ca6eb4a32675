"""Waiting commands and a system that is gone (cli/contact.py): ``sbatch --wait``'s long poll and
srun's wait for its allocation end with "Unable to contact" after ``SLUICE_CONTACT_TIMEOUT``,
whether the views' API does not answer or answers from views whose shards no longer cycle (the
broker or the worker gone). Against a closed port and a views API of the test's own."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli.client import Client, SystemUnreachableError
from cli.contact import Contact
from cli.run_alloc import wait_started
from streams.settings import Settings
from tests.unit.cli.json_api import json_api


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _fresh(*ages: float) -> dict[str, object]:
    return {"freshness": {"cycle_age_s": {f"s{i}": age for i, age in enumerate(ages)}}}


def test_answers_of_cycling_shards_keep_the_contact() -> None:
    clock = Clock()
    contact = Contact(60.0, clock)
    for _ in range(10):
        clock.now += 30
        contact.answered(_fresh(4.0, 900.0))  # one shard cycles: the system moves
        assert contact.lost() is None


def test_a_silent_api_loses_the_contact_after_the_limit() -> None:
    clock = Clock()
    contact = Contact(60.0, clock)
    clock.now += 59
    contact.failed("the views' API at 127.0.0.1:9 does not answer")
    assert contact.lost() is None
    clock.now += 1
    assert contact.lost() == ("Unable to contact the Sluice system for 60 s: the views' API at "
                              "127.0.0.1:9 does not answer")


def test_views_whose_shards_stopped_cycling_are_no_contact() -> None:
    """The views answer from what they last read: their answers must not keep a waiting
    command alive once no shard cycles (the broker or the worker gone)."""
    clock = Clock()
    contact = Contact(60.0, clock)
    contact.answered(_fresh(5.0))
    for _ in range(6):
        clock.now += 10
        contact.answered(_fresh(5.0 + clock.now - 1000.0))
    lost = contact.lost()
    assert lost is not None and "no shard has completed a cycle for 65 s" in lost
    assert contact.left() == 0.0


def test_views_with_no_shard_yet_count_as_heard() -> None:
    clock = Clock()
    contact = Contact(60.0, clock)
    clock.now += 100
    contact.answered({"freshness": {"cycle_age_s": {}}})
    assert contact.lost() is None and contact.left() == 60.0


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _client(api: str, tmp_path: Path, limit_s: float) -> Client:
    return Client(Settings(api=api, home=tmp_path, contact_timeout_s=limit_s))


def test_a_wait_for_a_jobs_end_ends_when_the_api_is_gone(tmp_path: Path) -> None:
    """``sbatch --wait`` (no ``--timeout``: for ever) retried a views API that does not answer
    for ever."""
    client = _client(f"127.0.0.1:{_closed_port()}", tmp_path, 1.0)
    started = time.monotonic()
    with pytest.raises(SystemUnreachableError, match="Unable to contact the Sluice system for 1 s"):
        client.wait_ended("s0000000000001", float("inf"))
    assert time.monotonic() - started < 10


@pytest.fixture
def stale_views() -> Iterator[str]:
    """A views API whose shards last cycled 500 s ago, that decides nothing (each long poll
    answers after a tenth of its wait)."""

    def answer(path: str) -> dict[str, object]:
        wait = float(path.partition("wait=")[2].partition("&")[0] or 0)
        time.sleep(min(wait, 30.0) / 10)
        return {"decisions": {}, **_fresh(500.0)}

    with json_api(answer) as address:
        yield address


def test_a_wait_for_a_jobs_end_ends_when_no_shard_cycles(stale_views: str,
                                                         tmp_path: Path) -> None:
    client = _client(stale_views, tmp_path, 2.0)
    started = time.monotonic()
    with pytest.raises(SystemUnreachableError, match="no shard has completed a cycle for 500 s"):
        client.wait_ended("s0000000000001", float("inf"))
    assert time.monotonic() - started < 15


def test_srun_waiting_for_its_allocation_ends_when_no_shard_cycles(
        stale_views: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    client = _client(stale_views, tmp_path, 2.0)
    started = time.monotonic()
    assert wait_started(client, "s0000000000001", 7, "srun", quiet=True) is None
    assert time.monotonic() - started < 15
    err = capsys.readouterr().err
    assert err.startswith("srun: error: Unable to contact the Sluice system for 2 s"), err
    assert "Traceback" not in err
