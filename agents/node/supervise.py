"""``python -I -S agents/node/supervise.py RUN_SLUID``: the keeper of one process of a run.

The node daemon starts one per process it runs for a run (prolog, batch command, epilog), in
a session of its own (so a signal to the daemon's process group does not reach it), with a
spec on stdin (JSON: ``argv``, ``env``, ``cwd``, ``run_sluid``, ``cgroup``, ``cgroup_name``,
``lifeline``, and for a job ``user`` = ``{uid, gid, groups}`` and the ``stdout``/``stderr``
paths). It

1. makes itself a child subreaper (``PR_SET_CHILD_SUBREAPER``): every process the command
   starts, however it forks or ``setsid()``\\ s, is re-parented to it and never to init;
2. starts the command in a new session (inside the run's cgroup, if it has one), stdin
   ``/dev/null`` (or the descriptor ``stdin_fd`` of the spec: a step's tasks fed by srun; with
   ``tty``, a pseudo-terminal that becomes the session's controlling terminal), with
   ``PR_SET_PDEATHSIG`` (SIGKILL) on the command itself; for a job, the
   child switches to the owner (``setgroups``, ``setresgid``, ``setresuid``) and only then
   enters the working directory and opens the output files (``O_NOFOLLOW``, never creating
   a directory), so the kernel decides with the owner's rights. The child is the exec helper
   (``agents/node/helper/sluice_exec.c``, spawned with ``posix_spawn``: no fork of this
   process) where it is built, else this process forked and prepared in Python
   (:func:`_child`);
3. sleeps in ``poll`` until the command exits (SIGCHLD) or the **lifeline** ends — a socket
   whose other end only the daemon holds, closed by the kernel when the daemon dies, even by
   SIGKILL — or, with ``fence_s`` in the spec, stays silent that long: the daemon writes a
   byte on it every heartbeat, and a daemon that stopped writing (``SIGSTOP``, a hung host)
   is on a node the scheduler declares DOWN and may start the run's job elsewhere (fencing,
   docs/node-daemon.md); a feed carries the run's lease, which ends sooner when the daemon's
   heartbeats are no longer delivered (a cut-off daemon: ``agents.node.fence``), and a
   ``lease_s`` in the spec is the lease at the start;
4. when the command exits, SIGKILLs whatever of the run is left (as Slurm does when a step's
   task ends; no scan of /proc when the supervisor has no child left and the run's cgroup is
   empty: :func:`_nothing_left`), reaps it, and exits with the command's status — the same
   exit code, or killed by the same signal — so the daemon reads it as the command's own;
   when the lifeline ends first, SIGKILLs the whole run (cgroup, subtree, marker) until
   nothing is left, removes the run's cgroup (and the node's, if it is empty) and exits.

It answers on the lifeline with one line: ``started <pid>`` once the command runs, then
``exit <code>`` (the command's exit code, or minus its signal: what a daemon that is not this
process's parent reports) and ``done`` once the command has ended and nothing of the run is
left; or ``error <errno> <file>\\0<reason>`` if it cannot start (the reason names the step: the
user switch, the working directory, an output file, the exec), then ``exit 127`` (not found)
or ``exit 126``, the code it exits with. With ``--server`` it is instead the daemon's
supervisor server and forks one supervisor per request (:func:`serve`).
SIGTERM to the supervisor (an operator, systemd) is forwarded to every process of the run.
Only the standard library, ``agents.node.proctrack`` and ``agents.node.helper_path`` are
imported, in an isolated interpreter without site-packages (``-I -S``): see
``benchmarks/bench_supervisor.py`` for what one costs.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found,unused-ignore]  # see run()
import contextlib
import ctypes
import errno
import json
import math
import os
import resource
import select
import signal
import sys
import time
from pathlib import Path

TYPE_CHECKING = False  # mypy reads this name as true; the supervisor does not import typing
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

if __name__ == "__main__":  # run as a file (python -I -S): the checkout's root is not on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from agents.node.helper_path import exec_helper  # noqa: E402 - after the path
from agents.node.proctrack import (  # noqa: E402 - after the path
    RunScope,
    cgroup_populated,
    enter_cgroup,
    remove_cgroup,
)

__all__ = ["main"]

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_FOREVER = float("inf")


def _libc_prctl() -> Any:
    """libc's ``prctl``, loaded once (the server's forked supervisors share it), or None."""
    try:
        return ctypes.CDLL("libc.so.6", use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_LIBC_PRCTL = _libc_prctl()


def _prctl(option: int, value: int) -> None:
    if _LIBC_PRCTL is not None:
        with contextlib.suppress(OSError):
            _LIBC_PRCTL(option, value)


_HELPER = exec_helper()  # once per process: the server's forked supervisors share it

_OUTPUT_FLAGS = (os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_NOCTTY
                 | os.O_CLOEXEC | os.O_NONBLOCK)
"""Non-blocking: a FIFO with no reader fails the open (ENXIO) instead of holding the start,
and the supervisor with it (the daemon waits 30 s; the lifeline goes unwatched); the command
gets the file blocking (``os.set_blocking``), as the exec helper does."""


class _StartError(Exception):
    """Why the command could not start: the step, errno, the file and a sentence."""

    def __init__(self, step: str, number: int, filename: str, reason: str) -> None:
        super().__init__(reason)
        self.step, self.errno, self.filename, self.reason = step, number, filename, reason


def _child(spec: dict[str, Any], cgroup: str, report: int, lifeline: int, parent: int) -> None:
    """In the command's process, before exec (never returns): join the run's cgroup, die with
    the supervisor (``parent``: ended if it is no longer the parent), switch to the job's owner,
    and only then enter the working directory and open the output files as that user. A failure
    is written to ``report`` as ``step\0errno\0file\0reason``."""
    step, filename = "setup", ""
    try:
        os.setsid()
        for sig in signal.valid_signals():  # as the exec helper: every one at its default
            with contextlib.suppress(OSError, ValueError):  # (SIGKILL, SIGSTOP refuse)
                signal.signal(sig, signal.SIG_DFL)  # Python ignores SIGPIPE; the job must not
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        if cgroup:
            enter_cgroup(cgroup)
        os.close(lifeline)
        stdin = spec.get("stdin_fd")
        source = int(stdin) if stdin is not None else os.open(os.devnull, os.O_RDONLY)
        os.dup2(source, 0)
        os.close(source)
        if stdin is not None and spec.get("tty"):
            step = "terminal"
            import fcntl  # noqa: PLC0415 - only a step under srun --pty needs them
            import termios  # noqa: PLC0415

            fcntl.ioctl(0, termios.TIOCSCTTY, 0)  # the pty is this session's terminal
        user = spec.get("user")
        if user:
            step = f"switching to uid {user['uid']} gid {user['gid']}"
            os.setgroups([int(g) for g in user["groups"]])
            os.setresgid(int(user["gid"]), int(user["gid"]), int(user["gid"]))
            os.setresuid(int(user["uid"]), int(user["uid"]), int(user["uid"]))
        _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)  # after the switch, which clears it
        if os.getppid() != parent:  # the supervisor died before: never run unsupervised
            raise OSError(errno.ESRCH, os.strerror(errno.ESRCH))
        step, filename = "working directory", str(spec["cwd"])
        os.chdir(filename)
        out, err = str(spec.get("stdout") or ""), str(spec.get("stderr") or "")
        truncate = dict(spec["env"]).get("SLURM_OPEN_MODE") != "a"  # sbatch --open-mode
        for target, path in ((1, out), (2, err)):
            if path:
                step, filename = "output file" if target == 1 else "error file", path
                _open_output(path, target, truncate)
        if out and not err:
            os.dup2(1, 2)
        argv = [str(a) for a in spec["argv"]]
        step, filename = "exec", argv[0] if argv else ""
        os.execvpe(argv[0], argv, {str(k): str(v) for k, v in dict(spec["env"]).items()})
    except OSError as exc:
        number, reason = exc.errno or 0, exc.strerror or str(exc)
    except BaseException as exc:  # the child must report and end, whatever it is
        number, reason = 0, str(exc) or type(exc).__name__
    filename = filename.replace("\0", "\\0")  # a NUL (refused by every call) is a separator here
    with contextlib.suppress(OSError):
        os.write(report, "\0".join((step, str(number), filename, reason)).encode(
            errors="replace")[:4000])
    os._exit(126)


def _open_output(path: str, target: int, truncate: bool) -> None:
    """Open ``path`` for appending (as the switched user) onto descriptor ``target``, emptied
    first when ``truncate`` (slurmstepd's ``O_TRUNC`` unless ``--open-mode=append``,
    ``SLURM_OPEN_MODE=a``): 0666 less the umask, as any file; non-blocking
    (:data:`_OUTPUT_FLAGS`), then blocking again."""
    fd = os.open(path, _OUTPUT_FLAGS | (os.O_TRUNC if truncate else 0), 0o666)
    os.set_blocking(fd, True)
    os.dup2(fd, target)
    os.close(fd)


def _spawn(spec: dict[str, Any], cgroup: str, lifeline: int) -> int:
    """Start the command: through the exec helper where it is built (:func:`_helper_argv`),
    else forked and prepared in Python (:func:`_child`); its pid once it has exec'd, else
    _StartError."""
    report_r, report_w = os.pipe2(os.O_CLOEXEC)
    environment = _environment(spec) if _HELPER else None
    pid = 0
    mask = job_umask(dict(spec["env"]))
    daemons = os.umask(mask) if mask is not None else None  # inherited by the command
    try:
        if environment is not None:
            env_fd = _memfd(environment)
            try:
                argv = _helper_argv(spec, cgroup, report_w, env_fd, environment.count(b"\0"))
                pid = _spawn_helper(argv, lifeline, report_w, env_fd)
            finally:
                os.close(env_fd)
        if pid == 0:
            me = os.getpid()
            pid = os.fork()
            if pid == 0:  # pragma: no cover - the child's code ends in exec or _exit
                try:
                    os.close(report_r)
                    _child(spec, cgroup, report_w, lifeline, me)
                finally:
                    os._exit(126)
    finally:
        if daemons is not None:
            os.umask(daemons)
    os.close(report_w)
    said = _report(report_r, lifeline, pid)
    os.close(report_r)
    if not said:
        return pid
    os.waitpid(pid, 0)
    step, number, filename, reason = [*said.decode(errors="replace").split("\0", 3),
                                      "", "", ""][:4]
    code = int(number) if number.isdigit() else 0
    where = f" {filename}" if filename else ""
    reason = reason.rstrip("\0") or os.strerror(code)  # the helper sends the errno alone
    raise _StartError(step, code, filename, f"{step}{where}: {reason}")


def job_umask(env: Mapping[str, str]) -> int | None:
    """The submitter's umask, which the command starts under (its output files, the files it
    makes): ``SLURM_UMASK`` in the job's environment, octal as sbatch writes it (``0022``),
    as slurmstepd applies it; None (the daemon's own stays) when absent or not 1 to 4 octal
    digits of at most 0777."""
    text = str(env.get("SLURM_UMASK", ""))
    if not 1 <= len(text) <= 4 or any(c not in "01234567" for c in text):
        return None
    value = int(text, 8)
    return value if value <= 0o777 else None


def _report(report: int, lifeline: int, pid: int) -> bytes:
    """What the command's process ``pid`` reports before its exec: nothing (EOF: close-on-exec)
    once it has exec'd, else why not. Meanwhile the lifeline is watched: the process may block
    as the owner before its exec (an open on a hung mount), and a daemon that dies then must
    not leave it behind: it is SIGKILLed and the report read to its end (the run then ends as
    a command that died, its leftovers killed)."""
    poller = select.poll()
    poller.register(report, select.POLLIN)
    poller.register(lifeline, select.POLLIN)
    said = b""
    while True:
        for fd, _events in poller.poll():
            if fd == report:
                chunk = os.read(report, 4096)
                if not chunk:
                    return said
                said += chunk
                continue
            try:
                data = os.read(lifeline, 4096)  # the daemon's feed, or its end
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if not data:
                poller.unregister(lifeline)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


def _environment(spec: dict[str, Any]) -> bytes | None:
    """The job's environment as the exec helper reads it (``NAME=VALUE`` and a NUL each), or
    None for what only the Python child reports the way it always did: no command or an empty
    command name, an environment name that is empty or holds ``=``, a NUL in an entry
    (``execve`` refuses those; a NUL in another word makes ``posix_spawn`` refuse, the same
    way)."""
    env = {str(k): str(v) for k, v in dict(spec["env"]).items()}
    argv = [str(a) for a in spec["argv"]]
    if not argv or not argv[0] or any(not name or "=" in name for name in env):
        return None
    entries = [f"{name}={value}" for name, value in env.items()]
    if any("\0" in entry for entry in entries):
        return None
    return b"".join(os.fsencode(entry) + b"\0" for entry in entries)


def _memfd(data: bytes) -> int:
    """A memory file holding ``data``, close-on-exec."""
    fd = os.memfd_create("sluice-run-env", os.MFD_CLOEXEC)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    return fd


def _helper_argv(spec: dict[str, Any], cgroup: str, report: int, env_fd: int,
                 nenv: int) -> list[str]:
    """The exec helper's argv for ``spec`` (``agents/node/helper/sluice_exec.c`` says what each
    word is): the job's environment is not in it (every user of the host can read a process's
    argv) but on ``env_fd``, ``nenv`` entries (:func:`_environment`)."""
    user, stdin = spec.get("user"), spec.get("stdin_fd")
    ids = ["", "", "0"]
    if user:
        groups = [str(int(g)) for g in user["groups"]]
        ids = [str(int(user["uid"])), str(int(user["gid"])), str(len(groups)), *groups]
    return [_HELPER, str(os.getpid()), str(report), "-" if stdin is None else str(int(stdin)),
            "1" if stdin is not None and spec.get("tty") else "0", cgroup, *ids,
            str(spec["cwd"]), str(spec.get("stdout") or ""), str(spec.get("stderr") or ""),
            str(env_fd), str(nenv), "--", *[str(a) for a in spec["argv"]]]


def _spawn_helper(argv: list[str], lifeline: int, report: int, env_fd: int) -> int:
    """``posix_spawn`` of the exec helper (vfork: no copy of this process's page tables), with
    an empty environment and without the lifeline; 0 if it cannot (the Python child then)."""
    os.set_inheritable(report, True)  # its number is in argv; the helper sets close-on-exec
    os.set_inheritable(env_fd, True)  # the helper closes it once read
    try:
        return os.posix_spawn(_HELPER, argv, {}, file_actions=[(os.POSIX_SPAWN_CLOSE, lifeline)])
    except (OSError, ValueError):  # gone since the start; a NUL in a word: the child reports it
        return 0


def _tell(lifeline: int, line: str) -> None:
    with contextlib.suppress(OSError):
        os.write(lifeline, (line.replace("\n", " ") + "\n").encode(errors="replace"))


def _exited(pid: int) -> bool:
    """Whether the child ``pid`` has ended (it stays a zombie: its pid and group stay ours)."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _reap(leader: int | None = None) -> None:
    """Collect dead children (orphans re-parented to us), all but ``leader``."""
    while True:
        try:
            info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return
        if info is None or info.si_pid == leader:
            return
        with contextlib.suppress(ChildProcessError):
            os.waitpid(info.si_pid, 0)


def _watch(pid: int, lifeline: int, wakeup: int, scope: Callable[[], RunScope],
           terms: list[int], fence_s: float = 0.0, lease_s: float | None = None) -> bool:
    """Wait for the command's end (True) or the lifeline's (False). With ``fence_s``, a
    lifeline silent that long counts as ended: the daemon feeds it every heartbeat, and one
    that stopped (``SIGSTOP``, a hung host) is a node the scheduler is declaring DOWN, whose
    runs it may start elsewhere — the run must not go on here (fencing). A feed may carry a
    lease (``<seconds>\\n``: the time left until ``fence_s`` after the daemon's newest delivered
    heartbeat, ``agents.node.fence``): the lifeline counts as ended when it runs out, which is
    sooner; ``lease_s`` is the lease at the start."""
    poller = select.poll()
    poller.register(lifeline, select.POLLIN)
    poller.register(wakeup, select.POLLIN)
    deadline = time.monotonic() + _leased(fence_s, lease_s)
    pending = b""
    while True:
        if _exited(pid):
            return True
        _reap(pid)
        if terms:
            terms.clear()
            run_scope = scope()
            run_scope.signal(signal.SIGCONT, os.getpid())
            run_scope.signal(signal.SIGTERM, os.getpid())
        timeout_ms = None
        if fence_s > 0:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            timeout_ms = math.ceil(left * 1000)
        for fd, _events in poller.poll(timeout_ms):
            if fd == wakeup:
                with contextlib.suppress(BlockingIOError):
                    os.read(wakeup, 512)
                continue
            try:
                data = os.read(lifeline, 4096)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if not data:
                return False
            *feeds, pending = (pending + data).split(b"\n")
            if feeds:
                deadline = time.monotonic() + _leased(fence_s, _lease_of(feeds[-1]))
            pending = pending[-64:]


def _leased(fence_s: float, lease_s: float | None) -> float:
    """Seconds until the run is fenced: ``fence_s`` of silence, or the lease if sooner."""
    return fence_s if lease_s is None else min(fence_s, lease_s)


def _lease_of(feed: bytes) -> float | None:
    """The lease a feed line carries (seconds), None for a bare feed (or an unreadable one)."""
    try:
        return float(feed) if feed.strip() else None
    except ValueError:
        return None


def _nothing_left(cgroup: str) -> bool:
    """Whether nothing of the run can be left, known without a scan of /proc: this supervisor,
    a child subreaper, has no child at all (every process the command started descends from
    it, re-parented to it when its own parent ends, so none is left anywhere), and the run's
    cgroup, if it has one, holds no process. The common end of a job that leaves nothing
    behind; otherwise :meth:`RunScope.kill_all` scans /proc (subtree, cgroup and marker)."""
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:  # no child, live or dead
        return not (cgroup and cgroup_populated(cgroup))
    return False


def _ignore(*_args: object) -> None:
    """A signal handler that does nothing (the signal only wakes ``poll``)."""


def _exit_like(status: int) -> int:
    """Exit as the command did: its exit code, or killed by its signal (without a core)."""
    code = os.waitstatus_to_exitcode(status)
    if code >= 0:
        return code
    sig = -code
    with contextlib.suppress(OSError, ValueError):
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    with contextlib.suppress(OSError, ValueError):  # SIGKILL and SIGSTOP cannot be changed
        signal.signal(sig, signal.SIG_DFL)
    with contextlib.suppress(OSError, ValueError):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
        os.kill(os.getpid(), sig)
    return 128 + sig


def run(spec: dict[str, Any]) -> int:
    """Supervise one command as described in the module docstring; returns the exit code."""
    lifeline = int(spec["lifeline"])
    cgroup = str(spec.get("cgroup") or "")

    def scope() -> RunScope:  # made only when needed: pathlib costs ~50 page faults a run
        user = spec.get("user")  # a marker counts on the owner's and this process's uid only
        return RunScope(str(spec["run_sluid"]), Path(cgroup) if cgroup else None,
                        str(spec.get("cgroup_name") or ""),
                        frozenset({os.getuid(), *([int(user["uid"])] if user else [])}))

    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wake_w)
    terms: list[int] = []
    # _signal's, not signal.signal: its enum conversions cost a forked supervisor ~60 page
    # faults (copy-on-write: every page of the server's objects it touches is copied)
    _signal.signal(signal.SIGCHLD.value, _ignore)
    _signal.signal(signal.SIGTERM.value, lambda *_: terms.append(1))
    try:
        child = _spawn(spec, cgroup, lifeline)
    except _StartError as exc:
        code = 127 if exc.errno == errno.ENOENT and exc.step == "exec" else 126
        _tell(lifeline, f"error {exc.errno} {exc.filename}\0{exc.reason}")
        _tell(lifeline, f"exit {code}")  # a daemon not our parent reads the code here too
        return code
    finally:
        if spec.get("stdin_fd") is not None:  # the command's alone: its end is the reader's
            with contextlib.suppress(OSError):
                os.close(int(spec["stdin_fd"]))
    _tell(lifeline, f"started {child}")
    me = os.getpid()
    lease = spec.get("lease_s")
    if not _watch(child, lifeline, wake_r, scope, terms, float(spec.get("fence_s") or 0),
                  None if lease is None else float(lease)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child, signal.SIGKILL)
        run_scope = scope()
        run_scope.kill_all(_FOREVER, me, _reap)
        if run_scope.cgroup is not None and remove_cgroup(run_scope.cgroup):  # no daemon left
            with contextlib.suppress(OSError):
                run_scope.cgroup.parent.rmdir()  # the node's, if no other run is in it
        return 128 + signal.SIGKILL
    with contextlib.suppress(ProcessLookupError):
        os.killpg(child, signal.SIGKILL)  # the leader is a zombie: its group is still ours
    _pid, status = os.waitpid(child, 0)
    if not _nothing_left(cgroup):
        scope().kill_all(_FOREVER, me, _reap)
    _tell(lifeline, f"exit {os.waitstatus_to_exitcode(status)}")  # for a daemon not our parent
    _tell(lifeline, "done")  # nothing of the run is left: the daemon need not look again
    return _exit_like(status)


