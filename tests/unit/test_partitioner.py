"""The intake's murmur2 is Kafka's (as aiokafka writes it, byte by byte): the same hash for keys
of every length, SLUIDs among them."""

from __future__ import annotations

import random

from aiokafka.partitioner import murmur2 as kafka_murmur2

from schemas import SluidGenerator
from streams.partitioner import murmur2, partition_for


def test_murmur2_is_kafkas_for_keys_of_every_length() -> None:
    rnd = random.Random(17)
    for length in [*range(70), 255, 1000]:
        for _ in range(20):
            key = bytes(rnd.randrange(256) for _ in range(length))
            unsigned = murmur2(key) & 0xFFFFFFFF  # aiokafka's is unsigned
            assert unsigned == kafka_murmur2(key), (length, key)
    assert -(1 << 31) <= murmur2(b"\xff" * 64) < 1 << 31  # ours: signed, as Java's


def test_a_sluids_partition_is_kafkas() -> None:
    sluids = SluidGenerator(7)
    for _ in range(500):
        key = sluids.new().encode()
        for partitions in (1, 3, 6, 64):
            assert partition_for(key, partitions) == (kafka_murmur2(key) & 0x7FFFFFFF) % partitions
