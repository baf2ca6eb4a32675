"""Finding and killing every process of a run (Slurm's ``proctrack``), with no daemon help.

A run's processes are named by up to three sources, united by :meth:`RunScope.pids`:

1. **its cgroup v2** (``…/sluice/<node>/run-<run_sluid>``, :class:`CgroupTree`), where the host
   gives one: nothing leaves a cgroup without the privilege to write another cgroup's
   ``cgroup.procs``; ``cgroup.kill`` kills all of it at once, even while it forks;
2. **the supervisor's subtree**: the supervisor (``agents.node.supervise``) is a child subreaper,
   so a process that double-forks or ``setsid()``\\ s away is re-parented to it, never to init;
3. **the run marker**: every process started for a run carries ``SLUICE_RUN_SLUID=<run>`` in its
   initial environment, readable in ``/proc/<pid>/environ`` (by root, or by the same uid), which
   finds the run's processes when no supervisor is left (a restarted daemon's sweep). Anyone
   can start a process with any environment, so a marker counts only on a process whose real
   uid is one of the run's (``RunScope.uids``: its owner's and the daemon's). Red team,
   7 Dec 2026: another user's loop starting ``env SLUICE_RUN_SLUID=<alice's run> sleep 100``
   every 20 ms kept the supervisor of alice's run, whose job had left a process behind,
   killing for ever (``kill_all``): her ended job stayed RUNNING, its CPUs held, for as long as
   the loop ran.

Signals go through a pidfd opened on each pid and re-checked against the source that named it,
so a pid reused between the scan and the signal is never hit. Nothing here imports more than
the standard library: the supervisor imports this module and should start fast and small.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

__all__ = [
    "MARKER",
    "CgroupTree",
    "ProctrackError",
    "RunScope",
    "cgroup_populated",
    "detect_cgroups",
    "enter_cgroup",
    "remove_cgroup",
    "safe_name",
    "signal_child",
    "signal_scopes",
]

MARKER = "SLUICE_RUN_SLUID"
"""The environment variable that marks a run's processes (its value is the run SLUID)."""

_SAFE_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
_PROC = Path("/proc")


class ProctrackError(RuntimeError):
    """Process tracking that was asked for is not available on this host (the reason says why)."""


def safe_name(text: str) -> bool:
    """Whether ``text`` can name a file or cgroup as it is (a SLUID or a plain node name)."""
    return (0 < len(text) <= 64 and text[0].isascii() and text[0].isalnum()
            and set(text) <= _SAFE_CHARS)


# -- /proc ----------------------------------------------------------------------------------


