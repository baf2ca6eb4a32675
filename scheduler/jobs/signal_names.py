"""Signal names and ``--signal`` specs, as Slurm's commands take them (no other import: the
CLI parses with it too, and so does the core: :mod:`scheduler.jobs.signals`).

Signal numbers are Linux's (the nodes are Linux); a name is taken with or without ``SIG``, in
any case, as ``kill -l`` gives it (``RTMIN+N``, ``RTMAX-N`` too), or a number 1-64.
"""

from __future__ import annotations

import re
from typing import Final, NamedTuple

from schemas.digits import ascii_whole

__all__ = [
    "MAX_SIGNAL",
    "SIGKILL",
    "SIGNALS",
    "SignalScope",
    "SignalSpec",
    "parse_signal",
    "parse_signal_spec",
    "signal_name",
]

SIGNALS: Final[dict[str, int]] = {
    "HUP": 1, "INT": 2, "QUIT": 3, "ILL": 4, "TRAP": 5, "ABRT": 6, "BUS": 7, "FPE": 8,
    "KILL": 9, "USR1": 10, "SEGV": 11, "USR2": 12, "PIPE": 13, "ALRM": 14, "TERM": 15,
    "STKFLT": 16, "CHLD": 17, "CONT": 18, "STOP": 19, "TSTP": 20, "TTIN": 21, "TTOU": 22,
    "URG": 23, "XCPU": 24, "XFSZ": 25, "VTALRM": 26, "PROF": 27, "WINCH": 28, "IO": 29,
    "PWR": 30, "SYS": 31,
}
"""Linux signal names (without ``SIG``) → numbers; 32-64 are the real-time signals."""
SIGKILL: Final = 9
MAX_SIGNAL: Final = 64
_RTMIN: Final = 34  # glibc's SIGRTMIN on Linux
_RT_SPAN: Final = MAX_SIGNAL - _RTMIN
_DEFAULT_WARN_S: Final = 60  # Slurm's sig_time when --signal gives none
_SPEC = re.compile(r"(?:([RB]{1,2}):)?([A-Za-z0-9+]+)(?:@(\d{1,9}))?", re.ASCII)


class SignalScope:
    """Which processes of a run get the signal (Slurm's scancel default, ``-b``, ``-f``)."""

    STEPS: Final = "STEPS"  # the tasks of every step (srun), not the batch shell
    BATCH: Final = "BATCH"  # the batch shell alone, not its children nor the steps
    FULL: Final = "FULL"  # the batch shell, its children and every step
    ALL: Final = frozenset({STEPS, BATCH, FULL})


class SignalSpec(NamedTuple):
    """A parsed ``--signal``: the signal, how long before the limit, the scope."""

    signal: int
    seconds: int
    scope: str


_DIGITS = 3
"""The most digits of a signal number (64 at most)."""


def parse_signal(text: str) -> int | None:
    """``USR1``, ``SIGUSR1``, ``usr1``, ``10``, ``RTMIN+2`` → the number; None if not a signal."""
    word = text.strip().upper().removeprefix("SIG")
    if word.isdigit():  # (any script's digits: ascii_whole reads ASCII ones, a few)
        number = ascii_whole(word, _DIGITS) or 0
    elif word.startswith(("RTMIN", "RTMAX")):
        offset = ascii_whole(word[5:].removeprefix("+" if word.startswith("RTMIN") else "-")
                             or "0", _DIGITS)
        if offset is None or offset > _RT_SPAN:
            return None
        number = _RTMIN + offset if word.startswith("RTMIN") else MAX_SIGNAL - offset
    else:
        number = SIGNALS.get(word, 0)
    return number if 1 <= number <= MAX_SIGNAL else None


def parse_signal_spec(text: str) -> SignalSpec | None:
    """``[{R|B}:]SIG[@SECONDS]`` → its parts (SECONDS 0-65535, default 60); None if invalid.
    ``B:`` signals the batch shell only; without it, the steps (Slurm). ``R:`` (reservation
    end) is accepted and has no other effect: Sluice has no reservations."""
    match = _SPEC.fullmatch(text.strip())
    if match is None:
        return None
    flags, name, seconds = match.groups()
    number = parse_signal(name)
    warn_s = int(seconds) if seconds is not None else _DEFAULT_WARN_S
    if number is None or warn_s > 65535 or (flags and len(set(flags)) != len(flags)):
        return None
    scope = SignalScope.BATCH if flags and "B" in flags else SignalScope.STEPS
    return SignalSpec(number, warn_s, scope)


def signal_name(number: int) -> str:
    """``10`` → ``USR1``, ``36`` → ``RTMIN+2``; the number as text if it names no signal."""
    for name, value in SIGNALS.items():
        if value == number:
            return name
    return f"RTMIN+{number - _RTMIN}" if _RTMIN <= number <= MAX_SIGNAL else str(number)
