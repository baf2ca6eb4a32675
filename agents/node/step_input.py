"""srun's standard input for the tasks one node runs (``--input``, ``--pty``).

srun writes, on the connection the node opened to it (:mod:`agents.node.step_io`), one JSON
message a line::

    {"in": BASE64}              bytes of srun's stdin, for this node's tasks that read it
    {"eof": 1}                  srun's stdin ended: the tasks' pipes are closed (EOF)
    {"winch": [ROWS, COLS]}     srun's terminal changed size (``--pty``)

:class:`StepInput` reads them in a thread and writes the bytes to its own descriptors: the
write ends of the tasks' stdin pipes, or a duplicate of the pseudo-terminal's master under
``--pty`` (a byte the user types is input of the task's terminal; ``^C`` is the terminal's
interrupt there, as Slurm's ``--pty`` has it). It closes them when srun's stdin ends, or
when the connection does (srun gone, the step over). A task that stopped reading (it ended,
or closed its stdin) is dropped; the others are fed on. A line that is not such a message is
ignored: the peer is srun, found at the address the shard signed, and the worst it can do is
feed its own step's tasks.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import fcntl
import json
import logging
import os
import struct
import termios
import threading
from collections.abc import Callable
from typing import IO

from schemas.step_input import input_task

__all__ = ["StepInput", "targets_of"]

log = logging.getLogger(__name__)

_LINE_LIMIT = 1 << 20


def targets_of(mode: str, ranks: range) -> list[int]:
    """The ranks among ``ranks`` (this node's tasks) that read srun's stdin for ``mode``
    (a step's ``input``: "", "none", "all", "pty" or a task id)."""
    if mode == "all":
        return list(ranks)
    if mode == "pty":
        return [0] if 0 in ranks else []
    task = input_task(mode)
    return [task] if task is not None and task in ranks else []


class StepInput:
    """Feeds srun's stdin to this node's tasks of one step (see the module)."""

    def __init__(self, incoming: Callable[[], IO[bytes] | None], fds: list[int],
                 terminal: int | None) -> None:
        """``incoming``: gives the connection's reading end, once connected (None: no srun),
        called in this object's thread; ``fds``: descriptors this object owns and closes
        (pipes' write ends, or a duplicate of the pty's master, which is then ``terminal``
        too)."""
        self._connection, self._fds, self._terminal = incoming, list(fds), terminal
        self._incoming: IO[bytes] | None = None
        self._thread = threading.Thread(target=self._run, name="step-input", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        try:
            self._incoming = self._connection()
            while self._incoming is not None and (line := self._incoming.readline(_LINE_LIMIT)):
                self._handle(line)
        except (OSError, ValueError):
            pass  # the connection ended (srun gone, the step over)
        finally:
            self._close()
            if self._incoming is not None:
                with contextlib.suppress(OSError):
                    self._incoming.close()

    def _handle(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            return
        if not isinstance(message, dict):
            return
        if isinstance(message.get("in"), str):
            with contextlib.suppress(binascii.Error, ValueError):
                self._write(base64.b64decode(message["in"], validate=True))
        elif message.get("eof") == 1 and self._terminal is None:
            self._close()
        elif self._terminal is not None and _size(message.get("winch")) is not None:
            rows, cols = _size(message.get("winch")) or (0, 0)
            with contextlib.suppress(OSError):
                fcntl.ioctl(self._terminal, termios.TIOCSWINSZ,
                            struct.pack("HHHH", rows, cols, 0, 0))

    def _write(self, data: bytes) -> None:
        for fd in list(self._fds):
            view = memoryview(data)
            try:
                while view:
                    view = view[os.write(fd, view):]
            except OSError:  # the task ended or closed its stdin: feed the others
                self._fds.remove(fd)
                with contextlib.suppress(OSError):
                    os.close(fd)

    def _close(self) -> None:
        fds, self._fds = self._fds, []
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)


def _size(value: object) -> tuple[int, int] | None:
    if (isinstance(value, list) and len(value) == 2
            and all(isinstance(v, int) and 0 <= v < 65536 for v in value)):
        return int(value[0]), int(value[1])
    return None
