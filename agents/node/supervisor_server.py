"""The daemon's end of the supervisor server: supervisors forked, not started as interpreters.

Starting a run's supervisor as its own ``python -I -S`` process costs an interpreter start and
its imports, about 15 ms of CPU a run (``benchmarks/bench_supervisor.py``), more than the rest
of a trivial job's path. A :class:`SupervisorServer` starts one ``agents/node/supervise.py
--server`` per daemon, the first time it is needed, and asks it to fork each supervisor
(:func:`agents.node.supervise.serve`): the same code, in the same isolated interpreter, as
the daemon's user; the command still becomes its owner only in the supervisor's child, after
the fork (``security.md``, "Nodes"). The server is reachable only through a socket pair whose
other end the daemon holds; it ends when the daemon does (the kernel closes that end).

A forked supervisor is the server's child, not the daemon's: the daemon watches it through a
pidfd the server opened before it could reap it, and reads the command's exit status from the
``exit`` line the supervisor writes on its lifeline (``agents.node.supervised``). When the
server cannot serve (it died, a request too large for one message), :meth:`fork` returns None
and the caller starts a supervisor of its own, as before.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from agents.node.helper_path import exec_helper

__all__ = ["SupervisorServer"]

log = logging.getLogger(__name__)

_SUPERVISE = str(Path(__file__).resolve().with_name("supervise.py"))
_SLICE_S = 0.1


class SupervisorServer:
    """One supervisor server for one daemon (started at the first :meth:`fork`)."""

    def __init__(self, home: Path) -> None:
        self._home = home
        self._process: subprocess.Popen[bytes] | None = None
        self._socket: socket.socket | None = None
        self._told = False  # which way commands start, logged at the first server's start

    def fork(self, spec: Mapping[str, object], home: Path, fds: tuple[int, ...],
             timeout_s: float, waiting: Callable[[], None] | None = None,
             ) -> tuple[int, int] | None:
        """Have a supervisor forked for ``spec`` with ``fds`` (lifeline, stdout, stderr[, stdin]);
        returns its pid and a pidfd on it, or None when the server cannot serve. Raises
        OSError when the server took the request and did not answer in ``timeout_s`` (the
        caller closes the lifeline, so a supervisor forked after all kills its command)."""
        message = json.dumps({"home": str(home), "spec": dict(spec)}).encode()
        for _attempt in range(2):
            server = self._ready()
            if server is None:
                return None
            try:
                socket.send_fds(server, [message], list(fds))
            except OSError as exc:
                if exc.errno == errno.EMSGSIZE:
                    return None
                self._drop(f"a request failed: {exc}")
                continue
            return self._answer(server, timeout_s, waiting)
        return None

    def _answer(self, server: socket.socket, timeout_s: float,
                waiting: Callable[[], None] | None) -> tuple[int, int] | None:
        deadline = time.monotonic() + timeout_s
        server.settimeout(_SLICE_S)
        while True:
            try:
                message, fds, _flags, _addr = socket.recv_fds(server, 64, 1)
                break
            except TimeoutError:
                if time.monotonic() >= deadline:
                    self._drop("no answer")
                    raise OSError(errno.ETIMEDOUT, "the supervisor server did not answer") from None
                if waiting is not None:
                    waiting()
            except OSError as exc:
                self._drop(f"its answer failed: {exc}")
                raise
        pid = int(message or b"0")
        if pid <= 0 or len(fds) != 1:
            for fd in fds:
                os.close(fd)
            if not message:
                self._drop("it ended")
                raise OSError(errno.EPIPE, "the supervisor server ended")
            return None
        return pid, fds[0]

    def _ready(self) -> socket.socket | None:
        if self._socket is not None and self._process is not None and self._process.poll() is None:
            return self._socket
        self._drop("")
        if not self._told:
            self._told = True
            helper = exec_helper()
            log.info("runs' commands start through %s", helper or
                     "Python (no exec helper: `make install` builds it; SLUICE_EXEC_HELPER)")
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-I", "-S", _SUPERVISE, "--server"], cwd=self._home,
                stdin=theirs.fileno(), stdout=subprocess.DEVNULL, stderr=None,
                start_new_session=True)
        except OSError as exc:
            ours.close()
            log.warning("the supervisor server could not start: %s", exc)
            return None
        finally:
            theirs.close()
        self._socket = ours
        return ours

    def _drop(self, why: str) -> None:
        if why:
            log.warning("the supervisor server is restarted: %s", why)
        if self._socket is not None:
            self._socket.close()
            self._socket = None
        if self._process is not None:
            try:
                self._process.wait(5)  # it ends at the closed socket
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            self._process = None

    def close(self) -> None:
        """End the server (the supervisors it forked go on: each has its lifeline)."""
        self._drop("")
