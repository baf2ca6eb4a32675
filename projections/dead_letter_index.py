"""The dead letters of requests, by key: how a client finds why the intake refused its record.

A request the intake dead-letters (unknown schema id, undecodable, too large, wrong key...)
never reaches the ledger, so neither ``GET /v1/decisions`` nor ``sluice audit`` nor
``sluice show job`` could say anything about it. The views therefore read
``<prefix>.dead-letters`` too (:class:`DeadLetterReader`, a thread of its own) and keep, for
the letters of ``<prefix>.requests`` whose key is a SLUID (the key is the subject's SLUID by
contract), the newest :data:`LETTERS_KEPT` in memory (:class:`DeadLetterIndex`): each one's
key, reason (the error's first :data:`REASON_MAX_CHARS` characters), time and offset. Never
the record's value, which may hold secrets. Memory is bounded whatever is sent: a flood only
pushes older letters out, and each letter is a few hundred bytes at most.

**Who sees what** (:func:`shown_letters`). A dead letter keeps no header, so the credential of
the record it stands for is gone (the intake does not authenticate a record it cannot read),
and its key was chosen by its sender: it never names a user. So:

- root, the service user, administrators and operators see the reason and its detail;
- when the SLUID names a job the views have (its owner is known from the ledger), only its
  owner and those see that a request under it was dead-lettered, and the owner sees the
  reason code only (the letter may have been sent by someone else, and its detail is theirs);
- when it names no job (no owner can be established), anyone who names the SLUID sees the
  reason code and time only (``Undecodable``, ``RequestTooLarge``...), never the detail.

Whoever sees a letter also gets its ``meaning`` (:data:`MEANINGS`): Sluice's own fixed words
for its reason code, what to fix, and what the error says of the record's form (its size and
the limit, its header's fingerprint, its record name: :func:`summary_of`), never its content.
The real sender cannot be told from anyone else who names the SLUID (the letter keeps no
credential), and the detail is built from the record (a ``KeyMismatch`` quotes the key and the
SLUID inside the value, an ``EmptyWorkingDirectory`` the workdir, a decode error a field's
value), so the detail stays the operators'; the meaning says as much as a sender needs to fix
their own request.

Started at the newest :data:`LETTERS_KEPT` records of the topic, not its beginning (30 days),
so a restart costs at most that many reads.
"""

from __future__ import annotations

import itertools
import logging
import re
import threading
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from projections.api_auth import Viewer
from schemas import DecodeError, decode
from schemas.sluid import is_sluid
from streams.clients import consumer, ready_messages

if TYPE_CHECKING:
    from projections.views import Views

__all__ = ["LETTERS_KEPT", "MEANINGS", "DeadLetterIndex", "DeadLetterReader", "Letter",
           "letters_for", "meaning_of", "reason_code", "shown_letters", "shown_meaning",
           "summary_of"]

log = logging.getLogger(__name__)

LETTERS_KEPT = 10_000
"""The newest dead letters of requests the views keep (memory only)."""
REASON_MAX_CHARS = 300
"""How much of a letter's error the index keeps (the reason code and the start of its detail)."""
PER_KEY_SHOWN = 20
"""The most letters one SLUID's answer lists (the newest)."""
_SLUID_MAX_BYTES = 64

