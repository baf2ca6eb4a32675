"""srun's stdin reaches its tasks (``-i``/``--input``) and ``srun --pty`` gives task 0 a
terminal of its own, end to end: real broker, worker, projections and node daemons; srun
outside a job makes its own allocation (cli/run_alloc.py)."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import time
from pathlib import Path

import pytest

from tests.e2e.allocations import ended_named, outside_env
from tests.e2e.harness import LocalSystem

pytestmark = [pytest.mark.kafka, pytest.mark.e2e, pytest.mark.slow]


def _srun(system: LocalSystem, argv: list[str], cwd: Path, stdin: bytes = b"",
          ) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["srun", *argv], cwd=cwd, env=outside_env(system), input=stdin,
                          capture_output=True, timeout=240, check=False)


def test_stdin_goes_to_every_task_by_default_to_one_or_to_none(
    system: LocalSystem, tmp_path: Path,
) -> None:
    system.start_core()
    system.start_nodes(2)
    system.wait_nodes_idle(2)
    lines = b"".join(b"line %d\n" % i for i in range(2000))  # more than a pipe holds
    every = _srun(system, ["-N", "2", "-n", "2", "-l", "-J", "every", "sh", "-c",
                           "wc -l | tr -d ' '"], tmp_path, lines)
    assert every.returncode == 0, every.stdout + every.stderr + system.log_tail().encode()
    assert sorted(every.stdout.decode().split("\n")) == ["", "0: 2000", "1: 2000"], every.stdout
    one = _srun(system, ["-N", "2", "-n", "2", "-l", "--input=1", "-J", "one", "sh", "-c",
                         "cat | wc -c | tr -d ' '"], tmp_path, b"abc")
    assert one.returncode == 0, one.stdout + one.stderr
    assert sorted(one.stdout.decode().split("\n")) == ["", "0: 0", "1: 3"], one.stdout
    none = _srun(system, ["--input", "none", "-J", "none", "cat"], tmp_path, b"ignored\n")
    assert (none.returncode, none.stdout) == (0, b""), none.stdout + none.stderr
    bad = _srun(system, ["-n", "2", "--input=7", "true"], tmp_path)
    assert bad.returncode == 2 and b"--input=7" in bad.stderr, bad.stderr
    assert b"Traceback" not in bad.stderr
    assert ended_named(system, "one")["state"] == "COMPLETED"


def _read_until(fd: int, wanted: bytes, timeout_s: float) -> bytes:
    seen, deadline = b"", time.monotonic() + timeout_s
    while wanted not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    return seen


def test_srun_pty_runs_an_interactive_shell_in_a_terminal_of_its_own(
    system: LocalSystem, tmp_path: Path,
) -> None:
    system.start_core()
    system.start_nodes(1)
    system.wait_nodes_idle(1)
    pid, fd = pty.fork()
    if pid == 0:  # pragma: no cover - the child execs srun in the new terminal
        os.chdir(tmp_path)
        os.execvpe("srun", ["srun", "--pty", "-J", "shell", "sh", "-i"], outside_env(system))
    status = None
    try:
        os.write(fd, b"tty; test -t 0 && echo IS-A-TTY; stty size; echo $((6*7))-ok\n")
        seen = _read_until(fd, b"42-ok", 120)
        assert b"42-ok" in seen and b"IS-A-TTY" in seen, seen + system.log_tail().encode()
        assert b"/dev/pts/" in seen, seen
        os.write(fd, b"exit 5\n")
        seen += _read_until(fd, b"\x00never", 30)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 5, seen
    finally:
        if status is None:  # failed before srun ended: it must not outlive the test
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        os.close(fd)
    job = ended_named(system, "shell")
    assert (job["state"], job["exit_code"]) == ("FAILED", 5), job


def test_pty_without_a_terminal_is_refused_in_one_line(system: LocalSystem,
                                                         tmp_path: Path) -> None:
    system.start_core()
    done = _srun(system, ["--pty", "bash"], tmp_path)
    assert done.returncode == 2 and b"--pty needs a terminal" in done.stderr, done.stderr
    assert b"Traceback" not in done.stderr
