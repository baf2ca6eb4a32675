"""Read YAML text into typed values while remembering line numbers.

PyYAML's composer gives a node tree whose marks carry positions; walking that tree (rather
than the plain Python values) lets every error name the line of the offending key or item.
Shared by topology.yaml and resources.yaml.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NoReturn

import yaml

from scheduler.topology.errors import ConfigError
from scheduler.topology.hostlist import HostlistError, expand

__all__ = ["YamlReader"]

Scalar = str | int | bool | float | None


class YamlReader:
    """Typed access to a composed YAML tree; every failure raises ``error_type``."""

    def __init__(self, filename: str, error_type: type[ConfigError]) -> None:
        self.filename = filename
        self.error_type = error_type

    def load(self, text: str) -> yaml.Node | None:
        """Compose the text; a YAML syntax error becomes a config error at its line."""
        try:
            return yaml.compose(text, Loader=yaml.SafeLoader)
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            line = mark.line + 1 if mark is not None else 1
            raise self.error_type(self.filename, line, f"YAML syntax: {exc.problem}") from exc
        except yaml.YAMLError as exc:
            raise self.error_type(self.filename, 1, f"YAML syntax: {exc}") from exc

    @staticmethod
    def line(node: yaml.Node) -> int:
        """1-based line where the node starts."""
        return int(node.start_mark.line) + 1

    def fail(self, where: yaml.Node | int, reason: str) -> NoReturn:
        """Raise the configured error at a node or line."""
        line = where if isinstance(where, int) else self.line(where)
        raise self.error_type(self.filename, line, reason)

    def mapping(self, node: yaml.Node, what: str) -> list[tuple[str, yaml.Node, yaml.Node]]:
        """(key, key node, value node) in file order; duplicate keys are errors."""
        if not isinstance(node, yaml.MappingNode):
            self.fail(node, f"{what} must be a mapping")
        pairs: list[tuple[str, yaml.Node, yaml.Node]] = []
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = self.scalar(key_node, f"a key of {what}")
            if not isinstance(key, str):
                self.fail(key_node, f"keys of {what} must be text, not {key!r}")
            if key in seen:
                self.fail(key_node, f"duplicate key {key!r} in {what}")
            seen.add(key)
            pairs.append((key, key_node, value_node))
        return pairs

    def check_keys(
        self, pairs: Iterable[tuple[str, yaml.Node, yaml.Node]], allowed: Iterable[str], what: str
    ) -> None:
        """Reject any key not in ``allowed``, naming the allowed ones."""
        allowed_keys = tuple(allowed)
        for key, key_node, _ in pairs:
            if key not in allowed_keys:
                self.fail(
                    key_node, f"unknown key {key!r} in {what} (allowed: {', '.join(allowed_keys)})"
                )

    def sequence(self, node: yaml.Node, what: str) -> list[yaml.Node]:
        """Items of a YAML list."""
        if not isinstance(node, yaml.SequenceNode):
            self.fail(node, f"{what} must be a list")
        return list(node.value)

    def scalar(self, node: yaml.Node, what: str) -> Scalar:
        """A scalar typed by YAML's implicit tags (int, bool, null, float, text)."""
        if not isinstance(node, yaml.ScalarNode):
            self.fail(node, f"{what} must be a single value")
        tag = str(node.tag)
        value = str(node.value)
        if tag.endswith(":int"):
            return int(value.replace("_", ""), 0)
        if tag.endswith(":bool"):
            return value.lower() in ("true", "yes", "on", "y")
        if tag.endswith(":null"):
            return None
        if tag.endswith(":float"):
            return float(value)
        return value

    def text(self, node: yaml.Node, what: str) -> str:
        """A non-empty text value (numbers are accepted and written as text)."""
        value = self.scalar(node, what)
        if value is None or isinstance(value, bool) or value == "":
            self.fail(node, f"{what} must be a non-empty name")
        return str(value)

    def integer(self, node: yaml.Node, what: str, *, minimum: int | None = None) -> int:
        """An integer, optionally at least ``minimum``."""
        value = self.scalar(node, what)
        if not isinstance(value, int) or isinstance(value, bool):
            self.fail(node, f"{what} must be an integer, not {value!r}")
        if minimum is not None and value < minimum:
            self.fail(node, f"{what} must be at least {minimum}, not {value}")
        return value

    def boolean(self, node: yaml.Node, what: str) -> bool:
        """true/false."""
        value = self.scalar(node, what)
        if not isinstance(value, bool):
            self.fail(node, f"{what} must be true or false, not {value!r}")
        return value

    def hostlist(self, node: yaml.Node, what: str) -> tuple[str, ...]:
        """Node names from a host list string, or from a list of host list strings."""
        parts = self.sequence(node, what) if isinstance(node, yaml.SequenceNode) else [node]
        names: list[str] = []
        for part in parts:
            text = self.scalar(part, what)
            if text is None:
                continue
            try:
                names.extend(expand(str(text)))
            except HostlistError as exc:
                self.fail(part, f"{what}: {exc}")
        return tuple(names)

    def named_nodes(self, node: yaml.Node, key: str) -> tuple[str, tuple[str, ...], int]:
        """(name, nodes, line) of a ``{<key>: name, nodes: hostlist}`` item."""
        pairs = self.mapping(node, f"a {key}")
        self.check_keys(pairs, (key, "nodes"), f"a {key}")
        values = {k: v for k, _, v in pairs}
        if key not in values:
            self.fail(node, f"each {key} needs '{key}: <name>'")
        name = self.text(values[key], key)
        nodes = self.hostlist(values["nodes"], "nodes") if "nodes" in values else ()
        return name, nodes, self.line(node)