def _stat(pid: int) -> tuple[int, str] | None:
    """``(ppid, state)`` of a live process, None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:  # noqa: PTH123 - hot: no pathlib
            text = handle.read().decode(errors="replace")
    except OSError:
        return None
    fields = text.rpartition(")")[2].split()  # the command name may hold spaces and parens
    return int(fields[1]), fields[0]


def _pids() -> Iterator[int]:
    with contextlib.suppress(OSError):
        for entry in os.scandir(_PROC):
            if entry.name.isdigit():
                yield int(entry.name)


def _has_marker(pid: int, needle: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:  # noqa: PTH123 - hot: no pathlib
            data = handle.read()
    except OSError:  # gone, a zombie, or another uid's
        return False
    return needle in b"\0" + data


def _real_uid(pid: int) -> int | None:
    """The real uid of ``pid`` (``/proc/<pid>/status``), None if it is gone."""
    try:
        with open(f"/proc/{pid}/status", "rb") as handle:  # noqa: PTH123 - hot: no pathlib
            for line in handle:
                if line.startswith(b"Uid:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def _marked(pid: int, needle: bytes, uids: frozenset[int] | None) -> bool:
    """``pid`` carries the run's marker and, when the run's ``uids`` are known, runs as one of
    them (real uid: a setuid program the job starts keeps the owner's). The uid is read first:
    another user's environment is never read (up to 2 MB a process, and a thousand processes
    forked from one share its pages: ~1 GB of memory made every scan of /proc read 2 GB, 10 s,
    red team, 7 Dec 2026)."""
    if uids is not None:
        try:  # /proc/<pid> is its effective uid's (root's for a non-dumpable process): cheap
            seen = os.stat(f"/proc/{pid}").st_uid  # noqa: PTH116 - hot: no pathlib
        except OSError:
            return False
        if (seen not in uids and seen != 0) or _real_uid(pid) not in uids:
            return False
    return _has_marker(pid, needle)


def _in_cgroup(pid: int, relative: str) -> bool:
    try:
        lines = (_PROC / str(pid) / "cgroup").read_text().splitlines()
    except OSError:
        return False
    own = next((line[3:] for line in lines if line.startswith("0::")), None)
    return own is not None and (own == relative or own.startswith(relative + "/"))


def _descends_from(pid: int, root: int) -> bool:
    seen = 0
    while pid > 1 and seen < 4096:
        stat = _stat(pid)
        if stat is None:
            return False
        pid, seen = stat[0], seen + 1
        if pid == root:
            return True
    return False


def _send(pid: int, sig: int, still_ours: Callable[[int], bool]) -> bool:
    """Signal ``pid`` through a pidfd, after checking that the pidfd's process is still ours
    (kernels before 5.3 have no pidfd: a plain ``kill`` after the same check)."""
    try:
        fd = os.pidfd_open(pid)
    except OSError as exc:
        if exc.errno not in (errno.ENOSYS, errno.EPERM) or not still_ours(pid):
            return False
        try:
            os.kill(pid, sig)
        except OSError:
            return False
        return True
    try:
        if not still_ours(pid):
            return False
        signal.pidfd_send_signal(fd, sig)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def signal_child(pid: int, parent: int, sig: int) -> bool:
    """Send ``sig`` to ``pid`` alone (not its children), only while it is a live child of
    ``parent`` — checked through a pidfd, so a pid reused by another process is never hit.
    True if it was sent."""

    def child_of_parent(candidate: int) -> bool:
        stat = _stat(candidate)
        return stat is not None and stat[0] == parent and stat[1] not in "ZX"

    return pid > 1 and _send(pid, sig, child_of_parent)


def signal_scopes(sig: int, scopes: list[tuple[RunScope, int | None]]) -> int:
    """Send ``sig`` once to every process of the given scopes (each with its live supervisor
    as ``root``, never signalled itself), re-checked against the scope that named it; returns
    how many were signalled. A process two scopes name gets it once. A scope with its live
    supervisor is its subtree and cgroup alone (the supervisor, a child subreaper, keeps every
    process the command starts in its subtree): no environment is read. The daemon's loop
    calls this (``scancel -s``): reading the environments of the owner's other processes, up
    to 2 MB each and a thousand sharing one copy, held it 11.5 s (red team, 7 Dec 2026: its
    heartbeats stopped and its node went DOWN, every run on it killed)."""
    targets: dict[int, Callable[[int], bool]] = {}
    for scope, root in scopes:
        marker = root is None
        member = scope._member(root, marker=marker)
        for pid in scope.pids(root, marker=marker):
            targets.setdefault(pid, member)
    return sum(_send(pid, sig, targets[pid]) for pid in sorted(targets))


# -- cgroup v2 ------------------------------------------------------------------------------


def _unescape(text: str) -> str:
    """Undo mountinfo's octal escapes (``\\040`` is a space)."""
    parts = text.split("\\")
    out = [parts[0]]
    for part in parts[1:]:
        code = part[:3]
        if len(code) == 3 and all(c in "01234567" for c in code):
            out.append(chr(int(code, 8)) + part[3:])
        else:
            out.append("\\" + part)
    return "".join(out)


def _cgroup2_mount() -> tuple[Path, str] | None:
    """The cgroup2 mount point and the cgroup path its root shows (``/`` unless bind-mounted)."""
    try:
        lines = (_PROC / "self" / "mountinfo").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        left, _, right = line.partition(" - ")
        fields = left.split()
        if right.split()[:1] == ["cgroup2"] and len(fields) >= 5:
            return Path(_unescape(fields[4])), _unescape(fields[3])
    return None


def _own_cgroup() -> str | None:
    with contextlib.suppress(OSError):
        for line in (_PROC / "self" / "cgroup").read_text().splitlines():
            if line.startswith("0::"):
                return line[3:].removesuffix(" (deleted)")
    return None


