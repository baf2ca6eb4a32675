"""The daemon's side of a supervised process: start it, watch it, signal the whole run.

:meth:`Supervised.start` hands the command to a new ``agents.node.supervise`` process (see its
docstring) and keeps the daemon's end of the lifeline socket: the kernel closes it when the
daemon dies, and the supervisor then kills the run; with a ``fence_s``, :meth:`Supervised.feed`
writes a line on it as heartbeats are delivered, carrying the run's lease (``agents.node.fence``),
and a lifeline silent for ``fence_s``, or a lease run out (a stopped daemon, or one cut off from
the broker), makes the supervisor kill the run too. To the run
table a :class:`Supervised` looks like a ``Popen`` of the command itself: ``poll()`` returns
the command's exit code, or minus the signal that killed it, and :meth:`Supervised.fileno` is
a pidfd on the supervisor, readable once it has ended, for the daemon's loop to wait on.

Started with ``await_start=False``, :meth:`Supervised.start` returns as soon as the supervisor
exists, and the daemon's loop learns the outcome from :meth:`Supervised.start_outcome` when the
lifeline becomes readable (:meth:`Supervised.lifeline_fileno`): the supervisor's child enters
the working directory and opens the output files before it says ``started``, and a path on a
hung mount (NFS, FUSE) blocks that child, never the daemon (docs/node-daemon.md, "A hung
mount").
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING

from agents.node.proctrack import RunScope, signal_child

if TYPE_CHECKING:
    from agents.node.supervisor_server import SupervisorServer

__all__ = ["Supervised"]

_SUPERVISE = str(Path(__file__).resolve().with_name("supervise.py"))
# -I: no environment variables, no user site, no current directory on the path (the job's
# working directory must not supply our imports); -S: no site-packages (standard library only).
_INTERPRETER = (sys.executable, "-I", "-S")
_SLICE_S = 0.1


class Supervised:
    """One command of a run under its supervisor (started by the daemon, or forked by its
    supervisor server: ``agents.node.supervisor_server``)."""

    def __init__(self, process: subprocess.Popen[bytes] | None, lifeline: socket.socket,
                 scope: RunScope, pid: int = 0, pidfd: int | None = None) -> None:
        self._process, self._lifeline, self.scope = process, lifeline, scope
        # the run's fence horizon (agents.node.fence.run_horizon_s): added to every lease fed;
        # None: never fenced (no lease, no silence limit)
        self._horizon: float | None = 0.0
        self._said = b""  # the supervisor's first line
        self._pid = process.pid if process is not None else pid
        self._pidfd = _pidfd(self._pid) if process is not None else pidfd
        self._code: int | None = None  # the command's, once the supervisor has ended

    @classmethod
    def start(
        cls, scope: RunScope, argv: Sequence[str], env: Mapping[str, str], cwd: Path,
        stdout: IO[bytes] | int | None, stderr: IO[bytes] | int | None, home: Path,
        ready_timeout_s: float = 30.0, waiting: Callable[[], None] | None = None,
        owner: Mapping[str, object] | None = None, output: tuple[str, str] = ("", ""),
        server: SupervisorServer | None = None, stdin: int | None = None, tty: bool = False,
        fence_s: float = 0.0, await_start: bool = True, lease_s: float | None = None,
        horizon_s: float | None = 0.0,
    ) -> Supervised:
        """Start ``argv`` under a supervisor; returns once the command runs, or raises the
        OSError that kept it (or the supervisor) from starting.

        ``owner`` (``uid``, ``gid``, ``groups``): the command runs as that user, who enters
        ``cwd`` and opens the ``output`` paths (stdout, stderr; "" = the supervisor's own
        ``stdout``/``stderr``; stderr "" with a stdout path = with stdout) after the switch.
        ``server``: the supervisor is forked by it where it can (else started here).
        ``stdin``: a descriptor the command reads instead of ``/dev/null`` (the caller keeps
        and closes its own); ``tty``: it is a pseudo-terminal's, made the command's
        controlling terminal. ``fence_s``: the supervisor kills the run when the lifeline is
        not fed (:meth:`feed`) for that long (0: only when it closes), or when its lease
        (``lease_s`` at the start, then each feed's) runs out first. ``horizon_s``: the run's
        fence horizon (``agents.node.fence.run_horizon_s``), added to both — None: the run is
        never fenced, only the lifeline's close kills it. ``await_start`` False:
        return without waiting for the command to start (:meth:`start_outcome` says later)."""
        if horizon_s is None:
            fence_s, lease_s = 0.0, None
        else:
            fence_s = fence_s + horizon_s if fence_s > 0 else 0.0
            lease_s = None if lease_s is None else lease_s + horizon_s
        ours, theirs = socket.socketpair()
        spec = {
            "argv": list(argv), "env": dict(env), "cwd": str(cwd), "run_sluid": scope.run_sluid,
            "cgroup": str(scope.cgroup or ""), "cgroup_name": scope.cgroup_name,
            "lifeline": theirs.fileno(), "user": dict(owner) if owner else None,
            "stdout": output[0], "stderr": output[1], "fence_s": fence_s,
        }
        if lease_s is not None:
            spec["lease_s"] = lease_s
        if stdin is not None:
            spec.update(stdin_fd=stdin, tty=tty)
        try:
            forked = None if server is None else _fork(server, spec, home, theirs.fileno(),
                                                       stdout, stderr, ready_timeout_s, waiting,
                                                       stdin)
            if forked is not None:
                supervised = cls(None, ours, scope, *forked)
            else:
                supervised = cls(_popen(spec, home, theirs.fileno(), stdout, stderr), ours,
                                 scope)
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        supervised._horizon = horizon_s
        if await_start:
            supervised._await_start(ready_timeout_s, waiting)
        else:
            supervised._lifeline.setblocking(False)
        return supervised

    def lifeline_fileno(self) -> int | None:
        """The lifeline's descriptor (readable when the supervisor says something), or None."""
        fileno = self._lifeline.fileno()
        return fileno if fileno >= 0 else None

    def start_outcome(self) -> OSError | bool | None:
        """Without waiting: True once the supervisor said the command started, the OSError
        that kept it from starting once it said so (or ended silent), None while it says
        nothing yet (its child may be blocked in a hung working directory or output path)."""
        self._read_first_line()
        if b"\n" not in self._said:
            if not self._ended(0):
                return None
            # Read again: between the read above and that check, a quick command may have
            # started and ended, and its supervisor with it, all it said still unread.
            self._read_first_line()
        line = self._said.partition(b"\n")[0].decode(errors="replace")
        if b"\n" not in self._said:
            return OSError("the run's supervisor ended before starting it (silent)")
        if line.startswith("started "):
            return True
        if not line.startswith("error "):
            return OSError(f"the run's supervisor ended before starting it ({line})")
        return _start_error(line)

    def _read_first_line(self) -> None:
        """Read what the supervisor has said, without waiting, up to its first line."""
        if b"\n" in self._said or self._lifeline.fileno() < 0:
            return
        with contextlib.suppress(BlockingIOError, InterruptedError):
            while chunk := self._lifeline.recv(4096):
                self._said += chunk
                if b"\n" in self._said:
                    break

    def _await_start(self, timeout_s: float, waiting: Callable[[], None] | None) -> None:
        """Wait for the supervisor's first line: the command runs, or why it could not start
        (raised as the OSError the supervisor met). ``waiting`` is called every 0.1 s meanwhile
        (the daemon heartbeats); past ``timeout_s`` (a loaded host) the command is taken as
        starting, and ``poll()`` reports its end."""
        deadline = time.monotonic() + timeout_s
        self._lifeline.settimeout(_SLICE_S)
        while b"\n" not in self._said and time.monotonic() < deadline:
            try:
                chunk = self._lifeline.recv(4096)
            except TimeoutError:
                if waiting is not None:
                    waiting()
                continue
            except OSError:
                break
            if not chunk:
                break
            self._said += chunk
        self._lifeline.setblocking(False)
        line = self._said.partition(b"\n")[0].decode(errors="replace")
        if line.startswith("started ") or (not line and not self._ended(0)):
            return
        if not self._ended(timeout_s):
            return
        self._read_first_line()  # what it said between the last read and its end
        line = self._said.partition(b"\n")[0].decode(errors="replace")
        if line.startswith("started "):
            return
        self._lifeline.close()
        self._close_pidfd()
        if self._process is not None:
            self._process.wait()
        if not line.startswith("error "):
            raise OSError(f"the run's supervisor ended before starting it ({line or 'silent'})")
        raise _start_error(line)

    def feed(self, lease_s: float | None = None) -> None:
        """Tell the supervisor the daemon is alive (a line on the lifeline; every heartbeat),
        with the seconds the daemon's lease has left (``agents.node.fence``) if given, to which
        the supervisor's lease adds the run's fence horizon (none for a run never fenced)."""
        if self._lifeline.fileno() < 0:
            return
        if lease_s is not None:
            lease_s = None if self._horizon is None else lease_s + self._horizon
        # in whole milliseconds, rounded up: the supervisor's deadline is never before the
        # daemon's, which marks the runs fenced when it passes (agents.node.fence)
        line = b"\n" if lease_s is None else f"{math.ceil(lease_s * 1000) / 1000:.3f}\n".encode()
        with contextlib.suppress(OSError):  # full (it reads them), or the supervisor is gone
            self._lifeline.send(line)

    def fileno(self) -> int | None:
        """A pidfd on the supervisor: readable once it has ended, when :meth:`poll` returns its
        code (None where the kernel has no pidfd, before Linux 5.3, or once it was collected)."""
        return self._pidfd

    @property
    def pid(self) -> int:
        """The supervisor's pid."""
        return self._pid

    def poll(self) -> int | None:
        """The command's exit code (minus its signal), None while the run is still alive."""
        if self._code is None and self._ended(0):
            self._code = self._end_code()
        return self._code

    def wait(self, timeout_s: float) -> int:
        """Wait for the end (``subprocess.TimeoutExpired`` after ``timeout_s``)."""
        if self._code is None:
            if not self._ended(timeout_s):
                raise subprocess.TimeoutExpired(f"supervisor {self._pid}", timeout_s)
            self._code = self._end_code()
        return self._code

    def _ended(self, timeout_s: float) -> bool:
        """Whether the supervisor has ended (waiting up to ``timeout_s``)."""
        if self._process is not None:
            if timeout_s <= 0:
                return self._process.poll() is not None
            try:
                self._process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                return False
            return True
        if self._pidfd is None:
            return True
        poller = select.poll()
        poller.register(self._pidfd, select.POLLIN)
        return bool(poller.poll(math.ceil(timeout_s * 1000)))

    def _end_code(self) -> int:
        """The command's status once the supervisor has ended: a supervisor the daemon started
        exits like its command; a forked one says it on the lifeline (``exit N``), and one that
        ended without saying was killed (SIGKILL)."""
        self._collect()
        if self._process is not None:
            code = self._process.poll()
            return code if code is not None else -signal.SIGKILL
        for line in self._said.split(b"\n"):
            if line.startswith(b"exit ") and line[5:].lstrip(b"-").isdigit():
                return int(line[5:])
        return -signal.SIGKILL

    def signal(self, sig: int) -> int:
        """Send ``sig`` to every process of the run (not the supervisor); returns how many."""
        root = self._pid if self._code is None else None
        count = self.scope.signal(sig, root)
        if count == 0 and root is not None:
            # The command has not started yet: the supervisor forwards a SIGTERM to it once it
            # has (a SIGKILL is repeated by the caller until the supervisor ends).
            with contextlib.suppress(ProcessLookupError, OSError):
                if self._pidfd is not None:
                    signal.pidfd_send_signal(self._pidfd, signal.SIGTERM)
                else:
                    os.kill(root, signal.SIGTERM)
        return count

    def signal_command(self, sig: int) -> bool:
        """Send ``sig`` to the command alone (a batch shell: not its children), while the
        supervisor runs it; the pid is the one its supervisor announced (``started <pid>``)
        and must still be the supervisor's child (:func:`~agents.node.proctrack.signal_child`).
        True if it was sent."""
        if self._code is not None or self.poll() is not None:
            return False
        if self.start_outcome() is not True:  # reads the first line if it came meanwhile
            return False
        line = self._said.partition(b"\n")[0]
        if not line.startswith(b"started ") or not line[8:].strip().isdigit():
            return False
        return signal_child(int(line[8:].strip()), self._pid, sig)

    @property
    def clean(self) -> bool:
        """Whether the supervisor ended saying nothing of the run is left (after the end): its
        ``done``, or a command that never started (``error``, then ``exit``: the process that
        failed before its exec was reaped, and started nothing). A run that is not clean is
        swept by marker in the daemon's loop, reading the owner's environments: any user's
        ``sbatch -D /nonexistent`` made that sweep, which her 1,000 processes sharing a 1.8 MB
        environment stretched to 12.7 s (red team, 7 Dec 2026: the node went DOWN)."""
        said = self._said
        return b"\ndone\n" in said or (said.startswith(b"error ") and b"\nexit " in said)

    def _close_pidfd(self) -> None:
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None

    def _collect(self) -> None:
        self._close_pidfd()
        if self._lifeline.fileno() < 0:
            return
        with contextlib.suppress(OSError):
            while len(self._said) < 65536 and (chunk := self._lifeline.recv(4096)):
                self._said += chunk
        self._lifeline.close()


def _popen(spec: dict[str, object], home: Path, lifeline: int,
           stdout: IO[bytes] | int | None, stderr: IO[bytes] | int | None,
           ) -> subprocess.Popen[bytes]:  # spec's stdin_fd, if any, is kept at its number
    """A supervisor of the daemon's own: an interpreter reading the spec on stdin."""
    spec_fd = os.memfd_create("sluice-run-spec", os.MFD_CLOEXEC)
    try:
        with open(spec_fd, "wb", closefd=False) as handle:
            handle.write(json.dumps(spec).encode())
        os.lseek(spec_fd, 0, os.SEEK_SET)
        return subprocess.Popen(
            [*_INTERPRETER, _SUPERVISE, str(spec["run_sluid"])],
            cwd=home, stdin=spec_fd, stdout=stdout, stderr=stderr,
            pass_fds=(lifeline, *([int(str(spec["stdin_fd"]))] if "stdin_fd" in spec else [])),
            start_new_session=True,
        )
    finally:
        os.close(spec_fd)


def _fork(server: SupervisorServer, spec: dict[str, object], home: Path, lifeline: int,
          stdout: IO[bytes] | int | None, stderr: IO[bytes] | int | None, timeout_s: float,
          waiting: Callable[[], None] | None, stdin: int | None = None,
          ) -> tuple[int, int] | None:
    """A supervisor forked by ``server``: (pid, pidfd), or None when it cannot serve."""
    opened: list[int] = []

    def fd_of(target: IO[bytes] | int | None, default: int) -> int:
        if target is None:
            return default
        if target == subprocess.DEVNULL:
            opened.append(os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC))
            return opened[-1]
        if isinstance(target, int):
            if target < 0:
                raise ValueError(f"unsupported output {target}")
            return target
        return target.fileno()

    try:
        fds = (lifeline, fd_of(stdout, 1), fd_of(stderr, 2), *([] if stdin is None else [stdin]))
        return server.fork(spec, home, fds, timeout_s, waiting)
    finally:
        for fd in opened:
            os.close(fd)


def _start_error(line: str) -> OSError:
    """The OSError of a supervisor's ``error <errno> <filename>\\0<reason>`` line."""
    head, _, reason = line[6:].partition("\0")
    number, _, filename = head.partition(" ")
    if number.isdigit() and int(number):
        return OSError(int(number), reason, *([filename] if filename else []))
    return OSError(reason)


def _pidfd(pid: int) -> int | None:
    """A pidfd on our own unreaped child ``pid`` (its number cannot be reused), or None."""
    try:
        fd = os.pidfd_open(pid)
    except (OSError, AttributeError):  # ENOSYS before Linux 5.3; no os.pidfd_open off Linux
        return None
    return fd
