"""Kafka's default partitioner (murmur2), so Python computes the partition Java and aiokafka do.

A node daemon reads only the partition of ``sluice.node-commands`` its own key lands in; that
needs the same hash the producers use (``partitioner=murmur2_random`` in confluent-kafka).
"""

from __future__ import annotations

import struct

__all__ = ["murmur2", "partition_for"]

_M = 0x5BD1E995
_MASK = 0xFFFFFFFF
_WORDS = [struct.Struct(f"<{n}I").unpack_from for n in range(16)]
"""Readers of 0..15 little-endian 32-bit words (a SLUID key is 14 bytes: three words)."""


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2`` (seed 0x9747b28c), as a signed 32-bit int.

    The whole words are read by one ``struct`` call, not byte by byte (the intake hashes
    every request's key: 2.1 → 1.5 µs for a SLUID)."""
    length = len(data)
    h = (0x9747B28C ^ length) & _MASK
    words = length >> 2
    end = words << 2
    read = _WORDS[words] if words < 16 else struct.Struct(f"<{words}I").unpack_from
    for word in read(data):
        k = (word * _M) & _MASK
        k ^= k >> 24
        h = ((h * _M) & _MASK) ^ ((k * _M) & _MASK)
    rest = length & 3
    if rest:
        if rest == 3:
            h ^= data[end + 2] << 16
        if rest >= 2:
            h ^= data[end + 1] << 8
        h ^= data[end]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(key: bytes, partitions: int) -> int:
    """The partition Kafka's default partitioner picks for ``key`` (``toPositive(murmur2) % n``)."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions
