"""Frozen records without ``dataclasses``: what ``@dataclass(frozen=True)`` adds, written once.

``sluice submit`` used seven frozen dataclasses (``Settings``, ``SluidClock``, ``DecodedSluid``,
``Decision``, ``BatchScript``, ``MungeCredential``, ``Builders``). Importing ``dataclasses``
loads ``inspect`` with ``ast``, ``dis``, ``tokenize`` and ``copy``, and each ``@dataclass`` writes
its methods as source and ``exec``-s it: ~19 % of the instructions of a call (issue 17). Those
classes now subclass :class:`FrozenRecord` (or :class:`FrozenSlotsRecord` for
``slots=True``), write their own ``__init__`` (the dataclass's signature, defaults and checks)
and name their fields, in order, in ``__match_args__``; the rest behaves as the dataclass did:

- ``==`` compares the field values of two instances of the very same class (else
  ``NotImplemented``), ``hash`` is the hash of the tuple of the values, ``repr`` is
  ``Name(field=value!r, ...)`` with the class's ``__qualname__``;
- setting or deleting any attribute raises ``dataclasses.FrozenInstanceError`` (imported then,
  on that error path only);
- a slotted record pickles as the list of its values (``__getstate__`` / ``__setstate__``, as a
  frozen slotted dataclass does), so rows pickled by the dataclass load, and the reverse.

What they are not: dataclasses (``dataclasses.fields``, ``replace``, ``asdict`` refuse them;
nothing used those on them, ``Settings.with_`` does ``replace``'s work).
``tests/unit/test_frozen_record.py`` checks each against the dataclass of the same fields.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (issue 17)
if TYPE_CHECKING:
    from typing import Any, ClassVar, NoReturn

__all__ = ["FrozenRecord", "FrozenSlotsRecord"]


def _frozen(name: str, verb: str) -> NoReturn:
    from dataclasses import FrozenInstanceError  # noqa: PLC0415 -- the error path only

    raise FrozenInstanceError(f"cannot {verb} field {name!r}")


class FrozenRecord:
    """Equality, hash, repr and frozenness over the fields named in ``__match_args__``."""

    __slots__ = ()
    __match_args__: ClassVar[tuple[str, ...]] = ()

    def _values(self) -> tuple[Any, ...]:
        return tuple([getattr(self, name) for name in self.__match_args__])

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return self._values() == other._values()
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        values = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__match_args__)
        return f"{self.__class__.__qualname__}({values})"

    def __setattr__(self, name: str, value: object) -> None:
        _frozen(name, "assign to")

    def __delattr__(self, name: str) -> None:
        _frozen(name, "delete")


class FrozenSlotsRecord(FrozenRecord):
    """A :class:`FrozenRecord` whose fields are slots: pickled as the list of the values."""

    __slots__ = ()

    def __getstate__(self) -> list[Any]:
        return [getattr(self, name) for name in self.__match_args__]

    def __setstate__(self, state: list[Any]) -> None:
        for name, value in zip(self.__match_args__, state, strict=False):
            object.__setattr__(self, name, value)
