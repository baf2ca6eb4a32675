"""srun's and salloc's wait for their allocation (cli/run_alloc.py ``wait_started``): a job
that cannot start at once is said to be queued after a short first look, as Slurm's srun says
so as soon as its allocation request comes back pending, not after a whole long poll (55 s);
the later looks are long polls. Against a views API of the test's own."""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli.client import Client
from cli.run_alloc import wait_started
from streams.settings import Settings
from tests.unit.cli.json_api import json_api


class _Views:
    """Answers the first ``pending`` decision polls with nothing, then with a started job;
    notes each poll's wait."""

    def __init__(self, pending: int) -> None:
        self.pending = pending
        self.waits: list[float] = []


@pytest.fixture
def views() -> Iterator[tuple[str, _Views]]:
    state = _Views(2)

    def answer(path: str) -> dict[str, object]:
        query = urllib.parse.parse_qs(urllib.parse.urlparse(path).query)
        state.waits.append(float(query["wait"][0]))
        started = len(state.waits) > state.pending
        job = {"state": "RUNNING", "job_id": 7, "run_sluid": "s0000000000002"}
        return {"decisions": {"s0000000000001": {"job": job}} if started else {},
                "freshness": {"cycle_age_s": {"s0": 0.1}}}

    with json_api(answer) as address:
        yield address, state


def test_a_queued_job_is_said_queued_after_a_short_first_look(
        views: tuple[str, _Views], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    address, state = views
    client = Client(Settings(api=address, home=tmp_path, contact_timeout_s=600.0))
    job = wait_started(client, "s0000000000001", 7, "srun")
    assert job is not None and job["state"] == "RUNNING"
    assert state.waits[0] <= 1.0, state.waits  # the first look is short
    assert all(wait > 10.0 for wait in state.waits[1:]), state.waits  # then long polls
    assert capsys.readouterr().err.splitlines() == [
        "srun: job 7 queued and waiting for resources",
        "srun: job 7 has been allocated resources"]


def test_a_job_started_at_the_first_look_says_nothing(
        views: tuple[str, _Views], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    address, state = views
    state.pending = 0
    client = Client(Settings(api=address, home=tmp_path, contact_timeout_s=600.0))
    assert wait_started(client, "s0000000000001", 7, "salloc") is not None
    assert capsys.readouterr().err == ""
    assert len(state.waits) == 1


def test_a_ctrl_c_inside_the_submission_cancels_what_was_sent(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """srun's Ctrl-C before the shard's answer came back: the job may be queued (or running)
    already; srun cancels every job it submitted instead of leaving it to hold its nodes."""
    from cli import run_alloc

    sent: list[tuple[str, str, dict[str, object]]] = []

    def submit(self: Client, spec: dict[str, object], wait_s: float = 60.0) -> object:
        self.submitted.append("s0000000000009")
        raise KeyboardInterrupt

    def send(self: Client, key: str, name: str, record: dict[str, object]) -> None:
        sent.append((key, name, record))

    monkeypatch.setattr(Client, "submit", submit)
    monkeypatch.setattr(Client, "send", send)
    monkeypatch.chdir(tmp_path)
    settings = Settings(api="127.0.0.1:9", home=tmp_path)
    argv = ["-N", "1", "--wrap", "true"]
    assert run_alloc.allocate(argv, settings, "srun") == 130
    assert [(key, name, record["job_sluid"]) for key, name, record in sent] == [
        ("s0000000000009", "CancelJob", "s0000000000009")]
    assert capsys.readouterr().err == "srun: Job allocation has been revoked.\n"
