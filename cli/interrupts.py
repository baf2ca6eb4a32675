"""Ctrl-C held back while a command talks to librdkafka.

Python runs a ``SIGINT`` handler between bytecodes, and its default one raises
``KeyboardInterrupt`` there. Inside confluent-kafka's C calls that exception surfaces as
something else: a ``produce`` said ``TypeError: expected header key to be unicode string`` and a
``flush`` ``SystemError: ... returned NULL without setting an exception`` (srun interrupted as
it sent its step: a traceback, and its allocation left running). :func:`deferred_interrupt`
notes a Ctrl-C that comes inside its block and raises the ``KeyboardInterrupt`` when the block
is done, so what was sent is sent whole and the command's own handling of Ctrl-C (cancel the
allocation, say "interrupted") runs as usual. A send waits for the broker at most its flush
timeout, so a Ctrl-C is held back no longer than that.

Only in the main thread while ``SIGINT`` has Python's default handler: a command that handles
it itself (srun's step signals) is left as it is.
"""

from __future__ import annotations

import contextlib
import signal

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on the CLI's path
if TYPE_CHECKING:
    from collections.abc import Iterator
    from types import FrameType

__all__ = ["deferred_interrupt"]


@contextlib.contextmanager
def deferred_interrupt() -> Iterator[None]:
    """Hold a Ctrl-C that comes inside the block until its end (then ``KeyboardInterrupt``)."""
    came: list[int] = []

    def note(signum: int, _frame: FrameType | None) -> None:
        came.append(signum)

    held = signal.getsignal(signal.SIGINT) is signal.default_int_handler
    if held:
        try:
            signal.signal(signal.SIGINT, note)
        except ValueError:  # not the main thread (no ``threading`` import on the CLI's path)
            held = False
    try:
        yield
    finally:
        if held:
            signal.signal(signal.SIGINT, signal.default_int_handler)
    if came:
        raise KeyboardInterrupt
