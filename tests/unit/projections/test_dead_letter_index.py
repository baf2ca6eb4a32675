"""A request the intake dead-lettered is found by its SLUID: ``/v1/decisions``,
``/v1/dead-letters/<SLUID>``; bounded, no payload kept, and only reason codes to whoever cannot
be shown more (``projections.dead_letter_index``)."""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path

import pytest

from projections.api_auth import Viewer
from projections.dead_letter_index import (
    MEANINGS,
    DeadLetterIndex,
    DeadLetterReader,
    letters_for,
    reason_code,
    shown_letters,
)
from projections.decisions import decisions
from projections.http import ApiServer
from projections.service import ProjectionService
from projections.views import Views
from schemas import SluidGenerator, encode
from streams.dead_letters import dead_letter_value
from streams.settings import Settings
from tests.unit.projections.ledger_builder import LedgerBuilder

REQUESTS = "sluice.requests"
SECRET = b"SLUICE_JWT=hunter2-secret-in-the-payload"


def _letter(key: str, error: str = "Undecodable: bad magic byte 0x17", *,
            source: str = REQUESTS, value: bytes = SECRET, time_ms: int = 1_765_000_000_000
            ) -> bytes:
    return dead_letter_value(source_topic=source, partition=0, offset=7, key=key.encode(),
                             value=value, error=error, now_ms=time_ms)


def _sluids(n: int) -> list[str]:
    generator = SluidGenerator(2)
    return [generator.new() for _ in range(n)]


def test_only_requests_dead_letters_keyed_by_a_sluid_are_kept_never_their_payload() -> None:
    index = DeadLetterIndex(REQUESTS)
    sluid, other = _sluids(2)
    assert index.add(sluid.encode(), _letter(sluid), 0) is not None
    assert index.add(b"not-a-sluid", _letter("not-a-sluid"), 1) is None
    assert index.add(other.encode(), _letter(other, source="sluice.events"), 2) is None
    assert index.add(other.encode(), b"\x17garbage", 3) is None
    assert index.add(other.encode(), encode("CancelJob", {"job_sluid": other}), 4) is None
    assert index.add(b"\xff" * 14, _letter(other), 5) is None
    assert index.add(sluid.encode(), _letter(sluid), 0) is None  # read twice: kept once
    assert len(index) == 1 and index.letters(other) == []
    [letter] = index.letters(sluid)
    assert (letter.code, letter.time_ms, letter.offset) == ("Undecodable", 1_765_000_000_000, 0)
    assert b"hunter2" not in repr(letter).encode()


def test_memory_is_bounded_whatever_a_flood_sends() -> None:
    index = DeadLetterIndex(REQUESTS, kept=100)
    flood, victim = _sluids(2)
    index.add(victim.encode(), _letter(victim, "RequestTooLarge: 2000000 bytes"), 0)
    value = _letter(flood, "Undecodable: " + "x" * 5000)
    started = time.monotonic()
    for offset in range(1, 5001):
        index.add(flood.encode(), value, offset)
    assert time.monotonic() - started < 10
    assert len(index) == 100
    assert index.letters(victim) == []  # pushed out by newer ones
    shown = index.letters(flood)
    assert len(shown) == 20 and shown[-1].offset == 5000  # the newest of one key
    assert all(len(x.reason) <= 300 for x in shown)
    assert len(index._by_key) == 1


def test_reason_codes() -> None:
    assert reason_code("Undecodable: bad magic") == "Undecodable"
    assert reason_code("UnreadableBatch: sluice.requests[0] offset 3: x") == "UnreadableBatch"
    assert reason_code("RequestTooLarge") == "RequestTooLarge"
    assert reason_code("<script>: x") == "DeadLetter"
    assert reason_code("bad-thing: x") == "DeadLetter"


