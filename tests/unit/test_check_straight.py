"""A record's check tests the common case in straight-line code (``schemas.check``) and hands
anything else to the field-by-field check: both give the same answer for every record of the
catalog, as sampled and with each field broken in each way."""

from __future__ import annotations

from typing import Any

import pytest

from schemas.catalog import CATALOG
from schemas.check import compile_check
from tests.unit.test_schema_compat import sample

WRONG: tuple[Any, ...] = (None, "x", 2**40, 2**70, True, 1.5, [], {}, ["x"], {"k": "v"}, b"x",
                          -(2**31) - 1, 2**31, 7)


class Text(str):
    """A str subclass: right for the schema, not the straight-line test's exact type."""


def _pair(name: str) -> tuple[Any, Any]:
    check = compile_check(CATALOG.entry(name).parsed)
    return check.straight(), check.slow  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", sorted(CATALOG.names))
@pytest.mark.parametrize("full", [True, False], ids=["all-fields", "required-only"])
def test_the_straight_check_answers_as_the_field_by_field_one(name: str, full: bool) -> None:
    fast, slow = _pair(name)
    assert fast is not slow and fast.__name__ == "check" and "_slow" in fast.__globals__
    record = sample(CATALOG.entry(name).parsed, {}, full)
    assert fast(record) is None and slow(record) is None
    for field in record:
        for wrong in (*WRONG, Text("y")):
            broken = {**record, field: wrong}
            assert fast(broken) == slow(broken), (field, wrong)
        missing = {k: v for k, v in record.items() if k != field}
        assert fast(missing) == slow(missing), field
    extra = {**record, "colour": "red"}
    assert fast(extra) == slow(extra) and fast(extra) is not None
    assert fast(list(record.items())) == slow(list(record.items()))


def test_the_straight_line_is_written_on_the_second_call() -> None:
    check: Any = compile_check(CATALOG.entry("JobPending").parsed)
    record = sample(CATALOG.entry("JobPending").parsed, {}, True)
    assert check(record) is None  # the first: field by field (a CLI checks one record)
    assert check(record) is None and check(record) is None
    assert check.straight() is check.straight()  # written once
    assert check({**record, "priority": "high"}) == check.slow({**record, "priority": "high"})
