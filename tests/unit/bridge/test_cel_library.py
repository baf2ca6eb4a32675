"""Kubernetes' CEL quantity and semver functions (agents.bridge.cel_library) in Google's CEL:
values, equality, ordering, arithmetic, and the refusals Kubernetes makes."""

from __future__ import annotations

from typing import Any

import pytest

from agents.bridge.cel_library import (
    CelLibraryError,
    functions,
    quantity_value,
    semver_value,
)


def evaluate(expression: str) -> Any:
    from cel_expr_python import cel

    result = cel.NewEnv(functions=functions()).compile(expression).eval(data={})
    return result.value() if result.type() != cel.Type.ERROR else "error"


def test_equal_quantities_and_versions_are_equal_values() -> None:
    assert quantity_value("1") == quantity_value("1000m") == quantity_value("0.001k")
    assert quantity_value("1Gi") == quantity_value("1024Mi") != quantity_value("1G")
    assert quantity_value("-500m") == {"@quantity": "-0.5"}
    assert quantity_value("0") == quantity_value("-0") == {"@quantity": "0"}
    assert semver_value("1.2.3+build.7") == semver_value("1.2.3") == {"@semver": "1.2.3"}
    assert semver_value("v01.2", normalize=True) == {"@semver": "1.2.0"}
    for bad in ("", "1Gb", "Infinity", "1_000", "ten"):
        with pytest.raises(CelLibraryError):
            quantity_value(bad)
    for bad in ("1.2", "v1.2.3", "1.2.3.4", "01.2.3"):
        with pytest.raises(CelLibraryError):
            semver_value(bad)


@pytest.mark.parametrize(("expression", "value"), [
    ("quantity('1500m').compareTo(quantity('1.5')) == 0", True),
    ("quantity('2Gi').isGreaterThan(quantity('2G'))", True),
    ("quantity('2G').isLessThan(quantity('2Gi'))", True),
    ("quantity('1') == quantity('1000m')", True),
    ("quantity('1.5').isInteger()", False),
    ("quantity('4k').asInteger()", 4000),
    ("quantity('1.5').asInteger()", "error"),
    ("quantity('9223372036854775808').asInteger()", "error"),
    ("quantity('250m').asApproximateFloat()", 0.25),
    ("quantity('-1').sign()", -1),
    ("quantity('1Gi').add(quantity('512Mi')) == quantity('1.5Gi')", True),
    ("quantity('1').sub(3).sign()", -1),
    ("isQuantity('10Mi') && !isQuantity('10 Mi')", True),
    ("quantity('10 Mi')", "error"),
    ("semver('1.10.0').isGreaterThan(semver('1.9.9'))", True),
    ("semver('1.0.0-rc.1').isLessThan(semver('1.0.0'))", True),
    ("semver('1.0.0+a') == semver('1.0.0+b')", True),
    ("semver('2.3.4').major() * 100 + semver('2.3.4').minor() * 10 + semver('2.3.4').patch()",
     234),
    ("semver('1.0', true).compareTo(semver('1.0.0'))", 0),
    ("isSemver('1.0.0') && !isSemver('1.0') && isSemver('v1.0', true)", True),
    ("semver('1.0')", "error"),
    ("semver('1.0.0').compareTo(quantity('1'))", "error"),
    ("{'a': 1}.compareTo({'b': 2})", "error"),
])
def test_the_functions_answer_as_kubernetes_does(expression: str, value: Any) -> None:
    assert evaluate(expression) == value
