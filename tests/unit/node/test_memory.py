"""``agents.node.memory``: the heap's free pages go back to the system."""

from __future__ import annotations

import platform

import pytest

from agents.node.memory import TrimSchedule, release_free_memory


def test_freed_heap_pages_are_given_back_on_glibc() -> None:
    if platform.libc_ver()[0] != "glibc":
        pytest.skip("malloc_trim is glibc's")
    held = [bytearray(2000) for _ in range(5000)]  # ~10 MB below the mmap threshold: the heap
    del held
    assert release_free_memory() is True


def test_the_heap_is_trimmed_once_the_node_has_been_idle_a_while_after_work() -> None:
    trim = TrimSchedule(idle_s=1.0)
    assert not trim.after_pass(10.0, worked=False, busy=False)  # the start-up's: in 1 s
    assert trim.at == 11.0
    assert not trim.after_pass(10.5, worked=False, busy=False)
    assert trim.after_pass(11.0, worked=False, busy=False)
    assert trim.at is None and not trim.after_pass(20.0, worked=False, busy=False)  # done

    # jobs back to back: no trim between them, however often the node is idle for a moment
    assert not trim.after_pass(30.0, worked=True, busy=True)  # a launch
    assert not trim.after_pass(30.2, worked=False, busy=False)  # its end: idle, trim at 31.2
    assert not trim.after_pass(30.3, worked=True, busy=False)  # its TERMINATE: at 31.3
    assert not trim.after_pass(30.4, worked=True, busy=True)  # the next launch: not due yet
    assert trim.at is None
    assert not trim.after_pass(30.6, worked=False, busy=False)
    assert not trim.after_pass(31.5, worked=False, busy=False)
    assert trim.after_pass(31.6, worked=False, busy=False)  # idle 1 s since the last work
