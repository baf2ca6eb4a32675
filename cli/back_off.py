"""A request refused ``RateLimited`` is sent again after a back-off, a bounded number of times.

Slurm's client (``slurm_send_recv_controller_msg``) answers slurmctld's
``SLURMCTLD_COMMUNICATIONS_BACKOFF`` by sleeping one second more on each refusal (1 s, 2 s,
3 s…) and trying again, for ever, saying ``RPC rate limited N time(s). Sleeping then trying
again.`` Sluice's CLI does the same, says it on stderr every time, and gives up after
``SLUICE_RATE_LIMIT_RETRIES`` tries again (default 5: 15 s of sleep in all; 0: never), so a
script that floods fails cleanly with the refusal ("Rate limit exceeded, please retry
momentarily [RateLimited]") instead of hanging. The intake's buckets: docs/security.md.
"""

from __future__ import annotations

import os
import sys
import time

__all__ = ["RATE_LIMITED", "RETRIES_DEFAULT", "back_off", "retries"]

RATE_LIMITED = "RateLimited"
"""The reason of a request refused by the intake's rate limit."""
RETRIES_DEFAULT = 5


def retries() -> int:
    """How many times a rate-limited request is sent again (``SLUICE_RATE_LIMIT_RETRIES``)."""
    text = os.environ.get("SLUICE_RATE_LIMIT_RETRIES", "").strip()
    return int(text) if text.isdigit() else RETRIES_DEFAULT


def back_off(refused: int, at_least: float = 0.0) -> float:
    """Say that the request was refused ``refused`` times, sleep ``refused`` seconds (Slurm's
    back-off), or ``at_least`` when longer (the relay's ``Retry-After``), and return the
    seconds slept."""
    sys.stderr.write(f"sluice: RPC rate limited {refused} time(s). "
                     "Sleeping then trying again.\n")
    sys.stderr.flush()
    slept = max(float(refused), min(at_least, 60.0))
    time.sleep(slept)
    return slept