def serve() -> int:
    """``--server``: fork a supervisor per request, until the daemon closes its end.

    stdin is a ``SOCK_SEQPACKET`` socket only the daemon holds the other end of. A request is one
    message, ``{"home": DIR, "spec": SPEC}`` in JSON with three descriptors (the lifeline, the
    supervisor's stdout and stderr) and a fourth, the command's stdin, when the spec names
    one (``stdin_fd``: a step's tasks under srun's ``--input``/``--pty``); the answer is the
    new supervisor's pid with a pidfd on it
    (opened before this server can reap it, so the pid names no other process). The supervisor
    is forked from this process, which has imported what it needs, instead of starting an
    interpreter per run; from the fork on it is the same code as a supervisor started alone
    (:func:`run`), in a session of its own, its stdin ``/dev/null``, no other descriptor open.
    """
    import socket  # noqa: PLC0415 - only the server needs it

    requests = socket.socket(fileno=0)
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    poller = select.poll()
    poller.register(0, select.POLLIN)
    poller.register(wake_r, select.POLLIN)
    while True:
        ready = {fd for fd, _events in poller.poll()}
        _reap()
        if wake_r in ready:
            with contextlib.suppress(BlockingIOError):
                os.read(wake_r, 512)
        if 0 not in ready:
            continue
        try:
            message, fds, _flags, _addr = socket.recv_fds(requests, _REQUEST_LIMIT, 4)
        except OSError:
            return 0
        if not message:
            return 0  # the daemon is gone (its runs' supervisors go on: each has its lifeline)
        pid = _fork_supervisor(message, fds, (wake_r, wake_w))
        pidfd = os.pidfd_open(pid) if pid > 0 else -1
        try:
            socket.send_fds(requests, [str(pid).encode()], [pidfd] if pidfd >= 0 else [])
        except OSError:
            return 0
        finally:
            if pidfd >= 0:
                os.close(pidfd)


