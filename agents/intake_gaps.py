"""The intake's batches completed against its progress: nothing handled twice, nothing skipped.

The intake's consumer starts each partition at the intake's progress, but may start at its
group's committed offset, a hint, when the progress cannot be read (``agents.intake_loop``);
and the intake used to be fed by faust, which acknowledged records it never delivered. So for
each batch the intake is handed, :class:`IntakeGaps` compares every requests partition's
records with the next offset the intake expects there (:mod:`agents.intake_progress`), as
:func:`agents.offset_gaps.plan_partition` says: records below it were forwarded before (a start
from a hint behind the progress) and are dropped; offsets skipped before a record are read
directly (:mod:`agents.gap_reader`) and handled first, in offset order, as if the consumer had
delivered them. A gap that cannot be read (:class:`agents.gap_reader.GapUnreadableError`)
becomes one dead letter naming its offsets, so the intake never stalls on it.

Once the batch is durable the intake records the new offsets (:meth:`IntakeGaps.done`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from confluent_kafka import KafkaException

from agents.fetch_guard import UnreadableBatch
from agents.forwarding import Outgoing, dead_letter
from agents.gap_reader import GapRecord, GapUnreadableError
from agents.intake_progress import IntakeProgress
from agents.offset_gaps import Gap, Take, plan_partition

__all__ = ["Completed", "IntakeGaps", "span_of"]

log = logging.getLogger(__name__)

_MAX_PAUSE_S = 5.0
"""The longest pause between two tries to read the intake's progress."""

GapRead = Callable[[int, int, int], Iterable[GapRecord]]
"""Reads ``(partition, first, end)`` of the requests topic."""
Completed = tuple[list[Any], list[Outgoing], dict[int, int]]
"""The messages to handle, the dead letters for unreadable gaps, the offsets after the batch."""


def span_of(message: Any) -> tuple[int, int]:
    """The offsets a message stands for: one, or an unreadable batch's first..last."""
    value = message.value
    if isinstance(value, UnreadableBatch):
        return value.first, value.last
    return message.offset, message.offset


class IntakeGaps:
    """Fills the gaps of the intake's batches and drops what was handled before."""

    def __init__(self, progress: IntakeProgress, read: GapRead, topic: str,
                 dead_letters: str) -> None:
        self.progress, self.read = progress, read
        self.topic, self.dead_letters = topic, dead_letters

    async def complete(self, messages: Sequence[Any]) -> Completed:
        """:meth:`complete_now`, off the event loop (it reads and waits on the broker). While
        the progress group cannot be read (a broker outage) it is tried again, with a growing
        pause: the batch waits, pinned, as a forward waits for the broker; nothing is lost."""
        ready = self.complete_cached(messages)
        if ready is not None:
            return ready
        loop = asyncio.get_running_loop()
        pause = 0.5
        while True:
            try:
                return await loop.run_in_executor(None, self.complete_now, list(messages))
            except (KafkaException, TimeoutError) as exc:
                log.warning("intake: the progress of %s cannot be read (%s); again in %.1f s",
                            self.topic, exc, pause)
                await asyncio.sleep(pause)
                pause = min(pause * 2, _MAX_PAUSE_S)

    def complete_cached(self, messages: Sequence[Any]) -> Completed | None:
        """:meth:`complete_now` on the event loop, when it needs nothing from the broker:
        every partition's progress is cached and the batch skips no offset (the usual batch;
        a hop to a thread and back was on the path of every request). None otherwise."""
        by_partition: dict[int, list[Any]] = {}
        for message in messages:
            by_partition.setdefault(message.partition, []).append(message)
        out: list[Any] = []
        after: dict[int, int] = {}
        for partition, records in by_partition.items():
            expected = self.progress.cached(partition)
            if expected is None:
                return None
            plan = plan_partition(expected, [span_of(m) for m in records])
            taken = [records[step.index] for step in plan.steps if isinstance(step, Take)]
            if plan.dropped or len(taken) != len(plan.steps):
                return None  # logged, and the gaps read, by complete_now
            out.extend(taken)
            after[partition] = plan.next_offset
        return out, [], after

    def complete_now(self, messages: Sequence[Any]) -> Completed:
        """The batch with its gaps read in and its redeliveries dropped (blocking)."""
        by_partition: dict[int, list[Any]] = {}
        for message in messages:
            by_partition.setdefault(message.partition, []).append(message)
        out: list[Any] = []
        letters: list[Outgoing] = []
        after: dict[int, int] = {}
        for partition, records in by_partition.items():
            plan = plan_partition(self.progress.expected(partition),
                                  [span_of(m) for m in records])
            if plan.dropped:
                log.warning("intake: %d records of %s[%d] were forwarded before; dropped",
                            plan.dropped, self.topic, partition)
            for step in plan.steps:
                if isinstance(step, Gap):
                    read, letter = self._read_gap(partition, step)
                    out.extend(read)
                    if letter is not None:
                        letters.append(letter)
                else:
                    out.append(records[step.index])
            after[partition] = plan.next_offset
        return out, letters, after

    async def done(self, after: dict[int, int]) -> None:
        """Record that everything below ``after[p]`` is handled (a failure only logs)."""
        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(None, self.progress.done, after)
        except Exception:  # the records are durable; a later owner may forward them again
            log.exception("intake: could not record progress %s", after)

    def _read_gap(self, partition: int, gap: Gap) -> tuple[list[GapRecord], Outgoing | None]:
        found: list[GapRecord] = []
        try:
            found.extend(self.read(partition, gap.first, gap.end))
        except GapUnreadableError as exc:
            log.error("intake: %s", exc)
            return found, dead_letter(
                self.dead_letters, source_topic=self.topic, partition=partition,
                offset=exc.at, key=None, value=b"", error=f"GapUnreadable: {exc}")
        log.warning("intake: %s[%d] offsets %d..%d were skipped by the consumer; read %d "
                    "records directly", self.topic, partition, gap.first, gap.end - 1,
                    len(found))
        return found, None
