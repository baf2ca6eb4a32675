"""The intake in the worker: the intake loop's thread, started and stopped with the app.

``sluice.requests`` is not a faust stream: :class:`~agents.intake_loop.IntakeLoop` reads it in
batches with confluent-kafka on a thread of its own, in a consumer group of its own, and each
partition from the intake's own progress (see that module for the loop, ownership and why no
request is lost or forwarded twice, and :mod:`agents.intake_batch` for what a batch goes
through). This module ties the thread to the faust app's lifecycle, as ``agents.shard_agent``
does for the shard loop (``agents.loop_thread``): started with the app; when the app stops,
the loop finishes its batch and leaves its group first. A
loop that dies of an unexpected error crashes the worker (its supervisor restarts it; the
batch it was on is read again from the progress) rather than leave it running without its
intake.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agents.intake_loop import intake_loop
from agents.loop_thread import install_loop

if TYPE_CHECKING:
    from agents.app import WorkerContext

__all__ = ["install_intake"]


def install_intake(context: WorkerContext, batch_max: int,
                   session_timeout_s: float = 10.0) -> None:
    """Register the intake loop's service on the worker's app."""
    settings, worker_group = context.settings, context.app.conf.id

    install_loop(context.app, "intake", lambda: intake_loop(
        settings, worker_group, batch_max=batch_max, session_timeout_s=session_timeout_s))
