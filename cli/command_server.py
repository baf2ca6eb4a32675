"""The command server: a warm ``sluice`` for the calls scripts make in loops (issue 17, item 1).

``python -P -m cli.command_server SOCKET`` is started by the front (``cli/shim/sluice_front.c``,
installed as the ``sluice`` program) when a hot command (``submit``, ``cancel``, ``hold``,
``release``, ``update``, ``queue``, ``nodes``, ``show``, ``history``, ``scontrol``) finds no
server, and serves later calls: for each connection it forks a child that takes the caller's
descriptors 0-2, working directory, umask, environment and arguments and runs
:func:`cli.main.main` with them, so a call costs a ``fork`` instead of an
interpreter's start and ~150 imports (~25 ms of CPU). The child is the command: what it
prints, reads and returns is the caller's (docs/slurm-commands.md, "How fast a command starts").

It runs as the calling user and grants nothing: the front uses it only in a directory that is
the user's own, mode 0700, after checking that the listener is its uid; the server closes any
connection whose peer is another uid (``SO_PEERCRED``) or lives in other namespaces or cgroups
(a sandbox's call never runs outside it). It serves one code base: it ends, and the front falls
back to the Python CLI for that call and starts a fresh server, as soon as a file of any module
it loaded has changed, and it ends after :data:`IDLE_S` without a call, once its calls have
ended (a call stopped by Ctrl-Z whose front was killed is continued by it, to die). One server
per user, interpreter, ``PYTHON*`` variables, locale, groups, namespaces and cgroups (the
socket's name hashes them); a lock file keeps a second one from starting beside it. A server
lives in the cgroups of the caller that started it, so its children, the calls, are born in
their callers' cgroups: the caller's memory and pids limits hold them, and ``cgroup.kill``
(``systemctl stop`` of a scope) ends them. A server moved to another cgroup refuses its next
call and ends.

Nothing here may start a thread or a Kafka client before the fork: children inherit the
process as it is (a producer's threads would not survive the fork).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import gc
import importlib
import io
import os
import pwd
import resource
import select
import signal
import socket
import struct
import sys
import time
import traceback
from pathlib import Path

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (issue 17)
if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["GO_S", "HOT", "IDLE_S", "PRELOAD", "Call", "parse_call", "serve"]

HOT = ("submit", "cancel", "hold", "release", "update", "queue", "nodes", "show", "history",
       "scontrol")
"""The commands the front hands to a server (its ``HOT`` list)."""
IDLE_S = 300.0
"""A server with no call for this long ends (its next call starts one again)."""
GO_S = 10.0
"""How long a child waits for its front's go after its ready: a front sends it at once (only a
front stopped in between, Ctrl-Z, takes longer); then the child refuses ('R': nothing ran, the
front runs the Python CLI) and ends, so a connection that never sends it holds no process."""
MAX_CALL = 16 << 20
"""The largest call accepted (arguments and environment); Linux's own limit is lower."""
PRELOAD = (
    "cli.main", "cli.submit", "cli.job_control", "cli.views", "cli.client", "cli.batch_script",
    "cli.export", "cli.slurm_units", "cli.timefmt", "cli.admin", "cli.array_fold", "cli.formats",
    "cli.history_cmd", "cli.job_fields", "cli.nodes_cmd", "cli.queue_cmd", "cli.sacct_fields",
    "cli.show_cmd", "cli.slurm_cmds", "cli.partition_show", "schemas.ranges",
    "schemas.request_keys", "projections.job_states",
    "scheduler.jobs.signal_names", "scheduler.shard.reasons", "scheduler.topology.hostlist",
    "agents.auth.key_files", "agents.auth.public_keys", "agents.auth.sodium",
    "agents.auth.sealed_env", "agents.auth.munge", "datetime", "locale", "grp", "base64",
    "struct", "_sha256",
)
"""What a hot command imports, loaded once in the server so that no child imports it again
(``_sha256``: the credential's digest, ``agents.auth.headers.sha256_hex``)."""
WARM_CALLS = (("submit", "-H", "--", "true"), ("submit", "--wrap", "true"),
              ("submit", "-N", "1", "-n", "1", "--", "true"), ("queue",), ("cancel", "1"),
              ("hold", "1"), ("release", "1"))
