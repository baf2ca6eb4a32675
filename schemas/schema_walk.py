"""One walk over a fastavro-parsed schema for the fastavro-free writer and reader.

:mod:`schemas.writer` and :mod:`schemas.reader` compile a schema into a function per type; the
dispatch on the type (a primitive or named type by name, a union, a record, an array, a map) is
the same, only what each builds differs: a :class:`Builders` says that.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from schemas.frozen_record import FrozenSlotsRecord

__all__ = ["Builders", "compile_schema"]

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (issue 17)
if TYPE_CHECKING:
    from typing import Any, Generic, TypeVar

    F = TypeVar("F")
else:  # Builders is generic for the type checker; at run time ``Generic[F]`` adds nothing
    F = None

    class Generic:
        """A stand-in base that gives ``Generic[F]`` (no ``typing`` on the CLI's path)."""

        __slots__ = ()

        def __class_getitem__(cls, _item: object) -> type:
            return cls


class Builders(FrozenSlotsRecord, Generic[F]):
    """What to build for each kind of type; ``who`` names the module in refusals (a frozen
    record: schemas/frozen_record.py)."""

    __slots__ = ("array", "map", "primitives", "record", "union", "who")
    __match_args__ = ("who", "primitives", "record", "union", "array", "map")
    who: str
    primitives: Mapping[str, F]
    record: Callable[[dict[str, Any], dict[str, F]], F]
    union: Callable[[list[Any], dict[str, F]], F]
    array: Callable[[F], F]
    map: Callable[[F], F]

    def __init__(self, who: str, primitives: Mapping[str, F],
                 record: Callable[[dict[str, Any], dict[str, F]], F],
                 union: Callable[[list[Any], dict[str, F]], F], array: Callable[[F], F],
                 map: Callable[[F], F]) -> None:
        object.__setattr__(self, "who", who)
        object.__setattr__(self, "primitives", primitives)
        object.__setattr__(self, "record", record)
        object.__setattr__(self, "union", union)
        object.__setattr__(self, "array", array)
        object.__setattr__(self, "map", map)


def compile_schema(builders: Builders[F], schema: Any, named: dict[str, F] | None = None) -> F:
    """The function ``builders`` makes for ``schema`` (records register themselves in
    ``named`` before their fields, so that recursive types resolve)."""
    named = {} if named is None else named
    if isinstance(schema, str):
        if schema in builders.primitives:
            return builders.primitives[schema]
        if schema in named:
            return named[schema]
        raise ValueError(f"unknown type {schema!r}")
    if isinstance(schema, list):
        return builders.union(schema, named)
    kind = schema["type"]
    if kind == "record":
        return builders.record(schema, named)
    if kind == "array":
        return builders.array(compile_schema(builders, schema["items"], named))
    if kind == "map":
        return builders.map(compile_schema(builders, schema["values"], named))
    if isinstance(kind, str) and kind in builders.primitives:
        return builders.primitives[kind]
    raise ValueError(f"{builders.who} does not handle Avro {kind!r} (use schemas.codec)")
