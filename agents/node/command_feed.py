"""The node daemon's commands, read by a thread and handed to its loop through a self-pipe.

confluent-kafka gives a consumer no file descriptor to wait on (librdkafka's
``rd_kafka_queue_io_event_enable`` is not exposed), so the daemon's loop could only notice a
command by polling the consumer, and the end of a run's supervisor only by polling that. Instead
one thread blocks in ``Consumer.poll`` (which releases the GIL), puts each message it gets on a
bounded queue in the order read, and writes a byte to a pipe; the loop waits in ``selectors``
on that pipe and on the supervisors' pidfds at once (``agents.node.daemon``), and takes the
messages with :meth:`CommandFeed.take`, in order. Nothing but the thread touches the consumer
but its close (below).

The queue is bounded (``limit``): a daemon that falls behind stops the thread's reads, and the
rest waits in librdkafka's fetch queue as before.

A node's partition carries the commands of every node whose key hashes to it (about one in
``SLUICE_PARTITIONS``): the thread reads them in batches and hands on
only those ``keep`` accepts (the daemon's: its key, or a read error); the others would wake
the loop for nothing. Their offsets still reach the loop, in order, as a :class:`Position`
once ``position_every`` were skipped in a row or the partition went quiet after some, so the
daemon's stored offset moves past them without a pass per message. A position does not wake
the loop either: the next pass takes it (the next command of this node, or the heartbeat's
pass at the latest), so a burst of other nodes' commands costs the ~10 daemons sharing the
partition no pass of their own (issue 17); the stored offset lags by at most a heartbeat, and
a daemon restarted meanwhile only reads those other nodes' commands again and skips them.

The thread waits up to ``_POLL_S`` (10 s, as long as the reader's fetch is held at the broker)
in each ``consume()``, and confluent-kafka has no way to wake a waiting ``consume()`` (a
``pause``, ``unassign``, ``incremental_unassign`` or ``seek`` from another thread does not:
tried, issue 17). So :meth:`CommandFeed.stop` does not wait for it: it asks the thread to end,
and whichever of the two comes last (``stop()`` or the thread's end) closes the pipe and hands
the consumer to ``on_end`` (the daemon's: ``close``). A process that exits meanwhile leaves the
consumer to the operating system: it reads by ``assign()``, commits nothing and is in no
group, so the broker has nothing to be told.

A batch is what has arrived once the first message is there: ``consume(1, timeout)`` returns
with the first, then ``consume(64, 0)`` takes what else waits. A single ``consume(64,
timeout)`` waits until 64 have come or the timeout ends (librdkafka's batch call fills its
batch): a lone command waited up to the whole half second before the loop saw it (24-503 ms
measured, against 1-9 ms now; ``streams.clients.ready_messages`` does the same for other
readers).
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["CommandFeed", "Poller", "Position"]

log = logging.getLogger(__name__)

_POLL_S = 10.0
"""The thread's longest wait in ``consume()``. Each empty return costs the thread a wake-up
(70-130 µs of CPU on a crowded machine: the GIL and librdkafka's queue); at 2 s that was 0.07
ms of CPU a second a daemon, 0.45 % of a core for 64 idle daemons (issue 17). ``stop()`` does
not wait for it (the module's docstring)."""
_PUT_WAIT_S = 2.0  # how often a thread held back by a full queue looks at stop()
_BATCH = 64  # messages a consume() call may return


class Poller(Protocol):
    """What the feed needs of a consumer (``Consumer.consume``)."""

    def consume(self, num_messages: int = ..., timeout: float = ...) -> list[Any]:
        ...  # confluent-kafka Messages


@dataclass(frozen=True, slots=True)
class Position:
    """Every message before ``offset`` was read and skipped (none of them is the loop's)."""

    offset: int


class CommandFeed:
    """Messages of one consumer, in order, with a descriptor that is readable while any wait."""

    def __init__(self, reader: Poller, limit: int = 1000, name: str = "commands",
                 keep: Callable[[Any], bool] = lambda _message: True,
                 position_every: int = 1000,
                 on_end: Callable[[], None] = lambda: None,
                 check: Callable[[Any], object] | None = None, check_every_s: float = 60.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._reader, self._keep, self._position_every = reader, keep, position_every
        self._on_end = on_end
        self._check, self._check_every_s, self._clock = check, check_every_s, clock
        self.answered_at = clock()  # the reader's last sign of life (with ``check``)
        self._next_check = self.answered_at + check_every_s
        self._ending = threading.RLock()  # RLock: wake() may come from a signal handler
        self._ended = self._stopped = self._closed = False
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=limit)
        self._wake_r, self._wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._read, name=name, daemon=True)
        self.failure: BaseException | None = None  # what ended the thread, if not stop()

    def start(self) -> None:
        self._thread.start()

    def fileno(self) -> int:
        """Readable once a message waits (or the thread has ended)."""
        return self._wake_r

    def take(self, most: int) -> list[Any]:
        """Up to ``most`` waiting messages and positions, oldest first (never blocks). The
        wake-up byte is drained first, so a message queued meanwhile wakes the loop again."""
        with contextlib.suppress(BlockingIOError):
            while os.read(self._wake_r, 4096):
                pass
        taken: list[Any] = []
        while len(taken) < most:
            try:
                taken.append(self._queue.get_nowait())
            except queue.Empty:
                break
        if taken and not self._queue.empty():
            self.wake()  # more than ``most`` waited: the loop comes back for them
        return taken

    def alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self, wait_s: float = 0.05) -> None:
        """Ask the thread to end and wait for it at most ``wait_s``; the pipe and the consumer
        (``on_end``) are closed now if it has ended, else by the thread when its wait in
        ``consume()`` ends (within ``_POLL_S``)."""
        self._stopping.set()
        with contextlib.suppress(queue.Empty):
            while True:
                self._queue.get_nowait()  # a thread blocked on a full queue goes on
        if self._thread.is_alive():
            self._thread.join(wait_s)
        with self._ending:
            self._stopped = True
            if self._ended or not self._thread.is_alive():
                self._close()

    def _close(self) -> None:
        """Close the pipe and hand the consumer to ``on_end``, once (under ``_ending``)."""
        if self._closed:
            return
        self._closed = True
        for fd in (self._wake_r, self._wake_w):
            with contextlib.suppress(OSError):
                os.close(fd)
        try:
            self._on_end()
        except Exception:  # the consumer's close: nothing is lost by a failed one
            log.exception("closing the command reader failed")

    def _read(self) -> None:
        skipped: int | None = None  # the offset after the last message skipped, not yet told
        count = 0
        waited = True  # the last call waited (and so an empty answer means quiet)
        try:
            while not self._stopping.is_set():
                # back as soon as one is there; after it, what else has come, without waiting
                messages = (self._reader.consume(1, _POLL_S) if waited
                            else self._reader.consume(_BATCH, 0))
                for message in messages:
                    if not self._keep(message):
                        skipped, count = (message.offset() or 0) + 1, count + 1
                        if count >= self._position_every:
                            self._put(Position(skipped), wake=False)
                            skipped, count = None, 0
                        continue
                    skipped, count = None, 0  # the loop stores the offset past this one
                    self._put(message)
                if not messages and waited and skipped is not None:  # quiet: say where it is
                    self._put(Position(skipped), wake=False)
                    skipped, count = None, 0
                waited = not messages
                if self._check is not None:
                    self._answered(messages)
        except Exception as exc:  # the loop sees the thread gone and raises it
            self.failure = exc
            log.exception("the command reader failed")
        finally:
            with self._ending:
                self._ended = True
                if self._stopped:  # stop() came and went: what it left is the thread's
                    self._close()
                else:
                    self.wake()

    def _answered(self, messages: list[Any]) -> None:
        """Keep :attr:`answered_at` (agents.node.link_watch): a message read is a sign of life;
        while none comes, ``check`` (the partition's end asked) once every ``check_every_s``,
        again after 10 s when it got no answer."""
        now = self._clock()
        if any(message.error() is None for message in messages):
            self.answered_at, self._next_check = now, now + self._check_every_s
            return
        if now < self._next_check:
            return
        try:
            self._check(self._reader)  # type: ignore[misc]
        except Exception as exc:  # no answer in time: the watch weighs how long
            log.info("the command reader got no answer from the broker: %s", exc)
            self._next_check = now + min(10.0, self._check_every_s)
            return
        self.answered_at = self._clock()
        self._next_check = self.answered_at + self._check_every_s

    def _put(self, item: Any, wake: bool = True) -> None:  # a Message, or a Position (no wake)
        while not self._stopping.is_set():
            try:
                self._queue.put(item, timeout=_PUT_WAIT_S)
                break
            except queue.Full:
                continue
        if wake:
            self.wake()

    def wake(self) -> None:
        """Make the descriptor readable (also the daemon's stop(), from a signal handler)."""
        with self._ending:
            if self._closed:  # its number may be another file's by now
                return
            with contextlib.suppress(BlockingIOError, OSError):
                os.write(self._wake_w, b"\0")
