"""Package attributes imported when first used (PEP 562).

``scheduler`` and ``scheduler.topology`` export many names from their submodules; importing
them all eagerly would make every ``import scheduler.x`` (the node daemon's, the CLI's) load the
whole core. Each package keeps a table (name → (module, attribute)) and gets its
``__getattr__`` and ``__dir__`` from :func:`lazy_exports`; its ``TYPE_CHECKING`` imports and
its literal ``__all__`` give type checkers and linters the same names.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, namespace: dict[str, Any], table: Mapping[str, tuple[str, str]],
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """(``__getattr__``, ``__dir__``) for ``package`` exporting ``table``'s names; a name is
    imported once and kept in ``namespace`` (the package's globals)."""

    def getattr_(name: str) -> Any:
        try:
            module, attribute = table[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        value = getattr(importlib.import_module(module), attribute)
        namespace[name] = value
        return value

    def dir_() -> list[str]:
        return sorted(set(namespace) | set(table))

    return getattr_, dir_
