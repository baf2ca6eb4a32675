"""Typed records ↔ bytes on the wire (hand-written): ``encode_record``, ``decode_record``.

The shell's typed path: ``encode_record(SubmitJob(...))`` is ``schemas.encode`` of the record's
Avro-ready dict; ``decode_record(value)`` decodes and builds the record object. Pure (no I/O).
"""

from __future__ import annotations

from scheduler.records.wire import Record, as_record, from_record
from schemas.codec import decode, encode

__all__ = ["decode_record", "encode_record"]


def encode_record(obj: Record) -> bytes:
    """The single-object encoding of a record object."""
    return encode(*as_record(obj))


def decode_record(value: bytes) -> Record:
    """The record object in ``value`` (``schemas.DecodeError`` for bytes that do not decode)."""
    name, record = decode(value)
    return from_record(name, record)
