"""A run's command started both ways, on real processes as root: through the C exec helper
(``agents/node/helper/sluice_exec.c``, spawned by the supervisor) and through the Python child
(``supervise._child``, the fallback where the helper is not built; ``SLUICE_EXEC_HELPER=off``).
Both must switch to the owner, open the output files as the owner, fail the same steps with
the same errors, die with their supervisor, join the run's cgroup and pass the job's
environment and argv exactly."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agents.node import exec_helper, supervise
from agents.node.proctrack import CgroupTree, RunScope
from agents.node.supervised import Supervised
from agents.node.supervisor_server import SupervisorServer
from tests.unit.node.procs import alive_with, token, wait_count, wait_gone

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="switching users needs root")

NOBODY = pwd.getpwnam("nobody")
OWNER = {"uid": NOBODY.pw_uid, "gid": NOBODY.pw_gid, "groups": [NOBODY.pw_gid]}
ENV = {"PATH": "/usr/bin:/bin"}


@pytest.fixture(scope="module")
def helper_built() -> str:
    """The helper, built into its place if it is not (``make install`` builds it)."""
    if not os.access(exec_helper.BINARY, os.X_OK):
        if exec_helper.compiler() is None:
            pytest.skip("no C compiler to build the exec helper")
        exec_helper.build()
    return str(exec_helper.BINARY)


@pytest.fixture(params=["helper", "python"])
def way(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Which way supervisors started from here start their command (read by each supervisor
    process at its start, from the environment it inherits)."""
    if request.param == "helper":
        request.getfixturevalue("helper_built")
        monkeypatch.delenv("SLUICE_EXEC_HELPER", raising=False)
    else:
        monkeypatch.setenv("SLUICE_EXEC_HELPER", "off")
    return str(request.param)


@pytest.fixture
def shared() -> Iterator[Path]:
    """A 0777 directory inside a root-owned 0755 one (``nobody`` may write only in the first)."""
    base = Path(tempfile.mkdtemp(prefix="exec4-helper-", dir="/tmp"))
    base.chmod(0o755)
    work = base / "work"
    work.mkdir()
    work.chmod(0o777)
    try:
        yield work
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _run_sluid() -> str:
    return "sX" + uuid.uuid4().hex[:12].upper()


def _start(cwd: Path, argv: list[str], env: dict[str, str] | None = None,
           output: tuple[str, str] = ("out", ""), scope: RunScope | None = None,
           server: SupervisorServer | None = None, owner: Any = OWNER) -> Supervised:
    scope = scope or RunScope(_run_sluid())
    return Supervised.start(scope, argv, {**(env or ENV), "SLUICE_RUN_SLUID": scope.run_sluid},
                            cwd, subprocess.DEVNULL, subprocess.DEVNULL, cwd, owner=owner,
                            output=output, server=server)