class CgroupTree:
    """The cgroup v2 directory of one node; each run gets ``run-<run_sluid>`` below it."""

    __slots__ = ("mount", "mount_root", "node_dir")

    def __init__(self, node_dir: Path, mount: Path, mount_root: str = "/") -> None:
        self.node_dir, self.mount, self.mount_root = node_dir, mount, mount_root

    def run_dir(self, run_sluid: str) -> Path:
        return self.node_dir / f"run-{run_sluid}"

    def create(self, run_sluid: str) -> Path | None:
        """The run's cgroup, made if needed; None if the host refuses (the run is then tracked
        by its supervisor and marker only)."""
        path = self.run_dir(run_sluid)
        try:
            path.mkdir(parents=True, exist_ok=True)  # the node's may have gone with its last run
        except OSError:
            return None
        return path

    def runs(self) -> list[str]:
        """Run SLUIDs that have a cgroup under this node (leftovers, after a restart)."""
        try:
            names = sorted(entry.name for entry in os.scandir(self.node_dir) if entry.is_dir())
        except OSError:
            return []
        return [name[4:] for name in names if name.startswith("run-") and safe_name(name[4:])]

    def relative(self, path: Path) -> str:
        """The cgroup path as ``/proc/<pid>/cgroup`` shows it."""
        below = str(path.relative_to(self.mount)).removeprefix(".").lstrip("/")
        return (self.mount_root.rstrip("/") + "/" + below).rstrip("/") or "/"

    def scope(self, run_sluid: str, uids: frozenset[int] | None = None) -> RunScope:
        """The scope of a run with a cgroup under this node (made by :meth:`create`)."""
        path = self.run_dir(run_sluid)
        return RunScope(run_sluid, path, self.relative(path), uids)


def detect_cgroups(parent: str, node_key: str) -> tuple[CgroupTree | None, str]:
    """This node's cgroup directory, or None and the reason the host gives none.

    ``parent`` is a cgroupfs path (absolute, or relative to the cgroup2 mount); empty means
    ``sluice`` under the daemon's own cgroup. The node's directory is made under it and must
    be writable, as must the ``cgroup.procs`` of the nearest common ancestor of the daemon's
    cgroup and the run's (the kernel's rule for moving a process between cgroups).
    """
    found = _cgroup2_mount()
    own = _own_cgroup()
    if found is None:
        return None, "no cgroup2 file system is mounted"
    mount, mount_root = found
    if own is None or not (own + "/").startswith(mount_root.rstrip("/") + "/"):
        return None, "this process's cgroup is not visible under the cgroup2 mount"
    own_dir = mount / own[len(mount_root.rstrip("/")):].lstrip("/")
    base = Path(parent) if parent else own_dir / "sluice"
    if not base.is_absolute():
        base = mount / base
    if ".." in base.parts or not base.is_relative_to(mount):
        return None, f"{base} is not under the cgroup2 mount {mount}"
    node_dir = base / node_key
    try:
        node_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return None, f"cannot create {node_dir}: {exc.strerror}"
    common = Path(os.path.commonpath([own_dir, node_dir]))
    for path in (node_dir, common):
        if not os.access(path / "cgroup.procs", os.W_OK):
            return None, f"{path / 'cgroup.procs'} is not writable (no delegation)"
    return CgroupTree(node_dir, mount, mount_root), f"cgroup v2 under {node_dir}"


def enter_cgroup(path: str) -> None:
    """In a child before ``exec``: move this process into the run's cgroup (best effort)."""
    with contextlib.suppress(OSError), Path(path, "cgroup.procs").open("w") as procs:
        procs.write("0")


def cgroup_populated(path: str) -> bool:
    """Whether a live process is in the cgroup ``path`` or a sub-cgroup of it, read in the
    kernel's ``cgroup.events`` (``populated``: one read, no walk of the sub-cgroups); False
    once it is removed."""
    try:
        with open(f"{path}/cgroup.events", "rb") as handle:  # noqa: PTH123 - hot: no pathlib
            events = handle.read()
    except FileNotFoundError:
        return False
    except OSError:
        return bool(_cgroup_pids(Path(path)))
    return b"populated 1" in events


def _cgroup_pids(path: Path) -> set[int]:
    pids: set[int] = set()
    with contextlib.suppress(OSError):
        for root, _dirs, _files in os.walk(path):
            with contextlib.suppress(OSError):
                pids.update(int(p) for p in Path(root, "cgroup.procs").read_text().split())
    return pids


def remove_cgroup(path: Path) -> bool:
    """Remove an emptied cgroup and any sub-cgroups the run made; False if still busy."""
    for root, _dirs, _files in sorted(os.walk(path), key=lambda w: -len(w[0])):
        with contextlib.suppress(FileNotFoundError):
            try:
                Path(root).rmdir()
            except OSError:
                return False
    return True


# -- one run --------------------------------------------------------------------------------


