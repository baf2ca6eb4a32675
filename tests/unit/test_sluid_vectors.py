"""The shared SLUID vectors (schemas/sluid-vectors.json), which the Java, Go and TypeScript clients
also check themselves against, agree with schemas.sluid."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from schemas.sluid import (
    InvalidSluidError,
    SluidClock,
    compose,
    decode,
    format_sluid,
    mint,
    parse_sluid,
)

VECTORS: dict[str, Any] = json.loads(
    (Path(__file__).resolve().parents[2] / "schemas" / "sluid-vectors.json").read_text()
)


@pytest.mark.parametrize("case", VECTORS["compose"], ids=lambda c: c["text"])
def test_compose_and_format_give_the_vector(case: dict[str, Any]) -> None:
    number = compose(case["cluster_id"], case["unix_ms"], case["sequence"])
    assert str(number) == case["value"]
    assert format_sluid(number) == case["text"]
    fields = decode(case["text"])
    assert (fields.cluster_id, fields.unix_ms, fields.sequence) == (
        case["cluster_id"],
        case["unix_ms"],
        case["sequence"],
    )


@pytest.mark.parametrize("case", VECTORS["parse"], ids=lambda c: c["text"])
def test_every_accepted_spelling_parses_to_its_number(case: dict[str, Any]) -> None:
    assert str(parse_sluid(case["text"])) == case["value"]
    assert format_sluid(parse_sluid(case["text"])) == case["canonical"]


@pytest.mark.parametrize("text", VECTORS["invalid"])
def test_every_invalid_text_is_refused(text: str) -> None:
    with pytest.raises(InvalidSluidError):
        parse_sluid(text)


@pytest.mark.parametrize("case", VECTORS["mint"], ids=lambda c: c["text"])
def test_mint_gives_the_vector_and_the_next_clock(case: dict[str, Any]) -> None:
    clock = SluidClock(**case["clock"])
    number, after = mint(clock, case["now_ms"], case["first_sequence"])
    assert format_sluid(number) == case["text"]
    assert (after.last_ms, after.sequence) == (case["next"]["last_ms"], case["next"]["sequence"])


def test_the_alphabet_is_crockfords() -> None:
    assert VECTORS["alphabet"] == "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
    assert len(set(VECTORS["alphabet"])) == 32
