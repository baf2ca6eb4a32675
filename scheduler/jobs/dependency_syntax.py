"""The text of a job dependency (``-d``), parsed as Slurm's ``update_job_dependency`` reads it.

``type:ref[:ref...]`` items joined by ``,`` (all must hold) or ``?`` (any may hold; the two
cannot be mixed); ``singleton`` takes no reference; a bare reference is ``afterany`` on it
(Slurm's old form). A reference is

- ``ID``: a job id, or the id of an array (its first task's), which names every task;
- ``ID_TASK``: one task of array ``ID``; ``ID_[1-3,7]`` is ``ID_1:ID_2:ID_3:ID_7``;
- a SLUID: a job's, or the array's as submitted (every task);

each optionally followed by ``+MINUTES`` (``after:ID+10``: ten minutes after it started; the
other types accept and ignore it, as Slurm does). Types: ``after``, ``afterany``, ``afterok``,
``afternotok``, ``aftercorr``, ``singleton``; Slurm's ``expand`` and ``afterburstbuffer`` are
refused (Sluice has no job expansion and no burst buffers).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from schemas.digits import INT_DIGITS, LONG_DIGITS, ascii_whole

__all__ = ["KINDS", "MAX_NAMED_TASKS", "Dependency", "DependencyError", "Ref",
           "parse_dependency"]

KINDS = ("after", "afterany", "afterok", "afternotok", "aftercorr", "singleton")
_UNSUPPORTED = {
    "expand": "Sluice does not grow running jobs",
    "afterburstbuffer": "Sluice has no burst buffers",
}
MAX_NAMED_TASKS = 10_000
"""The most tasks one ``ID_[...]`` may list (a range is expanded into one reference a task)."""

_BRACKETS = re.compile(r"(\d+)_\[([^\]]*)\]", re.ASCII)
_RANGE = re.compile(r"^(\d{1,9})(?:-(\d{1,9}))?$", re.ASCII)


class DependencyError(ValueError):
    """A dependency text does not parse."""


@dataclass(frozen=True, slots=True)
class Ref:
    """One job a dependency names: ``job`` (an id in ASCII digits, or a SLUID), ``task``
    (``ID_TASK``: that task of array ``ID``; -1: the job, or the whole array) and the delay
    ``+MINUTES`` (0: none)."""

    job: str
    task: int = -1
    delay_min: int = 0

    @property
    def job_id(self) -> int | None:
        """The job (or array) id named, None for a SLUID."""
        return ascii_whole(self.job, LONG_DIGITS)

    def __str__(self) -> str:
        task = f"_{self.task}" if self.task >= 0 else ""
        return f"{self.job}{task}" + (f"+{self.delay_min}" if self.delay_min else "")


@dataclass(frozen=True, slots=True)
class Dependency:
    """A parsed dependency: its items (type, references) and whether any one suffices."""

    items: tuple[tuple[str, tuple[Ref, ...]], ...]
    any_of: bool = False

    def refs(self) -> tuple[Ref, ...]:
        """Every reference, in order."""
        return tuple(ref for _, refs in self.items for ref in refs)


def _expand_brackets(text: str) -> str:
    """``ID_[1-3,7]`` written out as ``ID_1:ID_2:ID_3:ID_7`` (Slurm's ``_xlate_array_dep``)."""

    def written_out(match: re.Match[str]) -> str:
        job, tasks = match.group(1), list[int]()
        for item in match.group(2).split(","):
            bounds = _RANGE.match(item.strip())
            if bounds is None:
                raise DependencyError(f"bad task list {match.group(0)[:40]!r}")
            low = int(bounds.group(1))
            high = int(bounds.group(2)) if bounds.group(2) else low
            if high < low or len(tasks) + high - low >= MAX_NAMED_TASKS:
                raise DependencyError(f"bad or too long task list {match.group(0)[:40]!r}")
            tasks += range(low, high + 1)
        return ":".join(f"{job}_{task}" for task in sorted(set(tasks)))

    return _BRACKETS.sub(written_out, text) if "_[" in text else text


def _ref(text: str) -> Ref:
    body, plus, minutes = text.partition("+")
    delay = ascii_whole(minutes, INT_DIGITS) if plus else 0
    if delay is None or (plus and delay <= 0):
        raise DependencyError(f"{text[:40]!r}: the delay after '+' is a number of minutes > 0")
    job, under, task_text = body.partition("_")
    if under:
        task = ascii_whole(task_text, INT_DIGITS)
        if ascii_whole(job, LONG_DIGITS) is None or task is None:
            raise DependencyError(f"{text[:40]!r}: an array task is ARRAYID_TASKID")
        return Ref(job, task, delay)
    if not job or not job.isalnum():
        raise DependencyError(f"{text[:40]!r} is not a job id")
    return Ref(job, -1, delay)


def _item(part: str) -> tuple[str, tuple[Ref, ...]]:
    kind, colon, rest = part.strip().partition(":")
    kind = kind.lower()
    if not colon and kind == "singleton":
        return kind, ()
    if not colon and kind[:1].isdigit():  # Slurm's old form: a job id alone is afterany
        return "afterany", (_ref(kind),)
    if kind in _UNSUPPORTED:
        raise DependencyError(f"dependency type {kind!r} is not supported: {_UNSUPPORTED[kind]}")
    if kind not in KINDS:
        raise DependencyError(f"unknown dependency type {kind[:40]!r}")
    texts = rest.split(":") if colon else []
    if kind == "singleton" or not texts or not all(texts):
        raise DependencyError(f"{part[:60]!r}: singleton takes no job, the others need jobs")
    return kind, tuple(_ref(text) for text in texts)


@functools.lru_cache(maxsize=4096)
def parse_dependency(text: str) -> Dependency:
    """Parse a dependency text; raise :class:`DependencyError` when malformed."""
    text = _expand_brackets(text)
    if "," in text and "?" in text:
        raise DependencyError("',' and '?' cannot be mixed")
    items = tuple(_item(part) for part in filter(None, text.replace("?", ",").split(",")))
    if not items:
        raise DependencyError("empty dependency")
    return Dependency(items, "?" in text)
