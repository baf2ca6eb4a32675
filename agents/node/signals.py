"""``SignalRun`` on a node: a signal to a run's processes (scancel -s, sbatch --signal).

The daemon checks the command like every other (signature, expiry, replay: docs/security.md)
and hands it to :meth:`RunSignals.deliver`, which sends the signal, once per ``signal_sluid``
(the ``RunSignalled`` fact the command was derived from), to the scope's processes **on this
node**; the run is not killed and nothing is reported (Slurm's scancel answers once the signal
is sent, not when it is handled):

- ``BATCH``: the batch shell alone, on the batch host; not its children, not the steps
  (``scancel -b``, ``--signal=B:``);
- ``STEPS``: every process of every task of the run's steps (srun) here; not the batch shell
  (scancel's default, ``--signal`` without ``B:``);
- ``FULL``: the batch shell, every process of the batch step and every step's tasks here
  (``scancel -f``);
- a command naming a step (``step_sluid``: ``scancel -s SIG ID.STEP``, srun passing a signal
  on): that step's tasks here alone, whatever the scope.

Processes are found as a kill finds them (:mod:`agents.node.proctrack`): the batch shell is the
pid its supervisor announced, signalled only while it is still that supervisor's child; the
scopes' processes are re-checked through a pidfd, so a reused pid is never hit. A supervisor
is never signalled. A run this node does not run (or is killing), or a step being killed, gets
nothing. Where the daemon ran processes without the batch step of a job (a non-batch node of
the run), ``BATCH`` sends nothing there.
"""

from __future__ import annotations

import logging
from typing import Any, Final

from agents.node.proctrack import RunScope, safe_name, signal_scopes
from agents.node.runs import RunTable
from agents.node.steps import StepTable

__all__ = ["SCOPES", "RunSignals"]

log = logging.getLogger(__name__)

SCOPES: Final = frozenset({"STEPS", "BATCH", "FULL"})
_SEEN_LIMIT = 10_000


class RunSignals:
    """Delivers the ``SignalRun`` commands of one node."""

    def __init__(self, node: str, runs: RunTable, steps: StepTable) -> None:
        self.node, self.runs, self.steps = node, runs, steps
        self._seen: dict[str, None] = {}  # signal SLUIDs delivered (insertion-ordered, bounded)

    def deliver(self, record: dict[str, Any]) -> int:
        """Send the command's signal to its scope here; returns how many processes got it."""
        run_sluid, sig = str(record.get("run_sluid", "")), int(record.get("signal") or 0)
        scope, once = str(record.get("scope", "")), str(record.get("signal_sluid", ""))
        if not safe_name(run_sluid) or not 1 <= sig <= 64 or scope not in SCOPES:
            log.error("node %s: ignoring an unusable SignalRun (run %r, signal %r, scope %r)",
                      self.node, run_sluid[:80], sig, scope[:16])
            return 0
        if once and once in self._seen:
            return 0
        if once:
            self._seen[once] = None
            if len(self._seen) > _SEEN_LIMIT:
                self._seen.pop(next(iter(self._seen)))
        step = str(record.get("step_sluid") or "")
        sent = self._send(run_sluid, sig, scope, step)
        log.info("node %s: signal %d (%s) to run %s%s: %d process(es)", self.node, sig, scope,
                 run_sluid, f" step {step}" if step else "", sent)
        return sent

    def _send(self, run_sluid: str, sig: int, scope: str, step: str) -> int:
        if step:  # one step's tasks alone, whatever the scope
            return signal_scopes(sig, [(task.scope, task.pid)
                                       for task in self.steps.live_tasks(run_sluid, step)])
        batch = self.runs.batch_process(run_sluid)
        if scope == "BATCH":
            return int(batch is not None and batch.signal_command(sig))
        scopes: list[tuple[RunScope, int | None]] = [
            (task.scope, task.pid) for task in self.steps.live_tasks(run_sluid)]
        if scope == "FULL" and batch is not None and batch.poll() is None:
            scopes.append((batch.scope, batch.pid))
        return signal_scopes(sig, scopes)
