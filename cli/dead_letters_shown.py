"""What ``sluice audit`` and ``sluice show job`` say of the requests the intake dead-lettered.

A request the intake could not read (unknown schema id, undecodable, too large, wrong key...)
never reaches the ledger; the views index the dead letters of requests by their key, the
subject's SLUID (``GET /v1/dead-letters/<SLUID>``, ``projections.dead_letter_index``), and
show each reader what it may see: the reason code and time, the detail only to operators and
administrators; others get Sluice's own words for the code (``meaning``). These lines are
``dead-lettered: REASON at TIME (DETAIL or MEANING)``.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from cli.client import ApiError, Client
from cli.formats import shown, slurm_time
from schemas.sluid import is_sluid

__all__ = ["dead_letter_field", "dead_letter_lines", "dead_letters", "letter_line"]


def letter_line(letter: dict[str, Any]) -> str:
    """``dead-lettered: REASON at TIME`` and the detail, when the reader may see it, else the
    code's meaning (Sluice's fixed words: what to fix)."""
    when = slurm_time(int(letter.get("time_ms") or 0))
    line = f"dead-lettered: {letter.get('reason', '')} at {when}"
    detail = str(letter.get("detail") or letter.get("meaning") or "")
    if detail and detail != letter.get("reason"):
        line += f" ({detail})"
    return shown(line)  # its sender's words: no terminal escape reaches an operator


def dead_letters(client: Client, sluid: str) -> list[dict[str, Any]]:
    """The dead letters keyed by ``sluid`` the views show this user, oldest first (none when
    ``sluid`` is no SLUID or the views do not answer: the rest of the command goes on)."""
    if not is_sluid(sluid):
        return []
    try:
        answer = client.get(f"/v1/dead-letters/{quote(sluid, safe='')}")
    except (ApiError, OSError):
        return []
    letters = answer.get("dead_letters")
    if not isinstance(letters, list):
        return []
    return [letter for letter in letters if isinstance(letter, dict)]


def dead_letter_lines(client: Client, sluid: str) -> list[str]:
    """:func:`letter_line` of each of :func:`dead_letters`."""
    return [letter_line(letter) for letter in dead_letters(client, sluid)]


def dead_letter_field(letter: dict[str, Any]) -> str:
    """``DeadLettered=REASON@TIME``: the letter as a ``scontrol show job`` field."""
    when = slurm_time(int(letter.get("time_ms") or 0))
    return shown(f"DeadLettered={letter.get('reason', '')}@{when}")