MEANINGS: dict[str, str] = {
    "EmptyRecord": "the record had no value",
    "RequestTooLarge": "key, value and headers were larger than the cluster's limit "
                       "(SLUICE_MAX_REQUEST_BYTES, 1000000 bytes by default)",
    "Undecodable": "the value is not a Sluice record: not the single-object encoding "
                   "(C3 01, the schema's fingerprint, the Avro body) of a schema the cluster "
                   "knows, or a body that does not match it",
    "NotARequest": "the record is a Sluice record but not a request",
    "KeyMismatch": "the record's key is not its subject's SLUID (a job's request: its "
                   "job_sluid)",
    "PartitionMismatch": "the record is not on the partition its key hashes to with murmur2 "
                         "(librdkafka and kcat: -X topic.partitioner=murmur2_random)",
    "EmptyWorkingDirectory": "the job's working directory (spec.workdir) is empty or "
                             "relative: it must be absolute",
    "InvalidSluid": "the request's request_sluid is not a SLUID",
    "UnreadableBatch": "the batch holding the record could not be decompressed or read",
    "ForwardFailed": "the intake could not forward the record; send it again",
    "InternalError": "the intake failed while checking the record; an operator has the "
                     "detail",
    "NoSchemaRegistry": "a Confluent-framed record, and the cluster has no schema registry",
    "UnknownSchemaId": "the schema registry has no schema with the record's schema id",
    "ForeignSchema": "the record's schema id names a schema that is not a Sluice record",
    "RegistryUnavailable": "the schema registry did not answer in time; send it again",
    "SchemaLookupLimit": "too many new schema ids in one batch; send it again",
}
"""Sluice's own words for each reason code the intake dead-letters a request with
(agents/intake_rules.py, agents/schema_ids.py): shown to whoever may see a letter's code."""
_CODE = re.compile(r"[A-Za-z][A-Za-z0-9]{0,47}")


@dataclass(frozen=True, slots=True)
class Letter:
    """One dead letter of a request, as the index keeps it."""

    key: str
    reason: str
    """The error, cut to :data:`REASON_MAX_CHARS`: ``Code: detail``."""
    time_ms: int
    offset: int
    """Its offset on the dead letters topic."""
    partition: int = 0

    @property
    def code(self) -> str:
        return reason_code(self.reason)


def reason_code(error: str) -> str:
    """The named reason an error starts with (``Undecodable: bad magic`` → ``Undecodable``);
    ``DeadLetter`` when it starts with no name."""
    match = _CODE.match(error)
    if match is None or error[match.end():match.end() + 1] not in ("", ":", " "):
        return "DeadLetter"
    return match.group(0)


_NAME = r"([A-Z][A-Za-z0-9]{0,63})"
_SUMMARIES: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], str]], ...] = (
    (re.compile(r"Undecodable: unknown fingerprint ([0-9a-f]{16}) "),
     lambda m: f"its fingerprint is {m[1]}, not one of this cluster's schemas (a client built "
               "from other schemas: docs/wire-format.md lists the fingerprints)"),
    (re.compile(r"Undecodable: unknown magic bytes? (0x[0-9a-f]{2}(?: 0x[0-9a-f]{2})?):"),
     lambda m: f"it starts with {m[1]}"),
    (re.compile(r"Undecodable: truncated single-object header: (\d{1,9}) bytes"),
     lambda m: f"it is {m[1]} bytes, shorter than the 10-byte header"),
    (re.compile(rf"Undecodable: {_NAME}: truncated body \((\d{{1,9}}) bytes\)"),
     lambda m: f"a {m[1]} whose body ends early ({m[2]} bytes)"),
    (re.compile(rf"Undecodable: {_NAME}: (\d{{1,9}}) trailing bytes after the body"),
     lambda m: f"a {m[1]} with {m[2]} bytes after its body"),
    (re.compile(rf"Undecodable: {_NAME} \(.{{0,40}}\): corrupt body"),
     lambda m: f"a {m[1]} whose body does not match its schema"),
    (re.compile(rf"Undecodable: {_NAME}: cannot resolve"),
     lambda m: f"a {m[1]} of a schema that does not resolve to this cluster's"),
    (re.compile(r"RequestTooLarge: (\d{1,12}) bytes .{0,60}limit of (\d{1,12}) bytes"),
     lambda m: f"it was {m[1]} bytes; the limit is {m[2]}"),
    (re.compile(r"PartitionMismatch: key '[^']{0,64}' hashes to partition (\d{1,6}) .{0,80}"
                r"record is on partition (\d{1,6})"),
     lambda m: f"its key hashes to partition {m[1]}; it was on partition {m[2]}"),
    (re.compile(rf"(?:KeyMismatch|EmptyWorkingDirectory|InvalidSluid): the {_NAME}(?:'s)? "),
     lambda m: f"a {m[1]}"),
    (re.compile(rf"NotARequest: a {_NAME} record "), lambda m: f"a {m[1]}"),
)
"""What a letter's error says that is about the record's form, never its content: sizes, the
fingerprint or magic bytes of its header (its schema, not its data), the record's name, the
partitions of a misplaced record (the key is the SLUID asked about). Each is rebuilt from the
matched tokens alone, so nothing else of the error (a key, a workdir, a field's value) is
shown."""


