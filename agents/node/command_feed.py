"""The node daemon's commands, read by a thread and handed to its loop through a self-pipe.

confluent-kafka gives a consumer no file descriptor to wait on (librdkafka's
``rd_kafka_queue_io_event_enable`` is not exposed), so the daemon's loop could only notice a
command by polling the consumer, and the end of a run's supervisor only by polling that. Instead
one thread blocks in ``Consumer.poll`` (which releases the GIL), puts each message it gets on a
bounded queue in the order read, and writes a byte to a pipe; the loop waits in ``selectors``
on that pipe and on the supervisors' pidfds at once (``agents.node.daemon``), and takes the
messages with :meth:`CommandFeed.take`, in order. Nothing but the thread touches the consumer
until :meth:`CommandFeed.stop` has joined it.

The queue is bounded (``limit``): a daemon that falls behind stops the thread's reads, and the
rest waits in librdkafka's fetch queue as before.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import threading
from typing import Any, Protocol

__all__ = ["CommandFeed", "Poller"]

log = logging.getLogger(__name__)

_POLL_S = 0.5  # the thread's longest wait in poll(), and so how soon it sees stop()


class Poller(Protocol):
    """What the feed needs of a consumer (``Consumer.poll``)."""

    def poll(self, timeout: float = ...) -> Any:  # a confluent-kafka Message
        ...


class CommandFeed:
    """Messages of one consumer, in order, with a descriptor that is readable while any wait."""

    def __init__(self, reader: Poller, limit: int = 1000, name: str = "commands") -> None:
        self._reader = reader
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
        """Up to ``most`` waiting messages, oldest first (never blocks). The wake-up byte is
        drained first, so a message queued meanwhile wakes the loop again."""
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
            self._wake()  # more than ``most`` waited: the loop comes back for them
        return taken

    def alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self) -> None:
        """End the thread (within about half a second) and close the pipe; the consumer is the
        caller's again."""
        self._stopping.set()
        with contextlib.suppress(queue.Empty):
            while True:
                self._queue.get_nowait()  # a thread blocked on a full queue goes on
        if self._thread.is_alive():
            self._thread.join()
        for fd in (self._wake_r, self._wake_w):
            with contextlib.suppress(OSError):
                os.close(fd)

    def _read(self) -> None:
        try:
            while not self._stopping.is_set():
                message = self._reader.poll(_POLL_S)
                if message is None:
                    continue
                while not self._stopping.is_set():
                    try:
                        self._queue.put(message, timeout=_POLL_S)
                        break
                    except queue.Full:
                        continue
                self._wake()
        except Exception as exc:  # the loop sees the thread gone and raises it
            self.failure = exc
            log.exception("the command reader failed")
        finally:
            self._wake()

    def _wake(self) -> None:
        with contextlib.suppress(BlockingIOError, OSError):
            os.write(self._wake_w, b"\0")
