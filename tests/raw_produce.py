"""Record batches built by hand and sent with a raw ProduceRequest over a socket.

No Kafka client is involved: the bytes of the RecordBatch (v2) are what the test says, so a test
can send a batch a client library would never write (a payload that only some decompressors
accept, a header key that is not UTF-8) and see what the broker stores and our consumers do.
The encoding follows the Kafka protocol guide (RecordBatch v2, ProduceRequest v8).
"""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from aiokafka.record.util import calc_crc32c

__all__ = ["ProduceAnswer", "RawRecord", "produce_batch", "record_batch"]

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


@dataclass(frozen=True, slots=True)
class RawRecord:
    """One record of a hand-built batch; header keys are bytes (they need not be UTF-8)."""

    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[bytes, bytes], ...] = ()


def _varint(value: int) -> bytes:
    zigzag = (value << 1) ^ (value >> 63)
    out = bytearray()
    while True:
        byte = zigzag & 0x7F
        zigzag >>= 7
        if zigzag:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _sized(data: bytes | None) -> bytes:
    return _varint(-1) if data is None else _varint(len(data)) + data


def _record(index: int, record: RawRecord) -> bytes:
    body = b"\x00" + _varint(0) + _varint(index) + _sized(record.key) + _sized(record.value)
    body += _varint(len(record.headers))
    for name, value in record.headers:
        body += _sized(name) + _sized(value)
    return _varint(len(body)) + body


def record_batch(
    records: Sequence[RawRecord],
    codec: str = "none",
    compress: Callable[[bytes], bytes] | None = None,
    corrupt_crc: bool = False,
) -> bytes:
    """A RecordBatch v2 holding ``records``; ``compress`` makes the (codec's) payload."""
    payload = b"".join(_record(i, r) for i, r in enumerate(records))
    if compress is not None:
        payload = compress(payload)
    now = int(time.time() * 1000)
    after_crc = struct.pack(
        ">hiqqqhii", CODECS[codec], len(records) - 1, now, now, -1, -1, -1, len(records)
    ) + payload
    crc = calc_crc32c(after_crc) ^ (0xFFFFFFFF if corrupt_crc else 0)
    after_length = struct.pack(">ibI", 0, 2, crc) + after_crc
    return struct.pack(">qi", 0, len(after_length)) + after_length


@dataclass(frozen=True, slots=True)
class ProduceAnswer:
    """What the broker said about the batch."""

    error_code: int
    base_offset: int
    message: str


def _string(text: str | None) -> bytes:
    if text is None:
        return struct.pack(">h", -1)
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def _read_exact(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("the broker closed the connection")
        data += chunk
    return data


_NOT_YET = {3, 5, 6}  # unknown partition, leader not available, not leader: a new topic


def produce_batch(
    bootstrap: str, topic: str, partition: int, batch: bytes, attempts: int = 30
) -> ProduceAnswer:
    """Send one ProduceRequest v8 (acks=all) to the first bootstrap server (the leader).

    While a new topic's leader is not ready (errors 3, 5, 6) it asks again, up to ``attempts``.
    """
    for _ in range(attempts - 1):
        answer = _produce_once(bootstrap, topic, partition, batch)
        if answer.error_code not in _NOT_YET:
            return answer
        time.sleep(0.5)
    return _produce_once(bootstrap, topic, partition, batch)


def _produce_once(bootstrap: str, topic: str, partition: int, batch: bytes) -> ProduceAnswer:
    host, _, port = bootstrap.split(",", maxsplit=1)[0].rpartition(":")
    body = _string(None) + struct.pack(">hi", -1, 30000)  # transactional id, acks, timeout
    body += struct.pack(">i", 1) + _string(topic) + struct.pack(">i", 1)
    body += struct.pack(">ii", partition, len(batch)) + batch
    request = struct.pack(">hhi", 0, 8, 1) + _string("raw-produce-test") + body
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(struct.pack(">i", len(request)) + request)
        size = struct.unpack(">i", _read_exact(sock, 4))[0]
        answer = _read_exact(sock, size)
    pos = 4 + 4  # correlation id, topic count
    name_len = struct.unpack_from(">h", answer, pos)[0]
    pos += 2 + name_len + 4  # name, partition count
    _index, error, base = struct.unpack_from(">ihq", answer, pos)
    pos += 4 + 2 + 8 + 8 + 8  # + log append time, log start offset
    record_errors = struct.unpack_from(">i", answer, pos)[0]
    pos += 4
    messages = []
    for _ in range(max(record_errors, 0)):
        pos += 4
        length = struct.unpack_from(">h", answer, pos)[0]
        pos += 2
        if length >= 0:
            messages.append(answer[pos:pos + length].decode(errors="replace"))
            pos += length
    length = struct.unpack_from(">h", answer, pos)[0]
    if length >= 0:
        messages.append(answer[pos + 2:pos + 2 + length].decode(errors="replace"))
    return ProduceAnswer(error, base, "; ".join(messages))