def meaning_of(code: str) -> str:
    """:data:`MEANINGS`' words for ``code``; a code it does not know (a letter not written by
    the intake) has none."""
    return MEANINGS.get(code, "")


def summary_of(error: str) -> str:
    """The form of the record a letter's ``error`` describes (see :data:`_SUMMARIES`), or ""."""
    for pattern, words in _SUMMARIES:
        match = pattern.match(error)
        if match is not None:
            return words(match)
    return ""


def shown_meaning(letter: Letter) -> str:
    """The meaning of the letter's code and, when its error says one, the record's form:
    ``the value is not a Sluice record: … (its fingerprint is 5af3…)``."""
    meaning = meaning_of(letter.code)
    summary = summary_of(letter.reason) if meaning else ""
    return f"{meaning} ({summary})" if summary else meaning


class DeadLetterIndex:
    """The newest dead letters of requests, by key (a SLUID); not thread-safe: the caller holds
    the views' lock."""

    def __init__(self, requests_topic: str, kept: int = LETTERS_KEPT) -> None:
        self.requests_topic = requests_topic
        self.kept = kept
        self._letters: OrderedDict[tuple[int, int], Letter] = OrderedDict()  # oldest first
        self._by_key: dict[str, deque[tuple[int, int]]] = {}

    def __len__(self) -> int:
        return len(self._letters)

    def parse(self, key: bytes | None, value: bytes | None, offset: int,
              partition: int = 0) -> Letter | None:
        """The letter one record of the dead letters topic stands for, or None when it is not
        a request's dead letter keyed by a SLUID (or not a dead letter at all). Reads nothing
        of the index: the reader decodes outside the views' lock."""
        if not key or len(key) > _SLUID_MAX_BYTES or not value:
            return None
        try:
            text = key.decode("ascii")
        except UnicodeDecodeError:
            return None
        if not is_sluid(text):
            return None
        try:
            name, record = decode(value)
        except DecodeError:
            return None
        if name != "DeadLetter" or record.get("source_topic") != self.requests_topic:
            return None
        return Letter(text, str(record.get("error", ""))[:REASON_MAX_CHARS],
                      int(record.get("time_ms", 0)), offset, partition)

    def keep(self, letter: Letter) -> bool:
        """Keep ``letter`` (the oldest kept goes past :attr:`kept`); False if it is kept
        already (a record read twice)."""
        position = (letter.partition, letter.offset)
        if position in self._letters:
            return False
        self._letters[position] = letter
        self._by_key.setdefault(letter.key, deque()).append(position)
        while len(self._letters) > self.kept:
            _, old = self._letters.popitem(last=False)
            positions = self._by_key[old.key]
            positions.popleft()  # the oldest letter is the oldest of its key too
            if not positions:
                del self._by_key[old.key]
        return True

    def add(self, key: bytes | None, value: bytes | None, offset: int,
            partition: int = 0) -> Letter | None:
        """:meth:`parse` then :meth:`keep`; the letter kept, or None."""
        letter = self.parse(key, value, offset, partition)
        return letter if letter is not None and self.keep(letter) else None

    def letters(self, sluid: str) -> list[Letter]:
        """The newest :data:`PER_KEY_SHOWN` letters keyed by ``sluid``, oldest first."""
        positions = self._by_key.get(sluid)
        if not positions:
            return []
        newest = [self._letters[p] for p in itertools.islice(reversed(positions), PER_KEY_SHOWN)]
        return newest[::-1]


def shown_letters(letters: list[Letter], owner: str | None, viewer: Viewer,
                  privileged: tuple[str, ...]) -> list[dict[str, Any]]:
    """``letters`` as ``viewer`` may see them (see the module docstring); ``owner`` is the
    user of the job the SLUID names (None: no job; "" a job whose owner is unknown)."""
    if viewer.service or (viewer.user and viewer.user in privileged):
        return [{"reason": x.code, "meaning": shown_meaning(x), "detail": x.reason,
                 "time_ms": x.time_ms, "offset": x.offset} for x in letters]
    if owner and viewer.user != owner:
        return []
    return [{"reason": x.code, "meaning": shown_meaning(x), "time_ms": x.time_ms,
             "offset": x.offset} for x in letters]


