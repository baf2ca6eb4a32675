"""A Ctrl-C inside a send is held until the send is done (cli/interrupts.py): inside
confluent-kafka's C calls the ``KeyboardInterrupt`` surfaced as a ``TypeError`` or a
``SystemError`` (srun interrupted as it sent its step printed a traceback)."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator

import pytest

from cli.interrupts import deferred_interrupt


@pytest.fixture(autouse=True)
def _python_handles_ctrl_c() -> Iterator[None]:
    """Python's own SIGINT handler, as in a command run from a terminal (a process started in
    the background by a non-interactive shell, as CI's pytest is, inherits SIGINT ignored)."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, old)


def test_an_ignored_ctrl_c_stays_ignored() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with deferred_interrupt():
        os.kill(os.getpid(), signal.SIGINT)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN


def test_a_ctrl_c_inside_the_block_is_raised_at_its_end() -> None:
    done = []
    with pytest.raises(KeyboardInterrupt), deferred_interrupt():
        os.kill(os.getpid(), signal.SIGINT)
        done.append("the rest of the block ran")
    assert done == ["the rest of the block ran"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_block_without_ctrl_c_raises_nothing_and_restores_the_handler() -> None:
    with deferred_interrupt():
        pass
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_an_error_inside_the_block_is_raised_as_it_is() -> None:
    with pytest.raises(ValueError, match="bad"), deferred_interrupt():
        raise ValueError("bad")
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_command_that_handles_ctrl_c_itself_is_left_alone() -> None:
    came: list[int] = []
    old = signal.signal(signal.SIGINT, lambda signum, _frame: came.append(signum))
    try:
        with deferred_interrupt():
            assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler
            os.kill(os.getpid(), signal.SIGINT)
        assert came == [signal.SIGINT]
    finally:
        signal.signal(signal.SIGINT, old)


def test_another_thread_changes_no_handler() -> None:
    seen: list[object] = []

    def other() -> None:
        with deferred_interrupt():
            seen.append(signal.getsignal(signal.SIGINT))

    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    assert seen == [signal.default_int_handler]
