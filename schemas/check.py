"""Check Python values against a parsed Avro schema, and the codec's two errors.

fastavro's writer is lax: it writes 2**40 into an Avro int, truncates 2.7 to 2, writes "no" as
true and splits a string given for an array into characters. Every record is therefore checked
before it is written, by a checker compiled once per schema from closures (about twice as fast as
``fastavro.validation.validate``). A checker returns ``None``, or (field path suffix, problem).

This module imports nothing but the standard library: :mod:`schemas.writer` (the CLI's encoder)
uses it without loading fastavro.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (issue 17)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Check", "DecodeError", "EncodeError", "Problem", "compile_check", "describe"]

_INT_RANGE = (-(1 << 31), (1 << 31) - 1)
_LONG_RANGE = (-(1 << 63), (1 << 63) - 1)


class EncodeError(ValueError):
    """A record could not be encoded: unknown record name, or it does not match its schema."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field
        """Dotted path of the offending field (``SubmitJob.spec.nodes_min``), when known."""


class DecodeError(ValueError):
    """A value could not be decoded; the message says why."""


Problem = tuple[str, str]
"""Where a value breaks its schema (``.spec.nodes_min``) and how; ``None`` when it does not."""
if TYPE_CHECKING:
    Check = Callable[[Any], Problem | None]
else:  # the same alias, without typing's Any (issue 17)
    Check = Callable[[object], Problem | None]
"""A compiled schema check."""


def describe(value: Any) -> str:
    """A value as error messages show it: its type and its repr, cut to 60 characters."""
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(value).__name__} {text}"


def _integer_check(kind: str, low: int, high: int) -> Check:
    def check(value: Any) -> Problem | None:
        if value.__class__ is int and low <= value <= high:
            return None
        if isinstance(value, int) and not isinstance(value, bool):
            if low <= value <= high:
                return None
            bits = 32 if kind == "int" else 64
            return "", f"{value} does not fit in a {bits}-bit signed {kind}"
        return "", f"expected {kind}, got {describe(value)}"

    return check


def _type_check(kind: str, accepted: type | tuple[type, ...], refused: type | None = None) -> Check:
    def check(value: Any) -> Problem | None:
        if isinstance(value, accepted) and (refused is None or not isinstance(value, refused)):
            return None
        return "", f"expected {kind}, got {describe(value)}"

    return check


def _check_null(value: Any) -> Problem | None:
    return None if value is None else ("", f"expected null, got {describe(value)}")


def _check_boolean(value: Any) -> Problem | None:
    return (
        None
        if value is True or value is False
        else ("", f"expected boolean, got {describe(value)}")
    )


_PRIMITIVE_CHECKS: dict[str, Check] = {
    "null": _check_null,
    "boolean": _check_boolean,
    "int": _integer_check("int", *_INT_RANGE),
    "long": _integer_check("long", *_LONG_RANGE),
    "float": _type_check("float", (int, float), bool),
    "double": _type_check("double", (int, float), bool),
    "string": _type_check("string", str),
    "bytes": _type_check("bytes", (bytes, bytearray)),
}


def compile_check(schema: Any, named: dict[str, Check] | None = None) -> Check:
    """Compile a fastavro-parsed schema into a check of Python values against it.

    Records must be mappings with every field that has no default and no unknown field; ints and
    longs must be ``int`` (not ``bool``) within range; arrays must be lists or tuples.
    """
    named = {} if named is None else named
    if isinstance(schema, str):
        if schema in _PRIMITIVE_CHECKS:
            return _PRIMITIVE_CHECKS[schema]
        if schema in named:
            return named[schema]
        raise ValueError(f"unknown type {schema!r}")
    if isinstance(schema, list):
        return _union_check(schema, named)
    kind = schema["type"]
    if kind in ("record", "error"):
        return _record_check(schema, named)
    if kind == "array":
        return _array_check(compile_check(schema["items"], named))
    if kind == "map":
        return _map_check(compile_check(schema["values"], named))
    if kind == "enum":
        symbols = frozenset(schema["symbols"])
        named[schema["name"]] = check = _symbol_check(symbols)
        return check
    if kind == "fixed":
        named[schema["name"]] = check = _fixed_check(schema["size"])
        return check
    return compile_check(kind, named)


def _record_check(schema: dict[str, Any], named: dict[str, Check]) -> Check:
    full_name = schema["name"]
    fields: list[tuple[str, bool, Check]] = []

    def check(value: Any) -> Problem | None:
        if not isinstance(value, Mapping):
            return "", f"expected a record {full_name} (a mapping), got {describe(value)}"
        present = 0
        for name, optional, field_check in fields:
            if name in value:
                present += 1
                problem = field_check(value[name])
                if problem is not None:
                    return f".{name}{problem[0]}", problem[1]
            elif not optional:
                return f".{name}", "required field is missing (it has no default)"
        if present != len(value):
            known = {name for name, _, _ in fields}
            extra = sorted(str(key) for key in value if key not in known)
            return f".{extra[0]}", f"unknown field (not in {full_name})"
        return None

    named[full_name] = check  # before the fields, so that recursive types resolve
    for field in schema["fields"]:
        fields.append((field["name"], "default" in field, compile_check(field["type"], named)))
    named[full_name] = fast = _straight_record_check(schema["fields"], fields, check)
    return fast


