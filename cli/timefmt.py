"""Slurm's time formats, both ways.

``-t`` accepts ``minutes``, ``minutes:seconds``, ``hours:minutes:seconds``, ``days-hours``,
``days-hours:minutes`` and ``days-hours:minutes:seconds``; ``UNLIMITED``/``infinite`` is 0.
"""

from __future__ import annotations

from schemas.digits import ascii_whole

__all__ = ["format_duration", "parse_time_limit"]


def parse_time_limit(text: str) -> int:
    """Seconds for a Slurm time limit; raises ValueError with the accepted forms."""
    value = text.strip()
    if value.lower() in {"unlimited", "infinite", "0"}:
        return 0
    try:
        days = 0
        if "-" in value:
            day_text, value = value.split("-", 1)
            days = _whole(day_text)
            parts = [_whole(p) for p in value.split(":")]
            hours, minutes, seconds = ([*parts, 0, 0])[:3]
        else:
            parts = [_whole(p) for p in value.split(":")]
            if len(parts) == 1:
                hours, minutes, seconds = 0, parts[0], 0
            elif len(parts) == 2:
                hours, minutes, seconds = 0, parts[0], parts[1]
            elif len(parts) == 3:
                hours, minutes, seconds = parts
            else:
                raise ValueError(text)
    except ValueError:
        raise ValueError(
            f"invalid time limit {text!r}: use minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or "
            "D-HH:MM:SS"
        ) from None
    return ((days * 24 + hours) * 60 + minutes) * 60 + seconds


def _whole(text: str) -> int:
    """A part of a time: ASCII digits (no sign, ``_`` or other scripts' digits)."""
    value = ascii_whole(text)
    if value is None:
        raise ValueError(text)
    return value


def format_duration(seconds: int) -> str:
    """squeue's TIME format: ``M:SS``, ``H:MM:SS`` or ``D-HH:MM:SS``."""
    seconds = max(0, int(seconds))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}-{hours:02d}:{minutes:02d}:{secs:02d}"
    if hours:
        return f"{hours}:{minutes:02d}:{secs:02d}"
    return f"{minutes}:{secs:02d}"