def test_the_exec_helper_is_found_unless_turned_off(helper_built: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SLUICE_EXEC_HELPER", raising=False)
    assert supervise.exec_helper() == helper_built
    monkeypatch.setenv("SLUICE_EXEC_HELPER", "off")
    assert supervise.exec_helper() == ""


def test_the_helper_starts_the_command_without_a_fork_of_the_supervisor(
        helper_built: str, shared: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``_spawn`` in this process, as a supervisor: the command runs, and ``os.fork`` (the
    Python child's way) is never called."""
    monkeypatch.setattr(supervise, "_HELPER", helper_built)

    def no_fork() -> int:
        raise AssertionError("forked: the helper was not used")

    monkeypatch.setattr(os, "fork", no_fork)
    ours, theirs = os.pipe()
    spec = {"argv": ["sh", "-c", "id -u > spawned"], "env": ENV, "cwd": str(shared),
            "user": OWNER}
    pid = supervise._spawn(spec, "", theirs)
    os.close(theirs)
    os.close(ours)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    assert (shared / "spawned").read_text() == f"{NOBODY.pw_uid}\n"


@pytest.mark.parametrize("libc", [False, True])
def test_both_builds_of_the_helper_start_the_command_as_its_owner(
        libc: bool, shared: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The libc-free build (x86_64) and the glibc one (elsewhere), each spawned by ``_spawn``
    in this process: owner, environment, argv, and a failure's report."""
    if exec_helper.compiler() is None:
        pytest.skip("no C compiler to build the exec helper")
    built = tmp_path / "sluice-exec"
    how = exec_helper.build(built, libc=libc)
    assert ("libc" not in how) == libc, how
    monkeypatch.setattr(supervise, "_HELPER", str(built))
    env = {"PATH": "/usr/bin:/bin", "X": "a=b", "U": "é"}
    spec = {"argv": ["sh", "-c", 'id -u; echo "$X $U $0 $1"', "zero", "o n e"], "env": env,
            "cwd": str(shared), "user": OWNER, "stdout": "out"}
    ours, theirs = os.pipe()
    pid = supervise._spawn(spec, "", theirs)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    assert (shared / "out").read_text() == f"{NOBODY.pw_uid}\na=b é zero o n e\n"
    with pytest.raises(supervise._StartError, match="working directory /nonexistent: No such"):
        supervise._spawn({**spec, "cwd": "/nonexistent"}, "", theirs)
    os.close(theirs)
    os.close(ours)


def test_the_command_runs_as_its_owner_with_the_owners_groups_and_output_file(
        way: str, shared: Path) -> None:
    run = _start(shared, ["sh", "-c", "id -u; id -g; id -G; pwd"])
    assert run.wait(30) == 0
    out = shared / "out"
    assert out.read_text().split() == [str(NOBODY.pw_uid), str(NOBODY.pw_gid),
                                       str(NOBODY.pw_gid), str(shared)]
    assert (out.stat().st_uid, out.stat().st_gid) == (NOBODY.pw_uid, NOBODY.pw_gid)
    assert out.stat().st_mode & 0o777 == 0o666 & ~_umask()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@pytest.mark.parametrize(("mask", "mode"), [("0077", 0o600), ("0027", 0o640), ("077", 0o600)])
def test_the_output_file_and_the_jobs_files_take_the_submitters_umask(
        way: str, shared: Path, mask: str, mode: int) -> None:
    """Red team, 6 Dec 2026: a job's files took the node daemon's umask (022 under systemd and
    most shells), so the output of a user whose umask is 077 was readable by every user of
    the host, and so were the files the job made. As Slurm's slurmstepd, the command starts
    under the submitter's umask, ``SLURM_UMASK`` in the job's environment (sbatch puts it
    there)."""
    run = _start(shared, ["sh", "-c", "umask; touch made"], env={**ENV, "SLURM_UMASK": mask})
    assert run.wait(30) == 0
    assert (shared / "out").read_text() == f"{int(mask, 8):04o}\n"
    assert (shared / "out").stat().st_mode & 0o777 == mode
    assert (shared / "made").stat().st_mode & 0o777 == mode


@pytest.mark.parametrize("mask", ["", "8", "0o77", "-1", "1777", " 077", "x"])
def test_a_umask_that_is_not_three_octal_digits_leaves_the_daemons(way: str, shared: Path,
                                                                   mask: str) -> None:
    run = _start(shared, ["sh", "-c", "umask"], env={**ENV, "SLURM_UMASK": mask})
    assert run.wait(30) == 0
    assert (shared / "out").read_text() == f"{_umask():04o}\n"


def test_stderr_goes_with_stdout_unless_given_its_own_file(way: str, shared: Path) -> None:
    assert _start(shared, ["sh", "-c", "echo out; echo err >&2"]).wait(30) == 0
    assert sorted((shared / "out").read_text().split()) == ["err", "out"]
    assert _start(shared, ["sh", "-c", "echo o; echo e >&2"], output=("o", "e")).wait(30) == 0
    assert ((shared / "o").read_text(), (shared / "e").read_text()) == ("o\n", "e\n")
    assert (shared / "e").stat().st_uid == NOBODY.pw_uid


def test_a_symlink_as_the_output_file_is_refused(way: str, shared: Path) -> None:
    victim = shared.parent / "victim"
    victim.write_text("untouched\n")
    (shared / "out").symlink_to(victim)
    with pytest.raises(OSError, match=r"^\[Errno 40\] output file out: Too many levels") as err:
        _start(shared, ["echo", "overwritten"])
    assert err.value.filename == "out"
    assert victim.read_text() == "untouched\n"


def test_an_output_file_the_owner_may_not_write_fails_the_output_step(way: str,
                                                                        shared: Path) -> None:
    with pytest.raises(PermissionError, match=r"error file \.\./e: Permission denied"):
        _start(shared, ["true"], output=("o", "../e"))  # the parent is root's, 0755
    assert not (shared.parent / "e").exists()


def test_a_missing_working_directory_fails_its_step_and_is_not_created(way: str,
                                                                         shared: Path) -> None:
    missing = shared / "no" / "such"
    scope = RunScope(_run_sluid())
    with pytest.raises(FileNotFoundError,
                       match=f"working directory {missing}: No such file or directory"):
        Supervised.start(scope, ["true"], ENV, missing, subprocess.DEVNULL, subprocess.DEVNULL,
                         shared, owner=OWNER)
    assert not (shared / "no").exists()


@pytest.mark.parametrize(("argv", "error", "text", "code"), [
    (["no-such-command-sluice"], FileNotFoundError,
     "exec no-such-command-sluice: No such file or directory", 127),
    (["/etc/passwd"], PermissionError, "exec /etc/passwd: Permission denied", 126),
])
def test_a_command_that_cannot_be_executed_gives_its_errno_and_exit_code(
        way: str, shared: Path, argv: list[str], error: type[OSError], text: str,
        code: int) -> None:
    number = errno.ENOENT if error is FileNotFoundError else errno.EACCES
    scope = RunScope(_run_sluid())
    spec = {"argv": argv, "env": ENV, "cwd": str(shared), "run_sluid": scope.run_sluid,
            "cgroup": "", "cgroup_name": "", "user": OWNER, "stdout": "", "stderr": ""}
    done = _supervise_alone(spec)
    assert done.returncode == code, done.stderr
    assert done.said == f"error {number} {argv[0]}\0{text}\nexit {code}\n"
    with pytest.raises(error, match=text):
        _start(shared, argv)


class _Done:
    def __init__(self, returncode: int, said: str, stderr: str) -> None:
        self.returncode, self.said, self.stderr = returncode, said, stderr


def _supervise_alone(spec: dict[str, Any]) -> _Done:
    """``python -I -S supervise.py`` with ``spec``, as the daemon starts one: its exit code and
    what it said on the lifeline."""
    ours, theirs = socket.socketpair()
    spec = {**spec, "lifeline": theirs.fileno()}
    done = subprocess.run([sys.executable, "-I", "-S", supervise.__file__, "x"],
                          input=json.dumps(spec).encode(), capture_output=True, timeout=60,
                          pass_fds=[theirs.fileno()], check=False)
    theirs.close()
    ours.settimeout(5)
    said = b""
    while chunk := ours.recv(4096):
        said += chunk
    ours.close()
    return _Done(done.returncode, said.decode(errors="replace"), done.stderr.decode())


def test_the_command_dies_when_its_supervisor_is_killed(way: str, shared: Path) -> None:
    t = token()
    server = SupervisorServer(shared)
    try:
        run = _start(shared, ["sleep", t], server=server)
        wait_count(t, 1)
        os.kill(run.pid, signal.SIGKILL)  # PR_SET_PDEATHSIG: the kernel kills the command
        assert wait_gone(t, 10) == []
        assert run.wait(10) == -signal.SIGKILL
    finally:
        server.close()


def test_the_command_is_in_the_runs_cgroup(way: str, shared: Path, tree: CgroupTree) -> None:
    run_sluid = _run_sluid()
    assert tree.create(run_sluid) is not None
    scope = tree.scope(run_sluid)
    assert _start(shared, ["cat", "/proc/self/cgroup"], scope=scope).wait(30) == 0
    assert f"0::{scope.cgroup_name}\n" in (shared / "out").read_text()


def test_the_environment_and_argv_reach_the_command_exactly(way: str, shared: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "EQUALS": "a=b==c", "EMPTY": "", "SPACES": " x  y ",
           "UNICODE": "héllo ✓ ñ", "NEWLINE": "one\ntwo", "LD_LIBRARY_PATH": "/nowhere"}
    scope = RunScope(_run_sluid())
    assert _start(shared, ["env", "-0"], env=env, scope=scope).wait(30) == 0
    entries = (shared / "out").read_bytes().split(b"\0")[:-1]
    got = dict(entry.decode().split("=", 1) for entry in entries)
    assert got == {**env, "SLUICE_RUN_SLUID": scope.run_sluid}
    argv = ["printf", "[%s]\\n", "a b", " c ", "", "d\te", "é"]
    assert _start(shared, argv, output=("argv", "")).wait(30) == 0
    assert (shared / "argv").read_text() == "[a b]\n[ c ]\n[]\n[d\te]\n[é]\n"


def test_path_is_searched_in_the_jobs_environment(way: str, shared: Path) -> None:
    bin_dir = shared / "bin"
    bin_dir.mkdir()
    (bin_dir / "mine").write_text("#!/bin/sh\necho mine $0\n")
    (bin_dir / "mine").chmod(0o755)
    env = {"PATH": f"/nonexistent:{bin_dir}:/usr/bin:/bin"}
    assert _start(shared, ["mine"], env=env).wait(30) == 0
    assert (shared / "out").read_text() == f"mine {bin_dir}/mine\n"


_PRELOAD = r"""
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
__attribute__((constructor)) static void mark(void) {
    char line[64];
    int fd = open(MARKS, O_WRONLY | O_APPEND | O_CREAT, 0666);
    if (fd >= 0) {
        snprintf(line, sizeof line, "uid=%d\n", (int)getuid());
        write(fd, line, strlen(line));
        close(fd);
    }
}
"""


def test_ld_preload_in_the_jobs_environment_reaches_only_the_command(way: str,
                                                                     shared: Path) -> None:
    """The helper runs as root: a loader variable of the job's environment must not load code
    into it (it is started with an empty environment and links no loader). The command itself,
    the owner's process, does load it (the variable works, so its absence means something)."""
    cc = exec_helper.compiler()
    if cc is None:
        pytest.skip("no C compiler to build the preloaded library")
    marks = shared / "marks"
    source = shared / "preload.c"
    source.write_text(_PRELOAD)
    library = shared / "preload.so"
    subprocess.run([cc, "-shared", "-fPIC", f'-DMARKS="{marks}"', "-o", str(library),
                    str(source)], check=True, capture_output=True)
    library.chmod(0o755)
    env = {**ENV, "LD_PRELOAD": str(library)}
    assert _start(shared, ["/usr/bin/true"], env=env).wait(30) == 0
    assert marks.read_text() == f"uid={NOBODY.pw_uid}\n"  # the command's alone, not root's


def test_a_job_without_an_owner_keeps_the_supervisors_user(way: str, shared: Path) -> None:
    assert _start(shared, ["id", "-u"], owner=None).wait(30) == 0
    assert (shared / "out").read_text() == f"{os.getuid()}\n"


def test_the_helper_refuses_words_it_was_not_given_by_a_supervisor(helper_built: str,
                                                                   shared: Path) -> None:
    """Malformed argv: it says ``setup`` and EINVAL on the report descriptor, runs nothing."""
    ours, theirs = os.pipe()
    words = [helper_built, str(os.getpid()), str(theirs), "-", "0", "", "", "", "0",
             str(shared), "", "", "0", "1", "not-the-separator", "touch", "ran"]
    done = subprocess.run(words, pass_fds=[theirs], env={}, check=False)
    os.close(theirs)
    said = os.read(ours, 4096)
    os.close(ours)
    assert done.returncode == 126
    assert said == b"setup\x0022\x00\x00"
    assert not (shared / "ran").exists()


def _flags(fdinfo: str) -> int:
    """The ``flags:`` of a ``/proc/PID/fdinfo/N`` text (octal)."""
    return int(next(line.split()[1] for line in fdinfo.splitlines()
                    if line.startswith("flags:")), 8)


def test_a_fifo_without_a_reader_as_the_output_file_fails_at_once(way: str,
                                                                   shared: Path) -> None:
    """An open of a FIFO for writing waits for a reader: the owner's FIFO as the output file
    must not hold the start (the daemon waits for it, 30 s, its loop on hold) nor leave the
    supervisor blocked, deaf to its lifeline. Opened non-blocking: ENXIO, the output step."""
    os.mkfifo(shared / "fifo", 0o666)
    (shared / "fifo").chmod(0o666)
    started = time.monotonic()
    with pytest.raises(OSError, match=r"^\[Errno 6\] output file fifo: No such device"):
        Supervised.start(RunScope(_run_sluid()), ["echo", "blocked"], ENV, shared,
                         subprocess.DEVNULL, subprocess.DEVNULL, shared, owner=OWNER,
                         output=("fifo", ""), ready_timeout_s=10)
    assert time.monotonic() - started < 5


def test_output_files_reach_the_command_blocking_even_a_fifo_with_a_reader(
        way: str, shared: Path) -> None:
    """The files are opened non-blocking (a FIFO must not hold the start); the command gets
    them blocking, as a file opened plainly (``O_APPEND`` kept)."""
    assert _start(shared, ["grep", "^flags:", "/proc/self/fdinfo/1"]).wait(30) == 0
    flags = _flags((shared / "out").read_text())
    assert flags & os.O_APPEND and not flags & os.O_NONBLOCK, oct(flags)
    os.mkfifo(shared / "fifo", 0o666)
    (shared / "fifo").chmod(0o666)
    reader = os.open(shared / "fifo", os.O_RDONLY | os.O_NONBLOCK)
    try:
        run = _start(shared, ["grep", "^flags:", "/proc/self/fdinfo/1"], output=("fifo", ""))
        assert run.wait(30) == 0
        flags = _flags(os.read(reader, 4096).decode())
        assert not flags & os.O_NONBLOCK, oct(flags)
    finally:
        os.close(reader)


@pytest.mark.parametrize("how", ["helper", "python"])
def test_a_command_whose_supervisor_is_no_longer_its_parent_is_not_started(
        how: str, shared: Path) -> None:
    """``PR_SET_PDEATHSIG`` is set after the switch (which clears it): a supervisor that died
    before is no longer the parent, and the command must not run unsupervised. Both ways check
    the parent after setting it (here: a parent pid that is not the real one)."""
    ours, theirs = os.pipe()
    not_parent = "1"
    if how == "helper":
        helper = _built_helper()
        env_fd = supervise._memfd(b"PATH=/usr/bin:/bin\0")
        os.set_inheritable(env_fd, True)
        words = [helper, not_parent, str(theirs), "-", "0", "", str(OWNER["uid"]),
                 str(OWNER["gid"]), "1", str(OWNER["gid"]), str(shared), "", "", str(env_fd),
                 "1", "--", "touch", "ran"]
        done = subprocess.run(words, pass_fds=[theirs, env_fd], env={}, check=False)
        os.close(env_fd)
        code = done.returncode
    else:
        spec = {"argv": ["touch", "ran"], "env": ENV, "cwd": str(shared), "user": OWNER}
        lifeline = os.open(os.devnull, os.O_RDONLY)
        pid = os.fork()
        if pid == 0:  # pragma: no cover - _child ends in exec or _exit
            try:
                supervise._child(spec, "", theirs, lifeline, int(not_parent))
            finally:
                os._exit(125)
        os.close(lifeline)
        code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    os.close(theirs)
    said = os.read(ours, 4096)
    os.close(ours)
    assert code == 126
    step = f"switching to uid {OWNER['uid']} gid {OWNER['gid']}"
    assert said.split(b"\0")[:2] == [step.encode(), str(errno.ESRCH).encode()]
    assert not (shared / "ran").exists()


def _built_helper() -> str:
    if not os.access(exec_helper.BINARY, os.X_OK):
        if exec_helper.compiler() is None:
            pytest.skip("no C compiler to build the exec helper")
        exec_helper.build()
    return str(exec_helper.BINARY)


@pytest.mark.parametrize(("argv", "env", "output", "text"), [
    ([""], ENV, ("out", ""), "exec: execve: argv first element cannot be empty"),
    (["echo", "a\0b"], ENV, ("out", ""), "exec echo: embedded null byte"),
    (["true"], {**ENV, "X": "a\0b"}, ("out", ""), "exec true: embedded null byte"),
    (["true"], ENV, ("o\0ut", ""), "output file o\\0ut: embedded null byte"),
])
def test_words_execve_cannot_take_are_refused_the_same_way_by_both(
        way: str, shared: Path, argv: list[str], env: dict[str, str],
        output: tuple[str, str], text: str) -> None:
    """An empty command name, a NUL in a word (the records may carry one): the same clear
    refusal both ways, the NUL of a file name shown escaped (the report's fields are split at
    NULs); nothing runs."""
    with pytest.raises(OSError) as err:
        _start(shared, argv, env=env, output=output)
    assert str(err.value) == text
    assert [f.read_bytes() for f in shared.iterdir()] in ([], [b""])  # nothing ran


def test_a_supervisor_whose_daemon_dies_while_the_command_is_starting_kills_it(
        shared: Path) -> None:
    """Before its exec, the command's process may block as the owner (an open on a hung NFS
    or FUSE mount of the owner's): the supervisor, waiting for the exec, must still watch its
    lifeline and kill the run when the daemon dies. A stand-in for the helper that blocks (it
    keeps the report pipe open and never execs) shows it."""
    t = token()
    stuck = shared / "stuck"
    stuck.write_text(f"#!/bin/sh\nexec sleep {t}\n")  # the report descriptor stays open
    stuck.chmod(0o755)
    ours, theirs = socket.socketpair()
    spec = {"argv": ["true"], "env": ENV, "cwd": str(shared), "run_sluid": _run_sluid(),
            "cgroup": "", "cgroup_name": "", "user": OWNER, "stdout": "", "stderr": "",
            "lifeline": theirs.fileno()}
    pid = os.fork()
    if pid == 0:  # pragma: no cover - ends in os._exit
        code = 125
        try:
            ours.close()
            supervise._HELPER = str(stuck)
            code = supervise.run(spec)
        finally:
            os._exit(code)
    theirs.close()
    try:
        wait_count(t, 1)
        ours.close()  # the daemon dies
        assert wait_gone(t, 10) == []
        deadline = time.monotonic() + 10
        while (done := os.waitpid(pid, os.WNOHANG)) == (0, 0) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert done[0] == pid, "the supervisor did not end"
    finally:
        for left in alive_with(t):
            os.kill(left, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            if os.waitpid(pid, os.WNOHANG) == (0, 0):
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)


def test_the_jobs_environment_is_not_in_the_helpers_argv(helper_built: str,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Every user of the host can read a process's argv (``/proc/PID/cmdline``, ``ps``): the
    job's environment (sealed ``--export`` values among it) must not be in the helper's,
    which lives until the exec, as long as an open of the owner's blocks."""
    monkeypatch.setattr(supervise, "_HELPER", helper_built)
    spec = {"argv": ["printenv", "SECRET"], "env": {**ENV, "SECRET": "hunter2"},
            "cwd": "/", "user": OWNER}
    words = supervise._helper_argv(spec, "", 9, 10, 2)
    assert not [w for w in words if "hunter2" in w or w.startswith("PATH=")], words


def test_the_command_gets_no_descriptor_but_its_own(way: str, shared: Path) -> None:
    """0, 1, 2 only: no report pipe, lifeline, environment descriptor or daemon socket."""
    assert _start(shared, ["ls", "/proc/self/fd"]).wait(30) == 0
    assert sorted((shared / "out").read_text().split()) == ["0", "1", "2", "3"]  # 3: ls's own


@pytest.mark.parametrize(("data", "nenv"), [(b"A=1", 1), (b"A=1\0B=2\0", 1), (b"A=1\0", 2),
                                            (b"", 1)])
def test_the_helper_refuses_an_environment_that_is_not_the_one_announced(
        helper_built: str, shared: Path, data: bytes, nenv: int) -> None:
    """The environment descriptor must hold exactly NENV entries, each ended by a NUL:
    anything else is ``setup``, EINVAL, and nothing runs."""
    ours, theirs = os.pipe()
    env_fd = supervise._memfd(data)
    os.set_inheritable(env_fd, True)
    words = [helper_built, str(os.getpid()), str(theirs), "-", "0", "", "", "", "0",
             str(shared), "", "", str(env_fd), str(nenv), "--", "touch", "ran"]
    done = subprocess.run(words, pass_fds=[theirs, env_fd], env={}, check=False)
    os.close(theirs)
    os.close(env_fd)
    said = os.read(ours, 4096)
    os.close(ours)
    assert (done.returncode, said) == (126, b"setup\x0022\x00\x00")
    assert not (shared / "ran").exists()
