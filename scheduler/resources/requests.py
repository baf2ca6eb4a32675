"""``--licenses`` and ``--resources`` strings (Slurm's ``_build_license_list``).

- ``a:2,b:1`` (also ``;`` and ``=``): all of them; a name alone means 1; the same name twice
  adds up; zero counts are dropped.
- ``a|b``: any one of them (cannot be mixed with ``,``, ``;`` or ``(``).
- ``name(nodes):n``: a count on one layer (reservations).
- ``--resources=power:full_node``: a count may be a variable of that resource; sbatch appends
  ``--resources`` to ``--licenses`` (:func:`combine_options`).

A malformed string raises :class:`LicenseSyntaxError`; the caller turns it into a rejection.
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.resources.model import Mode, ResourcesConfig
from scheduler.topology.hostlist import HostlistError, expand

__all__ = [
    "LicenseRequest",
    "LicenseSpec",
    "LicenseSyntaxError",
    "check_spec",
    "combine_options",
    "parse_licenses",
]


class LicenseSyntaxError(ValueError):
    """A ``--licenses``/``--resources`` string does not parse."""


@dataclass(frozen=True, slots=True)
class LicenseRequest:
    """``count`` of ``name`` (per node for a Mode-3 resource), optionally on one layer."""

    name: str
    count: int
    nodes: str | None = None


@dataclass(frozen=True, slots=True)
class LicenseSpec:
    """What a job asks for, in the order written; ``any_of`` for ``a|b``."""

    items: tuple[LicenseRequest, ...] = ()
    any_of: bool = False

    def count_of(self, name: str) -> int:
        """Total asked for ``name`` (0 if absent)."""
        return sum(item.count for item in self.items if item.name == name)


def combine_options(licenses: str | None, resources: str | None) -> str:
    """sbatch's client-side merge: ``--resources`` appended to ``--licenses``."""
    return ",".join(part for part in (licenses, resources) if part)


def parse_licenses(text: str | None, config: ResourcesConfig | None = None) -> LicenseSpec:
    """Parse a license string; variables are looked up in ``config`` when given."""
    if not text:
        return LicenseSpec()
    if "|" in text and any(c in text for c in ",;("):
        raise LicenseSyntaxError(f"{text!r}: '|' cannot be combined with ',', ';' or '('")
    any_of = "|" in text
    tokens = text.split("|") if any_of else text.replace(";", ",").split(",")
    totals: dict[tuple[str, str | None], int] = {}
    for token in tokens:
        if not token:
            continue
        name, nodes, count = _token(token, text, config)
        totals[(name, nodes)] = totals.get((name, nodes), 0) + count
    items = tuple(LicenseRequest(n, c, nodes) for (n, nodes), c in totals.items() if c > 0)
    return LicenseSpec(items, any_of and bool(items))


def _token(token: str, text: str, config: ResourcesConfig | None) -> tuple[str, str | None, int]:
    if any(c.isspace() for c in token):
        raise LicenseSyntaxError(f"{text!r}: spaces are not allowed")
    head, separator, amount = _split_amount(token)
    nodes = None
    if "(" in head:
        head, _, rest = head.partition("(")
        if not rest.endswith(")") or len(rest) < 2:
            raise LicenseSyntaxError(f"{text!r}: unclosed '(' in {token!r}")
        nodes = rest[:-1]
    if not head:
        raise LicenseSyntaxError(f"{text!r}: a license needs a name")
    if not separator:
        return head, nodes, 1
    if amount.isascii() and amount.isdigit():
        if len(amount) > 18:  # past an Avro long
            raise LicenseSyntaxError(f"{text[:60]!r}: the count {amount[:20]}… is too large")
        return head, nodes, int(amount)
    if amount.startswith("-") and amount[1:].isdigit():
        raise LicenseSyntaxError(f"{text!r}: counts must not be negative")
    value = _variable(config, head, amount)
    if value is None:
        raise LicenseSyntaxError(
            f"{text!r}: {amount!r} is neither a count nor a variable of {head!r}"
        )
    return head, nodes, value


def _split_amount(token: str) -> tuple[str, str, str]:
    closing = token.rfind(")")
    for position, char in enumerate(token):
        if char in ":=" and position > closing:
            return token[:position], char, token[position + 1 :]
    return token, "", ""


def _variable(config: ResourcesConfig | None, name: str, variable: str) -> int | None:
    if config is None or name not in config.names:
        return None
    return config.get(name).variable(variable)


def check_spec(spec: LicenseSpec, config: ResourcesConfig) -> str | None:
    """Why a parsed request is invalid for these resources, or ``None``.

    Only one Mode-3 resource per job; a layer (``name(nodes)``) must exist; ``|`` cannot
    name hierarchical resources of different modes.
    """
    mode3 = [
        i.name
        for i in spec.items
        if i.name in config.names and config.get(i.name).mode is Mode.MODE_3
    ]
    if len(set(mode3)) > 1:
        return f"only one MODE_3 resource per job (asked for {', '.join(sorted(set(mode3)))})"
    for item in spec.items:
        if item.nodes is not None and item.name in config.names:
            try:
                wanted = frozenset(expand(item.nodes))
            except HostlistError as exc:
                return str(exc)
            if all(frozenset(layer.nodes) != wanted for layer in config.get(item.name).layers):
                return f"{item.name} has no layer on {item.nodes}"
    if spec.any_of and any(
        config.get(i.name).mode is Mode.MODE_3 for i in spec.items if i.name in config.names
    ):
        return "a MODE_3 resource cannot be one of several alternatives ('|')"
    return None
