"""Slurm host lists: ``gpu[001-004,7],login1`` ↔ the node names they stand for."""

from __future__ import annotations

import re

__all__ = ["HostlistError", "expand_hostlist"]

_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")
MAX_HOSTS = 1_000_000


class HostlistError(ValueError):
    """A host list does not parse (a bug in the caller's text, reported as a config error)."""


def expand_hostlist(text: str) -> tuple[str, ...]:
    """Expand a host list in order; ``a[1-3]`` → ``a1 a2 a3``, zero padding kept."""
    names: list[str] = []
    for item in _split_top_level(text.strip()):
        names.extend(_expand_one(item))
        if len(names) > MAX_HOSTS:
            raise HostlistError(f"host list {text!r} names more than {MAX_HOSTS} hosts")
    return tuple(names)


def _split_top_level(text: str) -> list[str]:
    items, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise HostlistError(f"unbalanced ']' in host list {text!r}")
        elif char == "," and depth == 0:
            items.append(text[start:i].strip())
            start = i + 1
    if depth:
        raise HostlistError(f"unbalanced '[' in host list {text!r}")
    items.append(text[start:].strip())
    return [item for item in items if item]


def _expand_one(item: str) -> list[str]:
    open_at = item.find("[")
    if open_at < 0:
        if "]" in item:
            raise HostlistError(f"unbalanced ']' in {item!r}")
        return [item]
    close_at = item.find("]", open_at)
    prefix, body, rest = item[:open_at], item[open_at + 1 : close_at], item[close_at + 1 :]
    tails = _expand_one(rest) if rest else [""]
    names: list[str] = []
    for part in body.split(","):
        match = _RANGE.match(part.strip())
        if not match:
            raise HostlistError(f"bad range {part!r} in {item!r}")
        low_text, high_text = match.group(1), match.group(2) or match.group(1)
        low, high = int(low_text), int(high_text)
        if high < low:
            raise HostlistError(f"range {part!r} in {item!r} goes backwards")
        if high - low > MAX_HOSTS:
            raise HostlistError(f"range {part!r} in {item!r} is too large")
        width = len(low_text) if low_text.startswith("0") else 0
        names.extend(f"{prefix}{n:0{width}d}{tail}" for n in range(low, high + 1) for tail in tails)
    return names