def test_who_sees_what() -> None:
    index = DeadLetterIndex(REQUESTS)
    sluid = _sluids(1)[0]
    index.add(sluid.encode(), _letter(sluid, "KeyMismatch: the key is not job_sluid s0..."), 3)
    letters = index.letters(sluid)
    admin = shown_letters(letters, None, Viewer("root", service=True), ())
    assert admin[0]["detail"].startswith("KeyMismatch: the key")
    operator = shown_letters(letters, "alice", Viewer("olga"), ("olga",))
    assert "detail" in operator[0]
    nobody = shown_letters(letters, None, Viewer(), ())  # no owner known: the code only
    assert nobody == [{"reason": "KeyMismatch", "meaning": MEANINGS["KeyMismatch"],
                       "time_ms": 1_765_000_000_000, "offset": 3}]
    assert shown_letters(letters, "alice", Viewer("bob"), ()) == []  # alice's job: not bob's
    assert shown_letters(letters, "alice", Viewer(), ()) == []
    owner = shown_letters(letters, "alice", Viewer("alice"), ())
    assert owner == nobody  # its sender is not known to be alice: no detail


def test_every_reason_the_intake_writes_has_sluices_own_meaning_never_the_letters_words(
) -> None:
    """The real sender of a dead-lettered request cannot be told from anyone naming its SLUID
    (the letter keeps no credential), so they see no detail (it quotes the record: its key, its
    workdir...); they saw a bare code (``KeyMismatch``) with nothing saying what to fix. Each
    code the intake writes now has fixed words of Sluice's own, shown with the code."""
    import agents.intake_rules
    import agents.schema_ids

    written = set()
    for module in (agents.intake_rules, agents.schema_ids):
        written |= set(re.findall(r"``([A-Z][A-Za-z]+)``", module.__doc__ or ""))
    written -= {"SubmitJob", "TestSubmitJob", "JobRejected", "JobTestAnswered", "Refusal",
                "SLUICE_SCHEMA_REGISTRY_URL", "LOOKUPS_PER_BATCH"}
    written = {code for code in written if not code.isupper()}
    assert written >= {"Undecodable", "RequestTooLarge", "KeyMismatch", "UnknownSchemaId"}
    assert written <= set(MEANINGS), sorted(written - set(MEANINGS))
    index = DeadLetterIndex(REQUESTS)
    sluid = _sluids(1)[0]
    index.add(sluid.encode(), _letter(sluid, "EmptyWorkingDirectory: relative ('hunter2')"), 3)
    [shown] = shown_letters(index.letters(sluid), None, Viewer("mallory"), ())
    assert shown["meaning"] == MEANINGS["EmptyWorkingDirectory"]
    assert "hunter2" not in json.dumps(shown)


def test_a_sender_is_told_the_form_of_their_record_never_its_content() -> None:
    """The sender of a dead-lettered request saw only the code: a client built from other
    schemas got ``Undecodable`` without the fingerprint that says so, a too-large one no sizes.
    The meaning now adds what the error says of the record's form, rebuilt from its tokens
    alone (a fingerprint, sizes, a record name, partitions), never the rest of the error."""
    index = DeadLetterIndex(REQUESTS)
    sluid = _sluids(1)[0]
    errors = {
        "Undecodable: unknown fingerprint 5af3282ee33a6cf3 (CRC-64-AVRO, little-endian)":
            "its fingerprint is 5af3282ee33a6cf3",
        "RequestTooLarge: 70321 bytes (key, value and headers) is more than the limit of 32768 "
        "bytes (SLUICE_MAX_REQUEST_BYTES)": "(it was 70321 bytes; the limit is 32768)",
        f"PartitionMismatch: key '{sluid}' hashes to partition 3 with murmur2 (Java's default "
        "partitioner), but the record is on partition 1; set the producer's partitioner":
            "(its key hashes to partition 3; it was on partition 1)",
        "Undecodable: SubmitJob (current schema): corrupt body: UnicodeDecodeError: hunter2":
            "(a SubmitJob whose body does not match its schema)",
        "KeyMismatch: the CancelJob is keyed 'hunter2'; its key must be 's00hunter2'":
            "(a CancelJob)",
        "EmptyWorkingDirectory: the job's working directory (spec.workdir) is relative "
        "('hunter2'); it must be an absolute path": MEANINGS["EmptyWorkingDirectory"],
        "Undecodable: unknown fingerprint hunter2hunter2hu (CRC-64-AVRO)":
            MEANINGS["Undecodable"],
    }
    for offset, error in enumerate(errors):
        index.add(sluid.encode(), _letter(sluid, error), offset)
    shown = shown_letters(index.letters(sluid), None, Viewer("mallory"), ())
    for letter, (error, expected) in zip(shown, errors.items(), strict=True):
        assert expected in letter["meaning"], (error, letter)
        assert letter["meaning"].startswith(MEANINGS[letter["reason"]])
        assert "hunter2" not in json.dumps(letter)


