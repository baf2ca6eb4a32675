"""The intake in the worker: the intake loop's thread, started and stopped with the app.

``sluice.requests`` is not a faust stream: :class:`~agents.intake_loop.IntakeLoop` reads it in
batches with confluent-kafka on a thread of its own, in a consumer group of its own, and each
partition from the intake's own progress (see that module for the loop, ownership and why no
request is lost or forwarded twice, and :mod:`agents.intake_batch` for what a batch goes
through). This module ties the thread to the faust app's lifecycle, as ``agents.shard_agent``
does for the shard loop: a ``mode.Service`` starts it when the app has started and, when the
app stops, asks it to stop and waits until it has finished its batch and left its group. A
loop that dies of an unexpected error crashes the worker (its supervisor restarts it; the
batch it was on is read again from the progress) rather than leave it running without its
intake.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import TYPE_CHECKING, Any

from mode import Service

from agents.intake_loop import intake_loop

if TYPE_CHECKING:
    from agents.app import WorkerContext

__all__ = ["install_intake"]

log = logging.getLogger(__name__)


def install_intake(context: WorkerContext, batch_max: int,
                   session_timeout_s: float = 10.0) -> None:
    """Register the intake loop's service on the worker's app."""
    settings, worker_group = context.settings, context.app.conf.id

    @context.app.service
    class Intake(Service):
        """The intake loop's thread as a service of the app."""

        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.loop_state = intake_loop(settings, worker_group, batch_max=batch_max,
                                          session_timeout_s=session_timeout_s)
            self._thread: threading.Thread | None = None

        async def on_start(self) -> None:
            loop = asyncio.get_running_loop()

            def run() -> None:
                try:
                    self.loop_state.run()
                except BaseException as exc:
                    if not self.loop_state.stopping.is_set():
                        log.exception("the intake loop failed; the worker stops")
                        asyncio.run_coroutine_threadsafe(self.crash(exc), loop)

            self._thread = threading.Thread(target=run, name="intake", daemon=True)
            self._thread.start()

        async def on_stop(self) -> None:
            self.loop_state.stopping.set()
            thread = self._thread
            if thread is not None:
                await asyncio.get_running_loop().run_in_executor(None, thread.join, 60)
