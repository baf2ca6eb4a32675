"""``agents.node.memory``: the heap's free pages go back to the system."""

from __future__ import annotations

import platform

import pytest

from agents.node.memory import release_free_memory


def test_freed_heap_pages_are_given_back_on_glibc() -> None:
    if platform.libc_ver()[0] != "glibc":
        pytest.skip("malloc_trim is glibc's")
    held = [bytearray(2000) for _ in range(5000)]  # ~10 MB below the mmap threshold: the heap
    del held
    assert release_free_memory() is True