_INLINE = {  # a field's test, written inline, true when the value is NOT plainly right
    "string": "v.__class__ is not str",
    "int": f"v.__class__ is not int or not {_INT_RANGE[0]} <= v <= {_INT_RANGE[1]}",
    "long": f"v.__class__ is not int or not {_LONG_RANGE[0]} <= v <= {_LONG_RANGE[1]}",
    "boolean": "v is not True and v is not False",
    "null": "v is not None",
}


def _straight_record_check(schema_fields: list[dict[str, Any]],
                           fields: list[tuple[str, bool, Check]], slow: Check) -> Check:
    """``slow`` (the record's check) behind a straight-line test of the common case: a dict
    with every field, each of its exact primitive type in range (or passing its own check).
    Anything else (a missing or unknown field, a subclass, a wrong value) goes to ``slow``,
    which decides and names the problem: the same answers, without a closure call and a loop
    step per field (a record is checked before every write, a ``JobQueued`` has 60 fields).

    The straight-line code is written on the second call (writing it costs about a
    millisecond a schema: a ``sluice submit`` checks one record, once)."""
    state: list[Any] = [None, 0]  # the straight-line check once written; calls before

    def straight() -> Check:
        if state[0] is None:
            state[0] = check  # (a recursive type's own field keeps the calls-counting check)
            state[0] = _write_straight(schema_fields, fields, slow)
        done: Check = state[0]
        return done

    def check(value: Any) -> Problem | None:
        fast = state[0]
        if fast is not None:
            return fast(value)  # type: ignore[no-any-return]
        state[1] += 1
        return slow(value) if state[1] < 2 else straight()(value)

    check.straight = straight  # type: ignore[attr-defined]
    check.slow = slow  # type: ignore[attr-defined]
    return check


def _write_straight(schema_fields: list[dict[str, Any]],
                    fields: list[tuple[str, bool, Check]], slow: Check) -> Check:
    space: dict[str, Any] = {"_slow": slow, "_dict": dict}
    lines = ["def check(value):\n",
             f"    if value.__class__ is not _dict or len(value) != {len(fields)}:\n",
             "        return _slow(value)\n",
             "    try:\n"]
    for index, (field, (name, _, field_check)) in enumerate(zip(schema_fields, fields,
                                                                strict=True)):
        kind = field["type"]
        test = _INLINE.get(kind) if isinstance(kind, str) else None
        if test is None:
            nested = getattr(field_check, "straight", None)  # a record: its own straight line
            space[f"_c{index}"] = nested() if nested is not None else field_check
            test = f"_c{index}(v) is not None"
        lines.append(f"        v = value[{name!r}]\n        if {test}:\n"
                     "            return _slow(value)\n")
    lines.append("    except KeyError:\n        return _slow(value)\n    return None\n")
    exec("".join(lines), space)  # the schema's own field names (Avro names), as repr
    fast: Check = space["check"]
    return fast


def _union_check(branches: list[Any], named: dict[str, Check]) -> Check:
    checks = [compile_check(branch, named) for branch in branches]
    kinds = ", ".join(b if isinstance(b, str) else str(b.get("name", b["type"])) for b in branches)

    def check(value: Any) -> Problem | None:
        for branch_check in checks:
            if branch_check(value) is None:
                return None
        return "", f"expected one of [{kinds}], got {describe(value)}"

    return check


def _array_check(item_check: Check) -> Check:
    def check(value: Any) -> Problem | None:
        if not isinstance(value, list | tuple):
            return "", f"expected an array (list or tuple), got {describe(value)}"
        for index, item in enumerate(value):
            problem = item_check(item)
            if problem is not None:
                return f"[{index}]{problem[0]}", problem[1]
        return None

    return check


def _map_check(value_check: Check) -> Check:
    def check(value: Any) -> Problem | None:
        if not isinstance(value, Mapping):
            return "", f"expected a map (a mapping), got {describe(value)}"
        for key, item in value.items():
            if not isinstance(key, str):
                return "", f"map keys must be strings, got {describe(key)}"
            problem = value_check(item)
            if problem is not None:
                return f"[{key!r}]{problem[0]}", problem[1]
        return None

    return check


def _symbol_check(symbols: frozenset[str]) -> Check:
    def check(value: Any) -> Problem | None:
        if isinstance(value, str) and value in symbols:
            return None
        return "", f"expected one of the symbols {sorted(symbols)}, got {describe(value)}"

    return check


def _fixed_check(size: int) -> Check:
    def check(value: Any) -> Problem | None:
        if isinstance(value, bytes | bytearray) and len(value) == size:
            return None
        return "", f"expected {size} bytes, got {describe(value)}"

    return check
