"""Confluent schema ids without a registry, or with one that does not answer (a closed port)."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from agents.schema_ids import SchemaIds, confluent_id
from schemas import encode
from schemas.codec import Codec
from streams.schema_registry import SchemaRegistry

SOE = encode("CancelJob", {"job_sluid": "s0000000000000"})


def framed(schema_id: int, body: bytes = b"\x02") -> bytes:
    return b"\x00" + schema_id.to_bytes(4, "big") + body


def closed_port() -> int:
    with socket.socket() as sock:  # bound, never listening: connections are refused
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Clock:
    """A clock the fake sleep moves, so the retry schedule is checked without waiting."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def test_confluent_id_reads_the_big_endian_id_and_nothing_else() -> None:
    assert confluent_id(framed(258)) == 258
    assert confluent_id(framed(2**32 - 1)) == 2**32 - 1
    assert confluent_id(SOE) is None
    assert confluent_id(b"\x00\x01") is None
    assert confluent_id(b"") is None
    assert confluent_id(None) is None


async def test_without_a_registry_every_confluent_id_is_named_no_schema_registry() -> None:
    ids = SchemaIds(Codec(), None)

    unusable = await ids.prepare([SOE, framed(7), framed(7), framed(9), None])

    assert set(unusable) == {7, 9}
    assert unusable[7].startswith("NoSchemaRegistry:")
    assert "schema id 7" in unusable[7] and "SLUICE_SCHEMA_REGISTRY_URL" in unusable[7]


async def test_single_object_records_never_ask_the_registry() -> None:
    registry = SchemaRegistry(f"http://127.0.0.1:{closed_port()}", timeout_s=1)
    ids = SchemaIds(Codec(), registry, wait_s=0)

    assert await ids.prepare([SOE, SOE]) == {}


async def test_a_registry_that_does_not_answer_is_retried_then_named_unavailable() -> None:
    clock = Clock()
    registry = SchemaRegistry(f"http://127.0.0.1:{closed_port()}", timeout_s=1)
    ids = SchemaIds(Codec(), registry, wait_s=10, clock=clock, sleep=clock.sleep)

    unusable = await ids.prepare([framed(5), framed(6)])

    assert set(unusable) == {5, 6}
    assert unusable[5].startswith("RegistryUnavailable: schema id 5")
    assert unusable[6].startswith("RegistryUnavailable: schema id 6")
    assert "within 10s" in unusable[5]
    # one deadline for the batch: 1 + 2 + 4 s of retries for id 5, none left for id 6
    assert clock.sleeps == [1.0, 2.0, 4.0]


def test_a_registry_url_must_be_http() -> None:
    with pytest.raises(ValueError, match="http"):
        SchemaRegistry("127.0.0.1:8081")


def test_the_cli_says_in_one_line_that_no_registry_is_given(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from cli.main import main

    monkeypatch.delenv("SLUICE_SCHEMA_REGISTRY_URL", raising=False)
    monkeypatch.setenv("SLUICE_CONF", "/nonexistent")
    status = main(["schemas", "register"])
    err = capsys.readouterr().err
    assert status == 2
    assert err.strip().count("\n") == 0 and "SLUICE_SCHEMA_REGISTRY_URL" in err


def test_the_cli_names_a_registry_that_does_not_answer(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from cli.main import main

    monkeypatch.setenv("SLUICE_CONF", "/nonexistent")
    status = main(["schemas", "register", "--url", f"http://127.0.0.1:{closed_port()}",
                   "--timeout", "2"])
    err: Any = capsys.readouterr().err
    assert status == 1
    assert err.startswith("sluice schemas register: http://127.0.0.1:")
    assert "Traceback" not in err


class CountingRegistry(SchemaRegistry):
    """A registry that knows no id, counting the lookups (a real registry's 404, no wire)."""

    def __init__(self) -> None:
        super().__init__("http://127.0.0.1:9", timeout_s=1)
        self.asked: list[int] = []

    def schema_with_references(self, schema_id: int) -> tuple[str, dict[str, str]]:
        from streams.schema_registry import UnknownSchemaIdError

        self.asked.append(schema_id)
        raise UnknownSchemaIdError(f"schema id {schema_id} not found")


async def test_a_flood_of_fresh_schema_ids_is_bounded_per_batch_and_across_batches() -> None:
    """Each fresh id costs a sequential registry round trip that every other request waits
    behind; a batch of 500 made-up ids must not cost 500 of them, nor a stream of such
    batches one round trip per id."""
    from agents.schema_ids import LOOKUP_BURST, LOOKUPS_PER_BATCH, LOOKUPS_PER_S

    clock = Clock()
    registry = CountingRegistry()
    ids = SchemaIds(Codec(), registry, wait_s=10, clock=clock, sleep=clock.sleep)

    unusable = await ids.prepare([framed(1000 + i) for i in range(500)])
    assert len(registry.asked) == LOOKUPS_PER_BATCH and len(unusable) == 500
    assert unusable[1000].startswith("UnknownSchemaId: schema id 1000")
    assert unusable[1499].startswith("SchemaLookupLimit: schema id 1499 was not looked up: "
                                     "more than 16 unknown schema ids in one batch")
    for batch in range(1, 20):  # more batches at once: the budget runs out
        await ids.prepare([framed(10_000 * batch + i) for i in range(500)])
    assert len(registry.asked) == LOOKUP_BURST
    clock.now += 10  # the bucket refills at its rate: 20 lookups, at most 16 a batch
    await ids.prepare([framed(900_000 + i) for i in range(500)])
    await ids.prepare([framed(800_000 + i) for i in range(500)])
    assert len(registry.asked) == LOOKUP_BURST + int(10 * LOOKUPS_PER_S) == 84
    # ids the registry said it does not know cost nothing while remembered, whatever the budget
    again = await ids.prepare([framed(1000)])
    assert again[1000].startswith("UnknownSchemaId") and len(registry.asked) == 84