class _Service:
    """What ``decisions`` reads of the projections service."""

    def __init__(self, builder: LedgerBuilder | None = None) -> None:
        self.lock = threading.RLock()
        self.folded = threading.Condition(self.lock)
        self.views = Views()
        for name, record in (builder.facts if builder else []):
            self.views.apply(name, record)
        self.dead_letter_index = DeadLetterIndex(REQUESTS)

    def freshness(self) -> dict[str, object]:
        return {}


def test_a_waiting_client_gets_the_dead_letter_at_once() -> None:
    service = _Service()
    sluid = _sluids(1)[0]
    service.dead_letter_index.add(sluid.encode(), _letter(sluid), 9)
    started = time.monotonic()
    code, payload = decisions(service, {"ids": [sluid], "wait": ["30"]},  # type: ignore[arg-type]
                              Viewer("bob"))
    assert time.monotonic() - started < 5
    assert code == 200
    assert payload["decisions"][sluid] == {"dead_letter": {
        "reason": "Undecodable", "meaning": MEANINGS["Undecodable"],
        "time_ms": 1_765_000_000_000, "offset": 9}}


def test_a_dead_letter_arriving_during_the_wait_ends_it() -> None:
    service = _Service()
    sluid = _sluids(1)[0]

    def later() -> None:
        time.sleep(0.3)
        with service.folded:
            service.dead_letter_index.add(sluid.encode(), _letter(sluid), 1)
            service.folded.notify_all()

    threading.Thread(target=later).start()
    started = time.monotonic()
    _, payload = decisions(service, {"ids": [sluid], "wait": ["20"]},  # type: ignore[arg-type]
                           Viewer())
    assert time.monotonic() - started < 10
    assert payload["decisions"][sluid]["dead_letter"]["reason"] == "Undecodable"


def test_a_wait_with_a_nonce_or_for_a_job_is_not_answered_by_a_dead_letter() -> None:
    b = LedgerBuilder()
    job = b.queued()
    service = _Service(b)
    other = _sluids(1)[0]
    for sluid in (job, other):
        service.dead_letter_index.add(sluid.encode(), _letter(sluid), 1)
    _, payload = decisions(service, {"ids": [other], "wait": ["0"], "nonces": ["42"]},  # type: ignore[arg-type]
                           Viewer())
    assert payload["decisions"][other] is None  # a dead letter keeps no nonce
    _, payload = decisions(service, {"ids": [job], "wait": ["0"]},  # type: ignore[arg-type]
                           Viewer("bob"))
    assert "job" in payload["decisions"][job]  # the job, not what anyone sent under its SLUID
    assert letters_for(service.dead_letter_index, service.views, job, Viewer("bob")) == []
    assert letters_for(service.dead_letter_index, service.views, job, Viewer("alice"))


@pytest.fixture()
def service(tmp_path: Path) -> ProjectionService:
    return ProjectionService(Settings(home=tmp_path))


def test_the_api_route(service: ProjectionService) -> None:
    sluid = _sluids(1)[0]
    service.dead_letter_index.add(sluid.encode(), _letter(sluid, "RequestTooLarge: 9 bytes"), 4)
    server = ApiServer(service, "127.0.0.1", 0)
    try:
        code, _type, body = server.dispatch(f"/v1/dead-letters/{sluid}", {}, Viewer())
        _, _, none = server.dispatch("/v1/dead-letters/..%2F..%2Fetc", {}, Viewer())
    finally:
        server.httpd.server_close()
    assert code == 200
    assert json.loads(body)["dead_letters"] == [
        {"reason": "RequestTooLarge", "meaning": MEANINGS["RequestTooLarge"],
         "time_ms": 1_765_000_000_000, "offset": 4}]
    assert json.loads(none)["dead_letters"] == []


