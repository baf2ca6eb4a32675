"""srun's signals while its step runs: passed on to the step's tasks; Ctrl-C as Slurm's srun.

While ``sluice run`` (srun) waits for its step's tasks:

- ``SIGTERM``, ``SIGHUP``, ``SIGQUIT``, ``SIGUSR1``, ``SIGUSR2`` are passed on to the step's
  tasks, on every node still running them: a ``CancelJob`` naming the step with the signal
  (``scancel -s SIG ID.STEP``), which the shard turns into a ``RunSignalled`` for that step;
- one Ctrl-C (``SIGINT``) reports the tasks ("srun: interrupt (one more within 1 sec to
  abort)" and which tasks have exited); a second within one second aborts the step: a
  ``CancelJob`` naming it (``scancel ID.STEP``) ends it ``CANCELLED`` and its nodes kill its
  tasks (``SIGTERM``, then ``SIGKILL`` after the node's grace), as Slurm's srun ends a step
  after two Ctrl-C; with ``--quit-on-interrupt`` the first one does.

The handlers only note what came; the waiting loop sends the requests (no network I/O in a
signal handler).
"""

from __future__ import annotations

import contextlib
import signal
import time
from collections.abc import Iterator
from typing import Any

__all__ = ["FORWARDED", "StepSignals"]

FORWARDED = (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
"""The signals srun passes on to its step's tasks."""
_ABORT_WITHIN_S = 1.0


class StepSignals:
    """What srun received while its step ran, taken by its waiting loop."""

    def __init__(self, quit_on_interrupt: bool = False) -> None:
        self.quit_on_interrupt = quit_on_interrupt
        self.forward: list[int] = []
        """Signals received and not yet passed on, in order."""
        self.report = False
        """A first Ctrl-C came: say how the tasks are."""
        self.abort = False
        """A second Ctrl-C within a second (or one, with ``quit_on_interrupt``): end the step."""
        self.aborted = False
        """The step was aborted (its cancel sent)."""
        self._last_interrupt = -_ABORT_WITHIN_S * 2

    def on_signal(self, signum: int, frame: Any = None) -> None:
        """The handler: note the signal."""
        del frame
        if signum != signal.SIGINT:
            self.forward.append(signum)
            return
        now = time.monotonic()
        if self.quit_on_interrupt or now - self._last_interrupt <= _ABORT_WITHIN_S:
            self.abort = True
        else:
            self.report = True
        self._last_interrupt = now

    @contextlib.contextmanager
    def installed(self) -> Iterator[StepSignals]:
        """Handle ``SIGINT`` and :data:`FORWARDED` inside the block; restore them after."""
        old = {sig: signal.signal(sig, self.on_signal) for sig in (signal.SIGINT, *FORWARDED)}
        try:
            yield self
        finally:
            for sig, handler in old.items():
                signal.signal(sig, handler)