"""Calls parsed once in the server (:func:`cli.main.prewarm`): the patterns argparse compiles
to match them are then in ``re``'s cache in every child."""
WARM_RECORDS = ("SubmitJob", "TestSubmitJob", "CancelJob", "HoldJob", "ReleaseJob",
                "UpdateJob", "RequeueJob")
"""The requests whose writers the server compiles once (:func:`schemas.writer.prepare`)."""
_WATCH_S = 1.0
"""While calls run, how often the server looks at them (:func:`_watch`)."""
_FRESH_NS = 2_000_000_000
"""A file modified this close to the server's start may have changed after it was imported (its
modification time read after): the server does not serve such code, the next call starts
another."""
_REPLY = struct.Struct("=ci")
_LENGTH = struct.Struct("=I")


class Call:
    """One call as the front sent it."""

    __slots__ = ("argv", "cwd", "env", "umask")

    def __init__(self, cwd: str, umask: int, argv: list[str], env: dict[str, str]) -> None:
        self.cwd = cwd
        self.umask = umask
        self.argv = argv
        self.env = env


def parse_call(data: bytes) -> Call:
    """The call in ``data`` (NUL-terminated words: cwd, umask in octal, argc, the arguments,
    then ``NAME=VALUE`` to the end). Raises ValueError when it is not one."""
    if not data.endswith(b"\0"):
        raise ValueError("a call ends with a NUL")
    words = [os.fsdecode(w) for w in data[:-1].split(b"\0")]
    if len(words) < 3:
        raise ValueError("a call names its directory, umask and argument count")
    cwd, umask, count = words[0], int(words[1], 8), int(words[2])
    if not 0 <= count <= len(words) - 3 or not 0 <= umask <= 0o777:
        raise ValueError("a call's argument count or umask is out of range")
    argv = words[3:3 + count]
    env: dict[str, str] = {}
    for entry in words[3 + count:]:
        name, sep, value = entry.partition("=")
        if sep and name:
            env.setdefault(name, value)  # the first of a repeated name, as getenv finds it
    return Call(cwd, umask, argv, env)


Signature = tuple[int, int, int, int]
"""A file's inode, size, modification and change times: ``cp -p``, ``rsync -a`` and ``tar -x``
put the modification time back, never the change time (``st_ctime``, which only the kernel
sets)."""


def _signature(path: str) -> Signature:
    st = os.stat(path)  # noqa: PTH116 -- the same stat without a Path a file a call (issue 17)
    return st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def _loaded_files() -> dict[str, Signature]:
    """Each loaded module's file with its signature: the code this server runs."""
    files: dict[str, Signature] = {}
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if isinstance(path, str):
            with contextlib.suppress(OSError):
                files[path] = _signature(path)
    return files


def _changed(files: dict[str, Signature]) -> bool:
    for path, signature in files.items():
        try:
            if _signature(path) != signature:
                return True
        except OSError:
            return True
    return False


def _preload() -> None:
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except (ImportError, OSError):  # e.g. no libsodium: the child meets it as the CLI would
            continue
    main = sys.modules.get("cli.main")
    if main is not None:
        main._argparse_untranslated()
        main.prebuild(HOT)  # a child parses its call with a parser built once, here
        main.prewarm(WARM_CALLS)
    _warm()
    gc.collect()
    gc.freeze()  # children share the loaded objects' pages instead of copying them on collection
    gc.disable()


