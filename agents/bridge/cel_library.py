"""Kubernetes' CEL library for DRA selectors: ``quantity()`` and ``semver()``, for Google's CEL.

A DRA selector sees a device's capacities as Kubernetes quantities and its version attributes
as semantic versions, and compares them with Kubernetes' own CEL functions::

    device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0
    device.attributes['gpu.nvidia.com'].driverVersion.isGreaterThan(semver('550.0.0'))

``cel-expr-python`` has no opaque types for Python values, so a quantity is bound as the CEL map
``{"@quantity": <its exact decimal value>}`` and a version as ``{"@semver": <the version without
its build metadata>}``: two equal quantities (``quantity('1')``, ``quantity('1000m')``) or
versions of equal precedence are then equal maps, as Kubernetes' ``==`` holds them. The member
functions take such maps; given anything else (a plain map, a quantity compared with a
version) they fail, and a selector whose evaluation fails admits no device (agents.bridge.devices).

The functions, as Kubernetes defines them (k8s.io/apiserver ``library.Quantity``,
``library.SemverLib``):

- ``quantity(string)``, ``isQuantity(string)``; on a quantity: ``isInteger()``,
  ``asInteger()``, ``asApproximateFloat()``, ``sign()``, ``add(q|int)``, ``sub(q|int)``,
  ``compareTo(q)``, ``isGreaterThan(q)``, ``isLessThan(q)``;
- ``semver(string[, normalize])``, ``isSemver(string[, normalize])``; on a version:
  ``major()``, ``minor()``, ``patch()``, ``compareTo(v)``, ``isGreaterThan(v)``,
  ``isLessThan(v)``. With ``normalize`` a leading ``v``, missing minor and patch numbers and
  leading zeros are accepted.

Versions are parsed and ordered by the ``semver`` package (semver.org 2.0 precedence).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import semver

from agents.bridge.quantity import QuantityError, parse_quantity

__all__ = ["QUANTITY", "SEMVER", "CelLibraryError", "functions", "quantity_value",
           "semver_value"]

QUANTITY = "@quantity"
SEMVER = "@semver"
_INT64 = (-(1 << 63), (1 << 63) - 1)


class CelLibraryError(ValueError):
    """A call the library refuses (a bad quantity or version, a value of the wrong kind)."""


# -- values ---------------------------------------------------------------------------------

def _decimal_text(value: Decimal) -> str:
    text = f"{value.normalize():f}"
    return "0" if text in ("-0", "0") else text


def quantity_value(text: str) -> dict[str, str]:
    """A quantity as CEL sees it (``CelLibraryError`` when ``text`` is none)."""
    raw = str(text).strip()
    sign = -1 if raw.startswith("-") else 1
    try:
        magnitude = parse_quantity(raw[1:] if raw[:1] in "+-" and raw[1:] else raw)
    except QuantityError as exc:
        raise CelLibraryError(str(exc)) from None
    if "_" in raw or raw != str(text) or " " in raw:  # Decimal reads these; Kubernetes not
        raise CelLibraryError(f"{raw!r} is not a Kubernetes quantity")
    return {QUANTITY: _decimal_text(sign * magnitude)}


_NUMBERS = re.compile(r"([0-9]+(?:\.[0-9]+){0,2})(.*)", re.DOTALL)


def _version(text: str, normalize: bool = False) -> semver.Version:
    raw = str(text)
    if normalize:  # Kubernetes' normalisation: a leading v, missing numbers, leading zeros
        match = _NUMBERS.fullmatch(raw.removeprefix("v"))
        if match is not None:
            numbers = [str(int(n)) for n in match.group(1).split(".")]
            raw = ".".join(numbers + ["0"] * (3 - len(numbers))) + match.group(2)
    try:
        return semver.Version.parse(raw)
    except (ValueError, TypeError) as exc:
        raise CelLibraryError(f"{text!r} is not a semantic version: {exc}") from None


def semver_value(text: str, normalize: bool = False) -> dict[str, str]:
    """A version as CEL sees it (its build metadata dropped: it has no precedence)."""
    return {SEMVER: str(_version(text, normalize).replace(build=None))}


def _kind(value: Any) -> str:
    if isinstance(value, dict) and len(value) == 1:
        key = next(iter(value))
        if key in (QUANTITY, SEMVER):
            return str(key)
    raise CelLibraryError(f"not a quantity or a version: {value!r}"[:200])


def _number(value: Any) -> Decimal:
    if _kind(value) != QUANTITY:
        raise CelLibraryError("not a quantity")
    return Decimal(value[QUANTITY])


def _semver(value: Any) -> semver.Version:
    if _kind(value) != SEMVER:
        raise CelLibraryError("not a version")
    return semver.Version.parse(value[SEMVER])


# -- the functions ----------------------------------------------------------------------------

def _compare(a: Any, b: Any) -> int:
    kind = _kind(a)
    if _kind(b) != kind:
        raise CelLibraryError("a quantity and a version do not compare")
    if kind == QUANTITY:
        x, y = _number(a), _number(b)
        return (x > y) - (x < y)
    return int(_semver(a).compare(_semver(b)))


def _is_quantity(text: str) -> bool:
    try:
        quantity_value(text)
    except CelLibraryError:
        return False
    return True


def _is_semver(text: str, normalize: bool = False) -> bool:
    try:
        _version(text, normalize)
    except CelLibraryError:
        return False
    return True


def _as_integer(q: Any) -> int:
    value = _number(q)
    if value != value.to_integral_value() or not _INT64[0] <= value <= _INT64[1]:
        raise CelLibraryError(f"{q[QUANTITY]} is not an integer that fits in 64 bits")
    return int(value)


def _plus(q: Any, other: Any, sign: int) -> dict[str, str]:
    addend = Decimal(other) if isinstance(other, int) else _number(other)
    return {QUANTITY: _decimal_text(_number(q) + sign * addend)}


def _version_part(part: str) -> Callable[[Any], int]:
    return lambda v: int(getattr(_semver(v), part))


def functions() -> list[Any]:
    """The declarations (with their implementations) to give ``cel.NewEnv(functions=...)``."""
    from cel_expr_python import cel  # noqa: PLC0415 - a 16 MB extension: only with DRA claims

    t = cel.Type

    def one(name: str, *overloads: tuple[str, Any, list[Any], bool, Callable[..., Any]]) -> Any:
        return cel.FunctionDecl(name, [
            cel.Overload(oid, result, params, is_member=member, impl=impl)
            for oid, result, params, member, impl in overloads])

    return [
        one("quantity", ("quantity_string", t.MAP, [t.STRING], False, quantity_value)),
        one("isQuantity", ("is_quantity_string", t.BOOL, [t.STRING], False, _is_quantity)),
        one("semver", ("semver_string", t.MAP, [t.STRING], False, semver_value),
            ("semver_string_bool", t.MAP, [t.STRING, t.BOOL], False, semver_value)),
        one("isSemver", ("is_semver_string", t.BOOL, [t.STRING], False, _is_semver),
            ("is_semver_string_bool", t.BOOL, [t.STRING, t.BOOL], False, _is_semver)),
        one("compareTo", ("map_compareTo_map", t.INT, [t.MAP, t.MAP], True, _compare)),
        one("isGreaterThan", ("map_isGreaterThan_map", t.BOOL, [t.MAP, t.MAP], True,
                              lambda a, b: _compare(a, b) > 0)),
        one("isLessThan", ("map_isLessThan_map", t.BOOL, [t.MAP, t.MAP], True,
                           lambda a, b: _compare(a, b) < 0)),
        one("isInteger", ("quantity_isInteger", t.BOOL, [t.MAP], True,
                          lambda q: _number(q) == _number(q).to_integral_value())),
        one("asInteger", ("quantity_asInteger", t.INT, [t.MAP], True, _as_integer)),
        one("asApproximateFloat", ("quantity_asApproximateFloat", t.DOUBLE, [t.MAP], True,
                                   lambda q: float(_number(q)))),
        one("sign", ("quantity_sign", t.INT, [t.MAP], True,
                     lambda q: (_number(q) > 0) - (_number(q) < 0))),
        one("add", ("quantity_add_quantity", t.MAP, [t.MAP, t.MAP], True,
                    lambda q, o: _plus(q, o, 1)),
            ("quantity_add_int", t.MAP, [t.MAP, t.INT], True, lambda q, o: _plus(q, o, 1))),
        one("sub", ("quantity_sub_quantity", t.MAP, [t.MAP, t.MAP], True,
                    lambda q, o: _plus(q, o, -1)),
            ("quantity_sub_int", t.MAP, [t.MAP, t.INT], True, lambda q, o: _plus(q, o, -1))),
        one("major", ("semver_major", t.INT, [t.MAP], True, _version_part("major"))),
        one("minor", ("semver_minor", t.INT, [t.MAP], True, _version_part("minor"))),
        one("patch", ("semver_patch", t.INT, [t.MAP], True, _version_part("patch"))),
    ]
