"""How long a waiting command bears a system it cannot reach: ``srun`` and ``salloc`` end with
an error instead of waiting for ever; ``sbatch --wait`` says so and waits on, as Slurm's does
(docs/slurm-commands.md, "When the system is gone").

Slurm's commands retry their controller for a while, then end: ``srun: error: Unable to
contact slurm controller (connect failure)``. A Sluice command hears the system through the
views' API, and every answer of it carries the views' freshness: the age of each shard's last
cycle (an idle shard still closes one every 10 s, on the leader's clock ticks). The system was
last heard when its youngest shard cycle happened, as the views saw it; a views API that does
not answer, or answers from what it last read while no shard cycles (the broker or the worker
gone), moves that time no further. Views that show no shard yet (a system starting) count as
heard now. :meth:`Contact.lost` says why once the system has not been heard for
``SLUICE_CONTACT_TIMEOUT`` seconds (60 by default, counted from the command's start at most).
"""

from __future__ import annotations

import time

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (issue 17)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["Contact"]


class Contact:
    """When the system was last heard, on ``clock`` (``time.monotonic``)."""

    __slots__ = ("_clock", "_heard", "_why", "limit_s")

    def __init__(self, limit_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit_s = limit_s
        self._clock = clock
        self._heard = clock()
        self._why = "no answer yet"

    def answered(self, answer: dict[str, Any]) -> None:
        """An answer of the views' API: the system was heard at its youngest shard cycle."""
        fresh = answer.get("freshness")
        ages = fresh.get("cycle_age_s") if isinstance(fresh, dict) else None
        now = self._clock()
        if not isinstance(ages, dict) or not ages:
            self._heard = now  # no shard yet, or a route without freshness: the views answer
            return
        youngest = min(float(age) for age in ages.values())
        self._heard = max(self._heard, now - youngest)
        if youngest > 0.5 * self.limit_s:
            self._why = (f"the views answer, but no shard has completed a cycle for "
                         f"{youngest:.0f} s (is the broker or the worker down?)")

    def failed(self, why: str) -> None:
        """The views' API did not answer (``why``)."""
        self._why = why

    def left(self) -> float:
        """Seconds until the contact counts as lost (0 once it is)."""
        return max(self._heard + self.limit_s - self._clock(), 0.0)

    def lost(self) -> str | None:
        """Why the system counts as gone (not heard for ``limit_s``), else None."""
        if self.left() > 0:
            return None
        return f"Unable to contact the Sluice system for {self.limit_s:g} s: {self._why}"