def _warm() -> None:
    """Do now, once, the work a hot call does on first use and would repeat in every child:
    load libsodium and libmunge (``dlopen``), compile the requests' writers, and let the C
    library load its name-service modules (the submitter's ``getpwuid``). Nothing here keeps an
    answer a call relies on: the libraries' loaders try again in a child where they failed
    here, and each call still encodes, seals and looks its user up itself."""
    from agents.auth import munge, sodium
    from schemas import writer

    for warm in (sodium.preload, munge.available, lambda: writer.prepare(WARM_RECORDS)):
        with contextlib.suppress(Exception):  # the child meets any failure as the CLI would
            warm()
    with contextlib.suppress(KeyError):
        pwd.getpwuid(os.getuid())


def serve(path: str, idle_s: float = IDLE_S) -> int:
    """Serve calls on the Unix socket ``path`` until idle, stale or told to stop; 1 at once
    when ``path``'s directory is not this user's own (:func:`_own_directory`)."""
    try:
        directory, name = _own_directory(path)
    except OSError:
        return 1
    try:
        return _serve_in(directory, name, idle_s)
    finally:
        os.close(directory)


def _own_directory(path: str) -> tuple[int, str]:
    """A descriptor on ``path``'s directory and the socket's name in it. The directory must be
    ours: opened without following a symlink, our uid, mode 0700 (OSError otherwise). The
    front checked it by path before it started us; between that check and our bind (an
    interpreter's start), another user who owns its parent (a ``TMPDIR`` of theirs that root
    kept after ``su``) could rename it away and put a symlink to any directory there, and our
    lock and socket went into it. Every name below is made relative to this descriptor."""
    folder, name = os.path.split(path)
    fd = os.open(folder or ".", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    st = os.fstat(fd)
    if st.st_uid != os.getuid() or st.st_mode & 0o077 or not name:
        os.close(fd)
        raise PermissionError(errno.EPERM, "the socket's directory is not ours alone", folder)
    return fd, name


def _serve_in(directory: int, name: str, idle_s: float) -> int:
    lock = os.open(f"{name}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600,
                   dir_fd=directory)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return 0  # another server has it
    started_ns = time.time_ns()
    _preload()
    files = _loaded_files()
    if any(max(mtime, ctime) >= started_ns - _FRESH_NS for _, _, mtime, ctime in files.values()):
        return 0  # a file changed while (or just before) it loaded: its code may be older
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(name, dir_fd=directory)
    old_mask = os.umask(0o177)
    try:  # the directory itself, whatever its path names now (a magic link, not a lookup)
        listener.bind(f"/proc/self/fd/{directory}/{name}")
    finally:
        os.umask(old_mask)
    bound = os.stat(name, dir_fd=directory, follow_symlinks=False).st_ino
    listener.listen(64)
    signal.signal(signal.SIGCHLD, lambda *_: _reap())  # no ended call left a zombie
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    world = _World(files, _namespaces("self"), _cgroups("self"))
    last = time.monotonic()
    try:
        while True:
            idle = time.monotonic() - last
            if idle >= idle_s and not world.calls:
                return 0
            wait = _WATCH_S if world.calls else idle_s - idle
            if not select.select([listener], [], [], wait)[0]:
                _watch(world.calls)
                continue
            last = time.monotonic()
            try:
                conn, _ = listener.accept()
            except OSError as exc:
                if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    return 1  # it could not serve the next call either (and would spin)
                continue
            with conn:
                if not _take(conn, world, (listener.fileno(), lock, directory)):
                    return 0
    finally:
        _unlink_if_ours(directory, name, bound)
        listener.close()


class _World:
    """What the server's children run with (its loaded files, namespaces and cgroups), and
    its calls running: each child's pid with its front's."""

    __slots__ = ("calls", "cgroups", "files", "namespaces")

    def __init__(self, files: dict[str, Signature], namespaces: tuple[str, ...],
                 cgroups: bytes) -> None:
        self.files, self.namespaces, self.cgroups = files, namespaces, cgroups
        self.calls: dict[int, int] = {}


def _watch(calls: dict[int, int]) -> None:
    """Forget the calls that have ended, and continue a stopped one whose front is gone.

    Ctrl-Z stops a call's child with its front (``SIGSTOP``); a front then killed (``kill -9
    %1``) cannot continue it, and a stopped process keeps the ``SIGIO`` of its front's end
    pending: continued, it dies of it, as the Python CLI's process dies with the job. The
    server keeps running while it has calls, so this holds whenever the front goes."""
    for child, front in list(calls.items()):
        try:
            ended = os.waitpid(child, os.WNOHANG)[0] != 0
        except ChildProcessError:  # reaped on SIGCHLD already
            ended = True
        if ended:
            del calls[child]
        elif _state(child) == "T" and _state(front) in ("", "Z"):
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGCONT)