class RunScope:
    """Every process of one run: its cgroup (if any), a supervisor's subtree, its marker.

    ``cgroup_name`` is the cgroup as ``/proc/<pid>/cgroup`` shows it; ``uids`` the real uids
    the run's processes have (its owner's, the daemon's): a process of another uid carrying the
    marker is not the run's (None: any uid, a record of an earlier release).
    """

    __slots__ = ("cgroup", "cgroup_name", "run_sluid", "uids")

    def __init__(self, run_sluid: str, cgroup: Path | None = None, cgroup_name: str = "",
                 uids: frozenset[int] | None = None) -> None:
        self.run_sluid, self.cgroup, self.cgroup_name = run_sluid, cgroup, cgroup_name
        self.uids = uids

    def __repr__(self) -> str:
        return (f"RunScope({self.run_sluid!r}, {self.cgroup!r}, {self.cgroup_name!r}, "
                f"{self.uids!r})")

    def _needle(self) -> bytes:
        return f"\0{MARKER}={self.run_sluid}\0".encode()

    def _member(self, root: int | None, *, marker: bool = True) -> Callable[[int], bool]:
        needle, relative, uids = self._needle(), self.cgroup_name, self.uids

        def member(pid: int) -> bool:
            return ((marker and _marked(pid, needle, uids))
                    or (bool(relative) and _in_cgroup(pid, relative))
                    or (root is not None and _descends_from(pid, root)))
        return member

    def pids(self, root: int | None = None, *, marker: bool = True) -> set[int]:
        """Live processes of the run (never this process, ``root`` itself or pid 1).

        ``root`` is a live supervisor of the run: its descendants belong to the run. Without
        ``marker``, by cgroup and subtree alone (no environment is read).
        """
        found = _cgroup_pids(self.cgroup) if self.cgroup is not None else set()
        needle = self._needle()
        children: dict[int, list[int]] = {}
        alive: set[int] = set()
        for pid in _pids():
            stat = _stat(pid)
            if stat is None or stat[1] in "ZX":
                continue
            alive.add(pid)
            if root is not None:
                children.setdefault(stat[0], []).append(pid)
            if marker and stat[0] != 2 and _marked(pid, needle, self.uids):  # kthreadd: no env
                found.add(pid)
        stack = [root] if root is not None else []
        while stack:
            for child in children.get(stack.pop(), ()):
                found.add(child)
                stack.append(child)
        found.difference_update({os.getpid(), 1, root or 0})
        return found & alive

    def cgroup_pids(self) -> set[int]:
        """The processes in the run's cgroup and its sub-cgroups, from ``cgroup.procs`` (no
        scan of /proc; none without a cgroup)."""
        return _cgroup_pids(self.cgroup) if self.cgroup is not None else set()

    def cgroup_populated(self) -> bool:
        """Whether a live process is in the run's cgroup or a sub-cgroup of it
        (:func:`cgroup_populated`); False without a cgroup."""
        return self.cgroup is not None and cgroup_populated(str(self.cgroup))

    def signal(self, sig: int, root: int | None = None) -> int:
        """Send ``sig`` to every process of the run; returns how many were signalled. With its
        live supervisor (``root``), by subtree and cgroup alone, as :func:`signal_scopes`: the
        daemon's loop signals a run it kills (``scancel``) this way, and reading the owner's
        environments there held it for ever as long as they were many and large (red team,
        7 Dec 2026)."""
        marker = root is None
        member = self._member(root, marker=marker)
        return sum(_send(pid, sig, member) for pid in sorted(self.pids(root, marker=marker)))

    def kill_all(self, timeout_s: float, root: int | None = None,
                 reap: Callable[[], None] | None = None) -> bool:
        """SIGKILL the run until nothing of it is left; False if some survive ``timeout_s``
        (uninterruptible sleep). ``reap`` collects the caller's dead children on each turn."""
        deadline = time.monotonic() + timeout_s
        pause = 0.005
        member = self._member(root)
        while True:
            if reap is not None:
                reap()
            left = self.pids(root)  # one scan of /proc a turn: none at all when nothing is left
            if not left:
                return True
            if time.monotonic() >= deadline:
                return False
            if self.cgroup is not None:
                with contextlib.suppress(OSError):
                    (self.cgroup / "cgroup.kill").write_text("1")
            for pid in sorted(left):
                _send(pid, signal.SIGKILL, member)
            time.sleep(pause)
            pause = min(pause * 2, 0.2)
