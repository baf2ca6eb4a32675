"""The contract a request record must keep before the intake forwards it.

:meth:`IntakeRules.classify` returns the decoded request, or the reason the record is a dead
letter. Each reason starts with its name (the list is in docs/wire-format.md):

| reason | when |
|---|---|
| ``EmptyRecord`` | the value is empty or null |
| ``RequestTooLarge`` | key + value + headers exceed ``SLUICE_MAX_REQUEST_BYTES`` |
| ``Undecodable`` | the value is not a Sluice record (bad magic, unknown fingerprint, ...) |
| ``NotARequest`` | a record that is not a request (a fact, a heartbeat, ...) |
| ``KeyMismatch`` | the key is not the request's subject (its SLUID; a node's name for drain) |
| ``PartitionMismatch`` | the record is not on the partition its key hashes to (murmur2) |
| ``EmptyWorkingDirectory`` | a ``SubmitJob`` or ``TestSubmitJob`` whose workdir is not absolute |
| ``InvalidSluid`` | a ``request_sluid`` not a SLUID (squeue --start, sprio, sshare, reservations) |

The intake itself adds ``UnreadableBatch`` (a batch the client could not decode),
``ForwardFailed`` (the inbox did not take the record) and ``InternalError`` (checking it raised),
and for a Confluent-framed record whose schema id cannot be used ``NoSchemaRegistry``,
``UnknownSchemaId``, ``ForeignSchema``, ``RegistryUnavailable`` or ``SchemaLookupLimit``
(:mod:`agents.schema_ids`).

A ``SubmitJob`` refused for its key, partition or working directory is a :class:`Refusal`: it
is dead-lettered **and** forwarded to its shard marked with the ``sluice-refused`` header, which
the shard records as a ``JobRejected`` with the same reason (``scheduler.jobs.refusals``), so the
submitter sees why (``sluice show job SLUID``, ``sluice audit SLUID``, the API); a
``TestSubmitJob`` (``sbatch --test-only``) is refused the same way and answered with a
``JobTestAnswered`` carrying the reason. Other requests that break the contract are dead letters
only: they are about jobs that exist, which a refusal must not touch.

Range checks that need the cluster's state (node counts, partitions, limits) are the core's.
"""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass
from typing import Any

from agents.forwarding import record_size
from agents.inbox_records import REFUSED_HEADER
from schemas import DecodeError, decode
from schemas.request_keys import request_key
from schemas.sluid import InvalidSluidError, parse_sluid
from streams.partitioner import partition_for
from streams.settings import Settings

__all__ = ["REFUSED_HEADER", "IntakeRules", "Refusal", "subject_of_request"]

_SUBMISSIONS = frozenset({"SubmitJob", "TestSubmitJob"})
_NAMED_BY_CLIENT = frozenset({"PlanStarts", "PlanPriorities", "PlanShares", "CreateReservation",
                              "DeleteReservation"})
"""Requests whose subject is a SLUID the client mints for the answers alone: nothing else checks
its form (a job's or node's SLUID is looked up by the shard), and every shard echoes it into the
ledger and the views keep it, so it must be a SLUID and nothing larger."""
"""Requests checked as submissions (a test, ``sbatch --test-only``, is refused as one)."""

# REFUSED_HEADER marks a refused submission on the inbox (``<Reason>: <detail>``, UTF-8); the
# intake removes it from every record it forwards, so only the intake can set it.

subject_of_request = request_key
"""The key a request must carry (:func:`schemas.request_keys.request_key`)."""


@dataclass(frozen=True, slots=True)
class Refusal:
    """A submission that breaks the contract: dead-lettered, and rejected by its shard."""

    name: str
    record: dict[str, Any]
    reason: str


class IntakeRules:
    """Classifies request records for one system's settings."""

    def __init__(self, settings: Settings, requests: Set[str]) -> None:
        self.settings = settings
        self.requests = requests

    def classify(self, message: Any) -> tuple[str, dict[str, Any]] | Refusal | str:
        """The decoded ``(name, record)``, a :class:`Refusal`, or why it is a dead letter."""
        value, key = message.value, message.key
        if not value:
            return "EmptyRecord: the record has no value"
        size = record_size(key, value, message.headers)
        limit = self.settings.max_request_bytes
        if size > limit:
            return (f"RequestTooLarge: {size} bytes (key, value and headers) is more than the "
                    f"limit of {limit} bytes (SLUICE_MAX_REQUEST_BYTES)")
        try:
            name, record = decode(value)
        except DecodeError as exc:
            return f"Undecodable: {exc}"
        if name not in self.requests:
            return f"NotARequest: a {name} record is not a request; requests are " \
                   f"{sorted(self.requests)}"
        problem = self._contract(name, record, key, message.partition)
        if problem is None:
            return name, record
        if name in _SUBMISSIONS and record.get("job_sluid"):
            return Refusal(name, record, problem)
        return problem

    def _contract(
        self, name: str, record: dict[str, Any], key: bytes | None, partition: int
    ) -> str | None:
        subject = subject_of_request(name, record)
        if name in _NAMED_BY_CLIENT:
            try:
                parse_sluid(subject)
            except InvalidSluidError:
                shown = subject[:40] + ("…" if len(subject) > 40 else "")
                return (f"InvalidSluid: the {name}'s request_sluid {shown!r} ({len(subject)} "
                        f"characters) is not a SLUID ('s' and 13 characters)")
        if key is None:
            return f"KeyMismatch: the {name} has no key; its key must be {subject!r}"
        if key != subject.encode():
            shown = key[:80].decode(errors="replace")
            return f"KeyMismatch: the {name} is keyed {shown!r}; its key must be {subject!r}"
        expected = partition_for(key, self.settings.partitions)
        if partition != expected:
            return (f"PartitionMismatch: key {subject!r} hashes to partition {expected} with "
                    f"murmur2 (Java's default partitioner), but the record is on partition "
                    f"{partition}; set the producer's partitioner to murmur2 (librdkafka and "
                    f"kcat: -X topic.partitioner=murmur2_random)")
        if name in _SUBMISSIONS:
            workdir = str(record["spec"].get("workdir") or "")
            if not workdir.startswith("/"):
                what = "empty" if not workdir else f"relative ({workdir!r})"
                return (f"EmptyWorkingDirectory: the job's working directory (spec.workdir) "
                        f"is {what}; it must be an absolute path")
        return None
