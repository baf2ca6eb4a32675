"""A small writer for the Prometheus text exposition format (version 0.0.4).

Metric families are plain data: a name, a help sentence, a type and samples. Gauges built from
the views are computed at scrape time; counters and histograms fed by facts live in
:class:`Counter` and :class:`Histogram`, which are safe to update from the projection thread
while the HTTP threads render them. Integers are written without a decimal point, as slurmctld
writes them.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

__all__ = ["CONTENT_TYPE", "Counter", "Family", "Histogram", "Labels", "render"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
Labels = tuple[tuple[str, str], ...]
"""Label pairs in the order they are written."""


@dataclass
class Family:
    """One metric family: ``# HELP``, ``# TYPE`` and its samples ``(suffix, labels, value)``."""

    name: str
    help: str
    type: str = "gauge"
    samples: list[tuple[str, Labels, float]] = field(default_factory=list)

    def add(self, value: float, labels: Labels = (), suffix: str = "") -> Family:
        """Append one sample; returns the family for chaining."""
        self.samples.append((suffix, labels, value))
        return self


def gauge(name: str, help_text: str, value: float, labels: Labels = ()) -> Family:
    """A gauge family with one sample."""
    return Family(name, help_text).add(value, labels)


def _escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _number(value: float) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if math.isnan(value):
        return "NaN"
    if value.is_integer() and abs(value) < 2**53:
        return str(int(value))
    return repr(value)


def render(families: Iterable[Family]) -> bytes:
    """The exposition text of ``families`` (each name once, in the given order)."""
    lines: list[str] = []
    seen: set[str] = set()
    for family in families:
        if family.name in seen:
            raise ValueError(f"metric family {family.name} rendered twice")
        seen.add(family.name)
        lines.append(f"# HELP {family.name} {_escape_help(family.help)}")
        lines.append(f"# TYPE {family.name} {family.type}")
        for suffix, labels, value in family.samples:
            name = family.name + suffix
            if labels:
                text = ",".join(f'{k}="{_escape_label(v)}"' for k, v in labels)
                lines.append(f"{name}{{{text}}} {_number(value)}")
            else:
                lines.append(f"{name} {_number(value)}")
    return ("\n".join(lines) + "\n").encode()


class Counter:
    """A monotonic counter per label set."""

    def __init__(self, name: str, help_text: str, label_names: Sequence[str] = ()) -> None:
        self.name, self.help, self.label_names = name, help_text, tuple(label_names)
        self._values: dict[tuple[str, ...], float] = {}
        self._lock = threading.Lock()

    def inc(self, *labels: str, amount: float = 1.0) -> None:
        """Add ``amount`` to the series with these label values."""
        with self._lock:
            self._values[labels] = self._values.get(labels, 0.0) + amount

    def value(self, *labels: str) -> float:
        """The current value of one series (0 if never incremented)."""
        with self._lock:
            return self._values.get(labels, 0.0)

    def family(self) -> Family:
        """A snapshot as a counter family (``<name>`` must end in ``_total``)."""
        with self._lock:
            items = sorted(self._values.items())
        out = Family(self.name, self.help, "counter")
        for values, total in items:
            out.add(total, tuple(zip(self.label_names, values, strict=True)))
        return out


class Histogram:
    """A cumulative histogram per label set, with fixed upper bounds."""

    def __init__(self, name: str, help_text: str, buckets: Sequence[float],
                 label_names: Sequence[str] = ()) -> None:
        self.name, self.help, self.label_names = name, help_text, tuple(label_names)
        self.bounds = tuple(sorted(buckets))
        self._series: dict[tuple[str, ...], list[float]] = {}
        self._lock = threading.Lock()

    def observe(self, value: float, *labels: str) -> None:
        """Record one observation in the series with these label values."""
        with self._lock:
            series = self._series.setdefault(labels, [0.0] * (len(self.bounds) + 2))
            for i, bound in enumerate(self.bounds):
                if value <= bound:
                    series[i] += 1
            series[-2] += value
            series[-1] += 1

    def count(self, *labels: str) -> int:
        """How many observations one series has."""
        with self._lock:
            series = self._series.get(labels)
            return 0 if series is None else int(series[-1])

    def family(self) -> Family:
        """A snapshot as a histogram family (``_bucket``, ``_sum``, ``_count``)."""
        with self._lock:
            items = sorted((k, list(v)) for k, v in self._series.items())
        out = Family(self.name, self.help, "histogram")
        for values, series in items:
            labels = tuple(zip(self.label_names, values, strict=True))
            for bound, count in zip(self.bounds, series, strict=False):
                out.add(count, (*labels, ("le", _number(float(bound)))), "_bucket")
            out.add(series[-1], (*labels, ("le", "+Inf")), "_bucket")
            out.add(series[-2], labels, "_sum")
            out.add(series[-1], labels, "_count")
        return out
