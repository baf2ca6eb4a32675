"""Value converters for configuration keys; each raises ``ValueError`` with a clear reason.

Slurm's formats: times as ``minutes``, ``minutes:seconds``, ``hours:minutes:seconds``,
``days-hours[:minutes[:seconds]]`` or ``UNLIMITED``; booleans as YES/NO; GRES as
``gpu[:type]:count``; TRES as ``cpu=64,mem=512G,gres/gpu=8,node=4``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

__all__ = [
    "ConfigError",
    "as_bool",
    "as_choice",
    "as_int",
    "as_mem_mb",
    "as_str",
    "as_str_list",
    "as_time_s",
    "parse_gres",
    "parse_time_s",
    "parse_tres",
]

_UNLIMITED = {"UNLIMITED", "INFINITE", "-1"}
_MEM = re.compile(r"^(\d+)\s*([KMGT]?)B?$", re.IGNORECASE)
_MEM_FACTOR = {"": 1, "K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}


class ConfigError(ValueError):
    """A configuration text is invalid: where (source, line) and why."""

    def __init__(self, source: str, line: int, reason: str) -> None:
        super().__init__(f"{source}:{line}: {reason}")
        self.source, self.line, self.reason = source, line, reason


def as_str(value: Any, key: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{key} must be a single value")
    return value.strip()


def as_str_list(value: Any, key: str) -> tuple[str, ...]:
    if isinstance(value, list):
        return tuple(as_str(item, key) for item in value)
    return tuple(p.strip() for p in as_str(value, key).split(",") if p.strip())


def as_bool(value: Any, key: str) -> bool:
    text = as_str(value, key).upper()
    if text in {"YES", "TRUE", "ON", "1"}:
        return True
    if text in {"NO", "FALSE", "OFF", "0"}:
        return False
    raise ValueError(f"{key} must be YES or NO, not {value!r}")


def as_int(low: int, *, unlimited: bool = False) -> Callable[[Any, str], int]:
    """A converter for whole numbers ≥ ``low`` (``UNLIMITED`` → 0 when allowed)."""

    def convert(value: Any, key: str) -> int:
        text = as_str(value, key)
        if unlimited and text.upper() in _UNLIMITED:
            return 0
        try:
            number = int(text)
        except ValueError:
            raise ValueError(f"{key} must be a whole number, not {text!r}") from None
        if number < low:
            raise ValueError(f"{key} must be at least {low}, not {number}")
        return number

    return convert


def as_factor(value: Any, key: str) -> float:
    """A non-negative decimal number (Slurm's ``UsageFactor``: 0 = free, 1 = normal)."""
    text = as_str(value, key)
    try:
        number = float(text)
    except ValueError:
        raise ValueError(f"{key} must be a number, not {text!r}") from None
    if not number >= 0 or number == float("inf"):
        raise ValueError(f"{key} must be a finite number of at least 0, not {text}")
    return number


def as_choice(*choices: str) -> Callable[[Any, str], str]:
    """A converter accepting one of ``choices`` (case-insensitive), returned as listed."""

    def convert(value: Any, key: str) -> str:
        text = as_str(value, key)
        for choice in choices:
            if text.upper() == choice.upper():
                return choice
        raise ValueError(f"{key} must be one of {', '.join(choices)}, not {text!r}")

    return convert


def as_mem_mb(value: Any, key: str) -> int:
    match = _MEM.match(as_str(value, key))
    if not match:
        raise ValueError(f"{key} must be a size in MB (or with K/M/G/T), not {value!r}")
    return int(int(match.group(1)) * _MEM_FACTOR[match.group(2).upper()])


def parse_time_s(text: str) -> int:
    """Seconds in a Slurm time text; 0 for UNLIMITED. Raise ``ValueError`` when malformed."""
    text = text.strip()
    if text.upper() in _UNLIMITED:
        return 0
    days, _, clock = text.rpartition("-") if "-" in text else ("", "", text)
    try:
        parts = [int(p) for p in clock.split(":")]
        day_count = int(days) if days else 0
    except ValueError:
        raise ValueError(f"{text!r} is not a time (minutes, h:m:s or d-h:m:s)") from None
    if any(p < 0 for p in parts) or day_count < 0 or len(parts) > 3:
        raise ValueError(f"{text!r} is not a time (minutes, h:m:s or d-h:m:s)")
    if days:  # d-h, d-h:m, d-h:m:s
        parts += [0] * (3 - len(parts))
        hours, minutes, seconds = parts
    elif len(parts) == 3:
        hours, minutes, seconds = parts
    elif len(parts) == 2:
        hours, minutes, seconds = 0, parts[0], parts[1]
    else:
        hours, minutes, seconds = 0, parts[0], 0
    return ((day_count * 24 + hours) * 60 + minutes) * 60 + seconds


def as_time_s(value: Any, key: str) -> int:
    try:
        return parse_time_s(as_str(value, key))
    except ValueError as error:
        raise ValueError(f"{key}: {error}") from None


def parse_gres(value: Any, key: str) -> tuple[int, str]:
    """``gpu:8`` → (8, ""); ``gpu:h100:4`` → (4, "h100")."""
    parts = as_str(value, key).split(":")
    if parts[0] != "gpu" or len(parts) not in (2, 3):
        raise ValueError(f"{key} must look like gpu:COUNT or gpu:TYPE:COUNT, not {value!r}")
    count = as_int(0)(parts[-1], key)
    return count, parts[1] if len(parts) == 3 else ""


def parse_tres(value: Any, key: str) -> dict[str, int]:
    """``cpu=64,mem=512G,gres/gpu=8,node=4`` → counts (memory in MB)."""
    result: dict[str, int] = {}
    for item in as_str_list(value, key):
        name, _, amount = item.partition("=")
        name = name.strip().lower()
        if name not in {"cpu", "mem", "gres/gpu", "node"}:
            raise ValueError(f"{key}: unknown TRES {name!r} (cpu, mem, gres/gpu, node)")
        result[name] = as_mem_mb(amount, key) if name == "mem" else as_int(0)(amount, key)
    return result