def test_a_jobs_own_waits_are_never_ended_by_a_letter_under_its_sluid() -> None:
    """``sbatch --wait``, ``srun`` and ``salloc`` poll their job without a nonce until it
    starts or ends; anyone may send an unreadable record under the job's SLUID. The owner may
    see that letter (``/v1/dead-letters``), but it must not answer the owner's wait."""
    b = LedgerBuilder()
    job = b.queued()
    b.pending(job, "Resources")
    service = _Service(b)
    service.dead_letter_index.add(job.encode(), _letter(job), 1)
    for until in ("started", "ended"):
        _, payload = decisions(service, {"ids": [job], "wait": ["0"],  # type: ignore[arg-type]
                                         "until": [until]}, Viewer("alice"))
        assert payload["decisions"][job] is None, until


class _Message:
    def __init__(self, key: str, value: bytes, offset: int) -> None:
        self._key, self._value, self._offset = key, value, offset

    def error(self) -> None:
        return None

    def key(self) -> bytes:
        return self._key.encode()

    def value(self) -> bytes:
        return self._value

    def offset(self) -> int:
        return self._offset

    def partition(self) -> int:
        return 0


class _Topics:
    def __init__(self, topic: str) -> None:
        meta = type("Meta", (), {"error": None, "partitions": {0: None}})()
        self.topics = {topic: meta}


class _FlakyReader:
    """A reader whose broker is restarting (``NOT_LEADER_FOR_PARTITION`` while it positions
    itself) when ``broken``; else it holds ``messages``."""

    def __init__(self, broken: bool, messages: list[_Message]) -> None:
        self.broken, self.messages, self.closed = broken, list(messages), False

    def list_topics(self, topic: str, timeout: float) -> _Topics:
        return _Topics(topic)

    def get_watermark_offsets(self, tp: object, timeout: float) -> tuple[int, int]:
        if self.broken:
            from streams.kafka_native import KafkaError, KafkaException
            raise KafkaException(KafkaError(KafkaError.NOT_LEADER_FOR_PARTITION))
        return 0, len(self.messages)

    def assign(self, start: object) -> None:
        pass

    def consume(self, num_messages: int = 1, timeout: float = 0) -> list[_Message]:
        taken, self.messages = self.messages[:num_messages], self.messages[num_messages:]
        if not taken:
            time.sleep(min(timeout, 0.01))
        return taken

    def close(self) -> None:
        self.closed = True


def test_the_reader_starts_again_after_a_broker_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Views started while the broker came back from a restart (fault round, 2026-12-07):
    the dead letters' reader met NOT_LEADER_FOR_PARTITION positioning itself and stopped for
    good, so no dead letter was ever indexed for the views' life."""
    from projections import dead_letter_index

    monkeypatch.setattr(dead_letter_index, "READER_RETRY_S", 0.01, raising=False)
    key = _sluids(1)[0]
    readers = [_FlakyReader(True, []), _FlakyReader(False, [_Message(key, _letter(key), 3)])]
    made: list[_FlakyReader] = []

    def make(*_args: object, **_kwargs: object) -> _FlakyReader:
        made.append(readers[min(len(made), 1)] if len(made) < 2 else _FlakyReader(False, []))
        return made[-1]

    index, lock, stopping = DeadLetterIndex(REQUESTS), threading.Condition(), threading.Event()
    monkeypatch.setattr(dead_letter_index, "consumer", make)
    reader = DeadLetterReader("unused:9092", "sluice.dead-letters", index, lock, stopping)
    thread = threading.Thread(target=reader.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 5
        while not index.letters(key) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert [letter.offset for letter in index.letters(key)] == [3]
        assert made[0].closed
    finally:
        stopping.set()
        thread.join(5)
    assert not thread.is_alive()
