"""The intake hands what it decoded to the shard runner of the same worker
(``agents.decoded_requests``): the runner opens the same request as by decoding, only after
the seal verified, once; the table stays bounded."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from agents import inbox_records
from agents.auth.seal import SealChecker, worker_secret
from agents.decoded_requests import DECODED, DecodedRequests
from agents.gap_reader import GapRecord
from agents.inbox_records import open_inbox_record
from agents.intake_batch import IntakeBatch
from agents.intake_gaps import IntakeGaps
from agents.shard_runner import InboxRecord
from schemas import SluidGenerator, encode
from streams.partitioner import partition_for
from streams.settings import Settings
from streams.topics import Topics

T0 = 1_800_000_000_000


def _request(settings: Settings) -> GapRecord:
    sluid = SluidGenerator(settings.cluster_id).new()
    value = encode("SubmitJob", {"job_sluid": sluid, "spec": {
        "user": "alice", "command": ["true"], "workdir": "/tmp"}})
    key = sluid.encode()
    return GapRecord(Topics(settings).requests, partition_for(key, settings.partitions), 7, T0,
                     key, value, ())


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    (tmp_path / "worker").mkdir()
    return Settings(bootstrap="unused:1", prefix="t", partitions=3, home=tmp_path)


def test_the_runner_opens_what_the_intake_decoded_as_it_would_by_decoding(
    settings: Settings, monkeypatch: pytest.MonkeyPatch,
) -> None:
    intake = IntakeBatch(settings, None, IntakeGaps(None, None, "", ""))  # type: ignore[arg-type]
    message = _request(settings)
    (planned,), letter = intake._plan(message)
    assert letter is None
    record = InboxRecord(0, T0, planned.value, tuple(planned.headers))
    secret = worker_secret(settings.home)
    now = int(time.time() * 1000)  # the intake sealed its own clock
    by_decoding = open_inbox_record(record, secret, SealChecker(), now)
    assert not isinstance(by_decoding, str)
    assert len(DECODED) >= 1

    def no_decode(_value: bytes) -> None:
        raise AssertionError("decoded again")

    monkeypatch.setattr(inbox_records, "decode", no_decode)
    handed = open_inbox_record(record, secret, SealChecker(), now, DECODED)
    assert handed == by_decoding
    with pytest.raises(AssertionError, match="decoded again"):  # taken once
        open_inbox_record(record, secret, SealChecker(), now, DECODED)


def test_a_record_whose_seal_fails_takes_nothing(settings: Settings) -> None:
    table = DecodedRequests()
    message = _request(settings)
    table.put(message.value or b"", "SubmitJob", {"job_sluid": "x"})
    forged = InboxRecord(0, T0, message.value or b"", (("sluice-origin", b"intake"),))
    opened = open_inbox_record(forged, worker_secret(settings.home), SealChecker(), T0, table)
    assert isinstance(opened, str) and "not sealed" in opened
    assert len(table) == 1  # still there: only a verified record takes it


def test_the_table_keeps_at_most_its_capacity_oldest_out() -> None:
    table = DecodedRequests(capacity=3)
    for i in range(5):
        table.put(bytes([i]), "SubmitJob", {"i": i})
    assert len(table) == 3
    assert table.take(bytes([0])) is None and table.take(bytes([1])) is None
    assert table.take(bytes([4])) == ("SubmitJob", {"i": 4})
    assert table.take(bytes([4])) is None
