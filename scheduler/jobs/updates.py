"""Updating a pending job: ``UpdateJob.changes`` (field → text) applied to its spec.

Values are text on the wire; each is parsed by the type of the JobSpec field: whole numbers,
booleans (yes/no/true/false), ``command`` as a JSON list or a shell-quoted line, ``env`` as a
JSON object. ``user``, ``array`` and what the job runs (``command``, ``workdir``, ``env``,
``sealed_env``: the environment sealed to the nodes, ``script``) cannot change (Slurm refuses
too: the batch script is fixed at submission), except an array's ``%N`` limit on running tasks
(``array=%N``: scontrol's ``ArrayTaskThrottle=N``, :func:`with_throttle`). Changes apply in
sorted field order, so the result never depends on the map's order.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from dataclasses import fields, replace
from typing import Any

from scheduler.records import JobSpec
from schemas.digits import ascii_integer

__all__ = ["FIXED_FIELDS", "apply_changes", "throttle_only", "with_throttle"]

FIXED_FIELDS = frozenset({"user", "array", "command", "workdir", "env", "sealed_env", "script"})
_FIELD_TYPES = {f.name: str(f.type) for f in fields(JobSpec)}


def apply_changes(spec: JobSpec, changes: Mapping[str, str]) -> tuple[JobSpec, str]:
    """The changed spec and "" — or the unchanged spec and why a change is invalid."""
    values: dict[str, Any] = {}
    for name in sorted(changes):
        if name not in _FIELD_TYPES:
            return spec, f"{name!r} is not a job field"
        if name == "array" and changes[name].startswith("%"):
            throttled, error = with_throttle(spec.array, changes[name][1:])
            if error:
                return spec, error
            values[name] = throttled
            continue
        if name in FIXED_FIELDS:
            return spec, f"{name!r} cannot change after submission"
        try:
            values[name] = _parse(_FIELD_TYPES[name], changes[name])
        except ValueError as error:
            return spec, f"{name}: {error}"
    return replace(spec, **values), ""


def throttle_only(changes: Mapping[str, str]) -> bool:
    """The update sets an array's ``%N`` alone (``array=%N``: ArrayTaskThrottle)."""
    return set(changes) == {"array"} and changes["array"].startswith("%")


def with_throttle(array: str, limit: str) -> tuple[str, str]:
    """``array`` (an array task's ``--array`` text) with its ``%N`` limit on running tasks
    set to ``limit`` (``0``: none) — scontrol's ``ArrayTaskThrottle=N``, sent as the change
    ``array=%N``; only the limit changes, never the tasks. ("", why) when it cannot."""
    if not array:
        return "", "ArrayTaskThrottle: the job is no array task"
    number = ascii_integer(limit.strip())
    if number is None or number < 0 or number > _MAX_THROTTLE:
        return "", f"ArrayTaskThrottle {limit[:20]!r}: a whole number, 0 (no limit) or more"
    body = array.partition("%")[0]
    return (f"{body}%{number}" if number else body), ""


_MAX_THROTTLE = (1 << 31) - 1  # an Avro int, as the %N of a submission


def _whole(text: str) -> int:
    """``text`` as a whole number: ASCII digits with an optional sign, no more than a ``long``
    holds (:mod:`schemas.digits`)."""
    value = ascii_integer(text.strip())
    if value is None:
        raise ValueError(f"{text[:40]!r} is not a whole number (ASCII digits, at most 19)")
    return value


def _parse(kind: str, text: str) -> Any:
    if kind == "int":
        return _whole(text)
    if kind == "bool":
        lowered = text.strip().lower()
        if lowered in {"yes", "true", "1"}:
            return True
        if lowered in {"no", "false", "0"}:
            return False
        raise ValueError(f"{text!r} is not yes or no")
    if kind.startswith("tuple"):
        if text.lstrip().startswith("["):
            items = json.loads(text)
            if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
                raise ValueError("expected a JSON list of strings")
            return tuple(items)
        return tuple(shlex.split(text))
    if kind.startswith("Mapping"):
        env = json.loads(text or "{}")
        if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
            raise ValueError("expected a JSON object of strings")
        return dict(env)
    return text