def letters_for(index: DeadLetterIndex, views: Views, sluid: str,
                viewer: Viewer) -> list[dict[str, Any]]:
    """What ``viewer`` may see of the dead letters keyed by ``sluid`` (called holding the
    views' lock); the owner is the user of the job the views have under it, if any."""
    letters = index.letters(sluid)
    if not letters:
        return []
    job = views.lookup(sluid)
    owner = None if job is None else str(job.get("user") or "")
    return shown_letters(letters, owner, viewer, views.privileged)


READER_RETRY_S = 5.0
"""How long the dead letters' reader waits after a broker error before it starts again."""


class DeadLetterReader:
    """Reads ``<prefix>.dead-letters`` into an index, from its newest :data:`LETTERS_KEPT`
    records on; ``run()`` blocks until ``stop()``."""

    def __init__(self, bootstrap: str, topic: str, index: DeadLetterIndex,
                 lock: threading.Condition, stopping: threading.Event,
                 on_error: Callable[[Any], None] | None = None) -> None:
        self.bootstrap, self.topic, self.index = bootstrap, topic, index
        self.lock, self.stopping, self.on_error = lock, stopping, on_error

    def _new_reader(self) -> Any:
        return consumer(self.bootstrap, overrides={
            "isolation.level": "read_uncommitted",
            **({"error_cb": self.on_error} if self.on_error else {})})

    def run(self) -> None:
        """Read until the views stop. A broker error (a restarting broker's
        ``NOT_LEADER_FOR_PARTITION`` or timeout while the reader positions itself) starts a
        new reader after :data:`READER_RETRY_S`: the reader used to stop for good, and the
        views went on for their whole life without the index (seen: views started while the
        broker came back from a restart; found in a fault round, 2026-12-07). Letters read
        again are kept once (:meth:`DeadLetterIndex.keep`)."""
        while not self.stopping.is_set():
            try:
                reader = self._new_reader()
            except KafkaException as exc:
                log.warning("dead letters: no reader (%s): trying again in %g s", exc,
                            READER_RETRY_S)
                self.stopping.wait(READER_RETRY_S)
                continue
            try:
                self._assign(reader)
                while not self.stopping.is_set():
                    messages = ready_messages(reader, 500, 0.5)
                    if messages:
                        self._add(messages)
            except KafkaException as exc:
                log.warning("dead letters: reader stopped (%s): a new one in %g s", exc,
                            READER_RETRY_S)
            finally:
                reader.close()
            self.stopping.wait(READER_RETRY_S)

    def _assign(self, reader: Any) -> None:
        while not self.stopping.is_set():
            topics = reader.list_topics(self.topic, timeout=10).topics
            meta = topics.get(self.topic)
            if meta is not None and meta.error is None and meta.partitions:
                break
            self.stopping.wait(5)  # the topic is made by the worker's start: wait for it
        else:
            return
        start = []
        for partition in sorted(meta.partitions):
            low, high = reader.get_watermark_offsets(TopicPartition(self.topic, partition),
                                                     timeout=10)
            start.append(TopicPartition(self.topic, partition,
                                        max(low, high - self.index.kept)))
        reader.assign(start)

    def _add(self, messages: list[Any]) -> None:
        letters = []
        for message in messages:  # decoded outside the views' lock
            if message.error() is not None:
                if message.error().code() != KafkaError._PARTITION_EOF:
                    log.warning("dead letters: read error: %s", message.error())
                continue
            letter = self.index.parse(message.key(), message.value(), message.offset(),
                                      message.partition())
            if letter is not None:
                letters.append(letter)
        if not letters:
            return
        with self.lock:
            kept = [self.index.keep(letter) for letter in letters]  # every one, then notify
            if any(kept):
                self.lock.notify_all()  # a waiting GET /v1/decisions looks again
