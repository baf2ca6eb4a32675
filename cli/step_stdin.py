"""srun's standard input for its step's tasks (``-i``/``--input``, ``--pty``).

srun reads its stdin in a thread and writes it, in chunks, to the nodes whose tasks read it
(:mod:`agents.node.step_input` on the node: ``all`` tasks by default, as Slurm's srun; one task
id; ``none``), then says when it ended. With ``--pty`` task 0 runs in a pseudo-terminal on its
node and srun's terminal is put in raw mode until the step ends: every key goes to the remote
terminal (``^C`` interrupts what runs there, not srun), its output comes back as it is written,
and srun's window size follows (``SIGWINCH``). A terminal srun does not have in the foreground
(``srun … &``) is not read, so srun is not stopped by ``SIGTTIN``.
"""

from __future__ import annotations

import base64
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any

from schemas.step_input import input_task

__all__ = ["input_mode", "raw_terminal", "start_stdin", "write_terminal"]

_CHUNK = 48 * 1024  # 64 KiB of base64 a message
_CONNECT_WAIT_S = 60.0


def input_mode(pty: bool, value: str, ntasks: int | None = None) -> str:
    """The step's ``input`` for srun's ``--pty`` and ``--input`` (ValueError when bad; a task
    id is checked against ``ntasks`` when the step's tasks are known)."""
    if pty:
        if not os.isatty(0):
            raise ValueError("--pty needs a terminal on stdin")
        return "pty"
    mode = value.strip().lower() or "all"
    if mode in ("all", "none"):
        return mode
    task = input_task(mode)
    if task is not None and (ntasks is None or task < ntasks):
        return str(task)
    raise ValueError(f"--input={value}: all, none or a task id"
                     + (f" below {ntasks}" if ntasks is not None else ""))


def start_stdin(server: Any, mode: str, nodes: list[str], counts: list[int]) -> None:
    """Feed srun's stdin to the nodes of the tasks that read it (``mode``), in a thread."""
    targets = _nodes_of(mode, nodes, counts)
    if not targets or (os.isatty(0) and not _foreground()):
        return
    if mode == "pty":
        _follow_window(server, targets[0])
    threading.Thread(target=_pump, args=(server, targets, mode == "pty"), name="srun-stdin",
                     daemon=True).start()


def _nodes_of(mode: str, nodes: list[str], counts: list[int]) -> list[str]:
    if mode == "all":
        return list(nodes)
    if mode == "none" or not nodes:
        return []
    rank = 0 if mode == "pty" else input_task(mode)
    if rank is None:
        return []
    for node, count in zip(nodes, counts, strict=True):
        if rank < count:
            return [node]
        rank -= count
    return []


def _pump(server: Any, targets: list[str], terminal: bool) -> None:
    live = list(targets)
    while live:
        try:
            chunk = os.read(0, _CHUNK)
        except OSError:
            chunk = b""
        if not chunk:
            break
        message = {"in": base64.b64encode(chunk).decode()}
        live = [node for node in live if server.send(node, message, _CONNECT_WAIT_S)]
    if not terminal:
        for node in live:
            server.send(node, {"eof": 1}, _CONNECT_WAIT_S)


def _follow_window(server: Any, node: str) -> None:
    """Send the terminal's size now (once the node is there) and at each ``SIGWINCH``."""

    def send_size() -> None:
        with contextlib.suppress(OSError):
            size = os.get_terminal_size(0)
            server.send(node, {"winch": [size.lines, size.columns]}, _CONNECT_WAIT_S)

    threading.Thread(target=send_size, daemon=True).start()
    with contextlib.suppress(ValueError):  # not the main thread (tests calling in process)
        signal.signal(signal.SIGWINCH,
                      lambda *_: threading.Thread(target=send_size, daemon=True).start())


def _foreground() -> bool:
    try:
        return os.tcgetpgrp(0) == os.getpgrp()
    except OSError:
        return False


@contextlib.contextmanager
def raw_terminal(active: bool) -> Iterator[None]:
    """srun's terminal in raw mode while a ``--pty`` step runs (restored after, whatever
    happens); nothing when not ``active``."""
    if not active:
        yield
        return
    import termios  # only --pty needs them
    import tty

    saved = termios.tcgetattr(0)
    tty.setraw(0, termios.TCSANOW)  # not setraw's default TCSAFLUSH: what the user typed
    # before the step started (a line typed ahead at a slow start) must reach the shell
    try:
        yield
    finally:
        termios.tcsetattr(0, termios.TCSADRAIN, saved)
        sys.stdout.flush()


def write_terminal(data: bytes) -> None:
    """Bytes of the remote terminal, as they come."""
    out = sys.stdout.buffer
    out.write(data)
    out.flush()