_REQUEST_LIMIT = 4 << 20
_OPEN_MAX = os.sysconf("SC_OPEN_MAX")


def _fork_supervisor(message: bytes, fds: list[int], own: tuple[int, int]) -> int:
    """Fork one supervisor for a request; its pid (0 for a request it could not read)."""
    try:
        request = json.loads(message)
        lifeline, stdout, stderr, *stdin = fds  # and the command's stdin, when it has one
        spec, home = dict(request["spec"]), str(request["home"])
        if len(stdin) > 1 or bool(stdin) != (spec.get("stdin_fd") is not None):
            raise ValueError("descriptors")
    except (ValueError, TypeError, KeyError):
        for fd in fds:
            os.close(fd)
        return 0
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child ends in os._exit
        code = 126
        try:
            signal.set_wakeup_fd(-1)
            for fd in own:
                os.close(fd)
            os.setsid()
            os.chdir(home)
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)  # the request socket is closed in the supervisor
            os.dup2(stdout, 1)
            os.dup2(stderr, 2)
            os.dup2(lifeline, 3)
            if stdin:
                os.dup2(stdin[0], 4)
                spec["stdin_fd"] = 4
            os.closerange(5 if stdin else 4, _OPEN_MAX)
            code = run({**spec, "lifeline": 3})
        finally:
            os._exit(code)
    for fd in fds:
        os.close(fd)
    return pid


def main() -> int:
    """Read the spec from stdin, then supervise (``--server``: :func:`serve`)."""
    if sys.argv[1:2] == ["--server"]:
        return serve()
    spec = json.loads(sys.stdin.buffer.read())
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    return run(spec)


if __name__ == "__main__":
    sys.exit(main())