def _state(pid: int) -> str:
    """Process ``pid``'s state letter (``/proc/PID/stat``), "" when it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


def _take(conn: socket.socket, world: _World, ours: tuple[int, ...]) -> bool:
    """Serve one connection: a child of ours runs its call, or it is closed unanswered (not a
    peer we serve; the caller runs the Python CLI), or refused. False: the server must end
    (its code changed, it was moved to another cgroup, or a caller's limits are beyond it:
    the next server is started by that caller, as it is). ``ours``: the listener's, the
    lock's and the directory's descriptors, which the child closes."""
    if _cgroups("self") != world.cgroups:  # moved: our children would not be the callers'
        _refuse(conn)
        return False
    front = _peer(conn, world.namespaces, world.cgroups)
    if not front:
        return True
    if _changed(world.files) or _beyond_us(front):
        _refuse(conn)
        return False
    try:
        child = os.fork()
    except OSError:  # a pids limit, no memory: the caller runs the Python CLI
        return True
    if child == 0:
        try:
            for fd in ours:
                os.close(fd)
            _child(conn, front)  # never returns
        finally:
            os._exit(1)  # nor does anything it raises reach the server's loop
    world.calls[child] = front
    return True


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


NAMESPACES = ("mnt", "net", "pid", "user", "ipc", "uts", "cgroup")
"""The namespaces a caller must share with the server (the front hashes them into the
socket's name too)."""


def _namespaces(pid: int | str) -> tuple[str, ...]:
    """The namespaces of process ``pid`` (``self``: ours); empty when they cannot be read."""
    try:
        return tuple(os.readlink(f"/proc/{pid}/ns/{name}")  # noqa: PTH115 -- no Path a call
                     for name in NAMESPACES)
    except OSError:
        return ()


def _cgroups(pid: int | str) -> bytes:
    """Process ``pid``'s cgroups (``/proc/PID/cgroup``, every hierarchy); empty when unreadable.
    """
    try:
        return Path(f"/proc/{pid}/cgroup").read_bytes()
    except OSError:
        return b""


def _peer(conn: socket.socket, namespaces: tuple[str, ...], cgroups: bytes) -> int:
    """The peer's pid when it is our uid, in our namespaces (``namespaces``) and cgroups
    (``cgroups``), else 0: a call from a sandbox (a network or mount namespace of its own, a
    container sharing the socket's directory) never runs outside it, in the server's world; one
    from another cgroup (a systemd scope, a memory or pids limit) never runs outside its limits.
    """
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, _gid = struct.unpack("3i", creds)
    if uid != os.getuid() or pid <= 0 or not namespaces or _namespaces(pid) != namespaces \
            or not cgroups or _cgroups(pid) != cgroups:
        return 0
    return int(pid)


_LIMITS = tuple(getattr(resource, name) for name in dir(resource) if name.startswith("RLIMIT_"))


_CAP_SYS_NICE, _CAP_SYS_RESOURCE = 23, 24
"""The capabilities that let a process lower its nice value and raise a hard limit
(``linux/capability.h``)."""


@functools.cache
def _capable(capability: int) -> bool:
    """Whether this process holds ``capability`` (``CapEff`` of ``/proc/self/status``; where
    that cannot be read, whether it is root). Root is not always capable: a container may
    drop ``CAP_SYS_RESOURCE``, and then root's child could not take a caller's higher limit
    (it ran the call under the limit of the call that started the server)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("CapEff:"):
                return bool(int(line.split()[1], 16) >> capability & 1)
    except (OSError, ValueError, IndexError):
        pass
    return os.geteuid() == 0


def _beyond_us(front: int) -> bool:
    """The front runs with a soft limit above our hard one, or a lower nice value, which we
    may not raise or lower (``CAP_SYS_RESOURCE``, ``CAP_SYS_NICE``): a child of ours could not
    run its call as the Python CLI would."""
    try:
        if not _capable(_CAP_SYS_RESOURCE):
            for limit in _LIMITS:
                if _above(resource.prlimit(front, limit)[0], resource.getrlimit(limit)[1]):
                    return True
        if _capable(_CAP_SYS_NICE):
            return False
        return os.getpriority(os.PRIO_PROCESS, front) < os.getpriority(os.PRIO_PROCESS, 0)
    except (OSError, ValueError):
        return True


def _above(a: int, b: int) -> bool:
    if a == b:
        return False
    return a == resource.RLIM_INFINITY or (b != resource.RLIM_INFINITY and a > b)


def _adopt_limits(front: int) -> None:
    """Take the front's resource limits and nice value (``ulimit``, ``nice`` before the call):
    the Python CLI would run under them. The server made sure it can (:func:`_beyond_us`); a
    hard limit above ours stays ours (nothing a call does raises its soft limit)."""
    for limit in _LIMITS:
        with contextlib.suppress(OSError, ValueError):
            soft, hard = resource.prlimit(front, limit)
            own_soft, own_hard = resource.getrlimit(limit)
            if _above(hard, own_hard) and not _capable(_CAP_SYS_RESOURCE):
                hard = own_hard
            if (soft, hard) != (own_soft, own_hard):
                resource.setrlimit(limit, (soft, hard))
    with contextlib.suppress(OSError):
        theirs = os.getpriority(os.PRIO_PROCESS, front)
        if theirs != os.getpriority(os.PRIO_PROCESS, 0):
            os.setpriority(os.PRIO_PROCESS, 0, theirs)


def _refuse(conn: socket.socket) -> None:
    with contextlib.suppress(OSError):
        conn.sendall(_REPLY.pack(b"R", 0))


def _unlink_if_ours(directory: int, name: str, bound: int) -> None:
    """Remove the socket unless a newer server has bound the name since (``bound``: the inode
    our bind made; the socket's own descriptor has another, sockfs's, so comparing with it
    never matched and every server left its socket behind)."""
    with contextlib.suppress(OSError):
        if os.stat(name, dir_fd=directory, follow_symlinks=False).st_ino == bound:
            os.unlink(name, dir_fd=directory)


def _receive(conn: socket.socket) -> bytes:
    """The call's words (its length first)."""
    head = b""
    while len(head) < _LENGTH.size:
        chunk = conn.recv(_LENGTH.size - len(head))
        if not chunk:
            raise ValueError("a call starts with its length")
        head += chunk
    (length,) = _LENGTH.unpack(head)
    if length > MAX_CALL:
        raise ValueError("the call is too large")
    data = bytearray()
    while len(data) < length:
        chunk = conn.recv(min(length - len(data), 1 << 20))
        if not chunk:
            raise ValueError("the call ended early")
        data += chunk
    return bytes(data)


def _go(conn: socket.socket) -> list[int]:
    """The front's go, which carries its descriptors 0-2 (sent only now: a call queued to a
    server that never takes it holds none of the caller's files open, its pipes among them).
    Empty: the front left, or sent no go; nothing has run."""
    go, fds, _flags, _addr = socket.recv_fds(conn, 1, 3)
    if go == b"G" and len(fds) == 3:
        return list(fds)
    for fd in fds:
        os.close(fd)
    return []


def _child(conn: socket.socket, front: int) -> None:
    """Become the caller's command (``front``: its front's pid); ends the process."""
    status = 1
    try:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        conn.settimeout(30.0)
        call = parse_call(_receive(conn))
        os.chdir(call.cwd)
        os.umask(call.umask)
        _adopt_limits(front)
        conn.sendall(_REPLY.pack(b"P", os.getpid()))
        conn.settimeout(GO_S)  # a peer that never sends its go keeps no process: 'R', gone
        fds = _go(conn)
        conn.settimeout(None)
        if not fds:
            os._exit(0)  # the front left: nothing ran
    except (OSError, ValueError, UnicodeError):
        _refuse(conn)  # nothing ran: the front runs the Python CLI instead
        os._exit(0)
    except KeyboardInterrupt:  # a Ctrl-C the front passed on before its go: nothing ran
        os._exit(0)
    try:
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            if fd > 2:
                os.close(fd)
        os.environ.clear()
        os.environ.update(call.env)
        time.tzset()  # the caller's TZ: the C library read the server's once, at its start
        _standard_streams()
        with contextlib.suppress(OSError):  # without it the call still runs, as before
            _end_with_the_front(conn)
        status = _run(call.argv)
    finally:
        _flush()
        with contextlib.suppress(OSError):
            conn.sendall(_REPLY.pack(b"X", status))
        os._exit(status)


def _end_with_the_front(conn: socket.socket) -> None:
    """End this process (SIGIO, whose default action ends it) the moment the front's end of
    ``conn`` closes before our exit status is sent: a front killed (``kill -9``, a step's
    timeout) takes its call with it, as it would take the Python CLI's process. The front
    sends nothing after its 'G', so anything ``conn`` reads is that end."""
    signal.signal(signal.SIGIO, signal.SIG_DFL)
    fcntl.fcntl(conn.fileno(), fcntl.F_SETOWN, os.getpid())
    fcntl.fcntl(conn.fileno(), fcntl.F_SETFL,
                fcntl.fcntl(conn.fileno(), fcntl.F_GETFL) | os.O_ASYNC)
    ready, _, _ = select.select([conn], [], [], 0)
    if ready:  # it closed before the signal was armed
        os.kill(os.getpid(), signal.SIGIO)


def _run(argv: Sequence[str]) -> int:
    """``sluice ARGV``'s exit status, as the Python CLI's process would end."""
    from cli.main import main
    sys.argv = ["sluice", *argv]
    try:
        return main(list(argv)) & 0xFF
    except SystemExit as exc:  # argparse's usage errors and --help
        code = exc.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code & 0xFF
        print(code, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BaseException:  # a bug: its traceback, as the interpreter would print it
        traceback.print_exc()
        return 1


def _standard_streams() -> None:
    """New ``sys.stdin``/``stdout``/``stderr`` on descriptors 0-2 (now the caller's), buffered
    as the interpreter would buffer them for these files."""
    def stream(fd: int, mode: str, like: object, errors: str) -> io.TextIOWrapper:
        # the encoding the interpreter chose for its own streams, from PYTHONIOENCODING and the
        # locale, and PYTHONUNBUFFERED's write-through: the caller's (the socket's name hashes
        # these variables)
        encoding = getattr(like, "encoding", None) or "utf-8"
        errors = getattr(like, "errors", None) or errors
        binary = open(fd, mode + "b", closefd=False)  # noqa: SIM115 -- lives as long as we do
        tty = os.isatty(fd)
        return io.TextIOWrapper(binary, encoding=encoding, errors=errors,
                                line_buffering=tty and mode == "w",
                                write_through=fd == 2 or bool(getattr(like, "write_through",
                                                                      False)))
    sys.stdin = stream(0, "r", sys.__stdin__, "strict")
    sys.stdout = stream(1, "w", sys.__stdout__, "strict")
    sys.stderr = stream(2, "w", sys.__stderr__, "backslashreplace")


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m cli.command_server SOCKET", file=sys.stderr)
        return 2
    try:
        return serve(args[0])
    except OSError as exc:
        if exc.errno not in (errno.EADDRINUSE, errno.ENOENT, errno.EACCES):
            raise
        return 1


if __name__ == "__main__":
    sys.exit(main())
