"""The end reports of runs that the scheduler has not answered yet.

A run's end report (``ReportJobExit``, or a failed ``ReportProlog``) is answered by the
scheduler's ``TERMINATE`` (the ``KillRun`` every node of a run gets when the run ends). Until
then :class:`EndReports` keeps it, so that the daemon can:

- send it again (:meth:`EndReports.resend_due`): every ``every_s``, at most ``times`` times, as
  slurmd sends its batch completion again until slurmctld answers; a report refused once (an
  expired credential, a dead letter) or lost still ends the run with its real exit code, and a
  report the shard already decided is decided again as one about an ended run: nothing;
- list the run in its heartbeat's ``exited`` (:meth:`EndReports.waiting`), even after the run's
  epilog has run and the node dropped it (a killed run): the shard ends a run listed there that
  it still holds after its grace (``scheduler.nodes.missing_runs``).

An entry ends with the ``TERMINATE``, or one ``every_s`` after its last re-send: the shard has
had its grace by then, and a run it never answers (one it forgot) is not listed for ever.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["EndReports"]

log = logging.getLogger(__name__)

Reporter = Callable[[str, dict[str, Any], dict[str, Any]], None]
"""Sends one report: (record name, the run's LaunchRun, the report's own fields)."""


@dataclass(slots=True)
class _Waiting:
    name: str
    launch: dict[str, Any]
    fields: dict[str, Any]
    sent_at: float  # when it was last sent (monotonic seconds)
    resent: int = 0


class EndReports:
    """End reports waiting for their ``TERMINATE`` (see the module)."""

    def __init__(self, report: Reporter) -> None:
        self._report = report
        self._waiting: dict[str, _Waiting] = {}  # run SLUID → its report, in report order

    def sent(self, run_sluid: str, name: str, launch: dict[str, Any], fields: dict[str, Any],
             now: float) -> None:
        """Send the end report of ``run_sluid`` and keep it until it is answered."""
        self._waiting[run_sluid] = _Waiting(name, launch, fields, now)
        self._report(name, launch, fields)

    def answered(self, run_sluid: str) -> int:
        """The scheduler's ``TERMINATE`` for ``run_sluid`` came; how often its report had been
        sent again (0 also for none waiting)."""
        waiting = self._waiting.pop(run_sluid, None)
        return 0 if waiting is None else waiting.resent

    def waiting(self) -> list[str]:
        """The runs whose end report is not answered yet, in report order."""
        return list(self._waiting)

    def resend_due(self, now: float, every_s: float, times: int) -> list[str]:
        """Send again each report unanswered for ``every_s`` since it was last sent, at most
        ``times`` times; forget one sent ``times`` times once ``every_s`` more has passed.
        Returns the runs whose report was sent again."""
        again: list[str] = []
        for run_sluid, waiting in list(self._waiting.items()):
            if now - waiting.sent_at < every_s:
                continue
            if waiting.resent >= times:
                log.warning("run %s: its %s was sent %d times and never answered: no longer "
                            "listed as exited", run_sluid, waiting.name, times + 1)
                del self._waiting[run_sluid]
                continue
            waiting.sent_at, waiting.resent = now, waiting.resent + 1
            self._report(waiting.name, waiting.launch, waiting.fields)
            again.append(run_sluid)
        return again
