"""The sluice front and its command server (cli/shim/sluice_front.c, cli/command_server.py).

Each test builds the front into a throw-away virtualenv skeleton (its ``bin/python`` is this
interpreter, its ``lib`` this virtualenv's), with its own ``XDG_RUNTIME_DIR``, and runs real
processes: the front, the server it starts, and the children that run the calls.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import struct
import subprocess
import threading
import time
from pathlib import Path

import pytest

from cli.command_server import HOT, parse_call
from tests.front_venv import ROOT

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")


class Front:
    def __init__(self, bin_dir: Path, run_dir: Path) -> None:
        self.program = bin_dir / "sluice"
        self.run_dir = run_dir

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("SLUICE_", "SLURM_", "KAFKA_"))}
        env.update({"XDG_RUNTIME_DIR": str(self.run_dir), "PYTHONPATH": str(ROOT),
                    "SLUICE_AUTH": "none", "SLUICE_API": "127.0.0.1:9", **extra})
        return env

    def call(self, *argv: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(self.program), *argv], env=self.env(**extra),
                              capture_output=True, text=True, timeout=60, check=False)

    def server_pids(self, under: str = "") -> list[int]:
        """The servers whose socket is under ``under`` (default: the run directory)."""
        where = (under or str(self.run_dir)).encode()
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                words = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"cli.command_server" in words and any(w.startswith(where) for w in words):
                found.append(int(entry.name))
        return [pid for pid in found if _ppid(pid) not in found]  # not the calls' children

    def wait_server(self, **extra: str) -> int:
        """Call until a server answers (the first call starts one in the background)."""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            self.call("submit", "--help", **extra)
            where = (Path(extra["TMPDIR"]) / f"sluice-{os.getuid()}" if "TMPDIR" in extra
                     else self.run_dir / "sluice")
            socks = [p for p in where.glob("cmd-*") if p.is_socket()]
            pids = self.server_pids(str(where))
            if socks and pids:
                return pids[0]
            time.sleep(0.2)
        raise AssertionError("no command server started")

    def stop(self) -> None:
        """End every server this front started, wherever its socket is (they all run this
        skeleton's interpreter)."""
        python = str(self.program.parent / "python").encode()
        for entry in Path("/proc").iterdir():
            try:
                words = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if words[:1] == [python] and b"cli.command_server" in words:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(entry.name), signal.SIGTERM)


def _ppid(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("PPid:"):
                return int(line.split()[1])
    except OSError:
        pass
    return -1


def test_a_served_call_prints_and_ends_as_the_python_cli(front: Front) -> None:
    front.wait_server()
    for argv in (["submit", "--bogus"], ["submit", "--help"], ["cancel"], ["hold", "--help"],
                 ["submit", "-N", "x", "--", "true"]):
        served = front.call(*argv)
        plain = front.call(*argv, SLUICE_COMMAND_SERVER="off")
        assert (served.returncode, served.stdout, served.stderr) == (
            plain.returncode, plain.stdout, plain.stderr), argv
    assert front.call("submit", "--bogus").returncode == 2


def test_a_served_call_runs_in_the_servers_child_with_the_callers_world(
        front: Front, tmp_path: Path) -> None:
    """The child that runs the call is the server's, in the caller's directory, with the
    caller's umask and environment: it reaches the views' API the caller named."""
    server = front.wait_server()
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    seen: list[tuple[str, str]] = []  # (cwd, umask) of the server's live children

    def answer() -> None:
        conn, _ = listener.accept()
        with conn:
            try:
                for pid in _children(server):  # the call's child, maybe an earlier one ending
                    try:
                        umask = next(line.split()[1] for line in
                                     Path(f"/proc/{pid}/status").read_text().splitlines()
                                     if line.startswith("Umask:"))
                        seen.append((str(Path(f"/proc/{pid}/cwd").readlink()), umask))
                    except (OSError, StopIteration):
                        continue  # it ended meanwhile
            finally:  # the call always gets its answer: a failure here is the assert's
                conn.recv(65536)
                body = b'{"error": "not here (front test)"}'
                conn.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\n"
                             b"Content-Length: %d\r\nConnection: close\r\n\r\n%s"
                             % (len(body), body))

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    work = tmp_path / "work dir"
    work.mkdir()
    done = subprocess.run(
        ["sh", "-c", 'umask 027; exec "$0" "$@"', str(front.program), "submit", "--", "true"],
        env=front.env(SLUICE_API=f"127.0.0.1:{port}"), cwd=work,
        capture_output=True, text=True, timeout=60, check=False)
    thread.join(10)
    listener.close()
    assert done.returncode == 1, done.stderr
    assert "not here (front test)" in done.stderr
    assert (str(work), "0027") in seen, seen
    # the port it reached is in the caller's environment only, not in the server's
    assert f":{port}".encode() not in Path(f"/proc/{server}/environ").read_bytes()


def _children(pid: int) -> list[int]:
    """The live (not zombie) children of ``pid``."""
    return [int(p.name) for p in Path("/proc").iterdir()
            if p.name.isdigit() and _ppid(int(p.name)) == pid and _alive(int(p.name))]


def test_the_server_keeps_none_of_the_first_callers_secrets(front: Front) -> None:
    front.call("submit", "--help", SLUICE_JWT="secret-token-1")
    server = front.wait_server()
    environ = Path(f"/proc/{server}/environ").read_bytes()
    assert b"secret-token-1" not in environ
    assert b"PYTHONPATH=" in environ


def test_a_changed_module_ends_the_server_and_the_call_still_runs(
        front: Front, tmp_path: Path) -> None:
    """A server never runs code older than its sources: after a change it refuses, the call
    runs through the Python CLI, and the next server loads the new code."""
    tree = tmp_path / "tree"
    shutil.copytree(ROOT / "cli", tree / "cli", ignore=shutil.ignore_patterns("__pycache__"))
    for package in ("schemas", "streams", "agents"):
        (tree / package).symlink_to(ROOT / package)
    env = {"PYTHONPATH": str(tree)}
    old = [front.wait_server(**env)]
    source = tree / "cli" / "submit.py"
    source.write_text(source.read_text().replace('help="node count, or min-max"',
                                                 'help="NEW node count"'))
    for _ in range(5):  # refused by the old server, then served by a new one: never old code
        done = front.call("submit", "--help", **env)
        assert done.returncode == 0 and "NEW node count" in done.stdout
    deadline = time.monotonic() + 30
    while any(_alive(pid) for pid in old) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(pid) for pid in old)


def _alive(pid: int) -> bool:
    try:
        state = next(line for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                     if line.startswith("State:"))
    except (OSError, StopIteration):
        return False
    return "Z" not in state


def test_no_server_in_a_directory_that_is_not_the_users_own(front: Front, tmp_path: Path) -> None:
    """An XDG_RUNTIME_DIR open to others is not used; $TMPDIR/sluice-UID is when it is the
    user's own with mode 0700, and not when it is open to others. A call never depends on
    either: without a server it runs through the Python CLI."""
    front.run_dir.chmod(0o755)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    front.wait_server(TMPDIR=str(tmp))
    assert not (front.run_dir / "sluice").exists()
    private = tmp / f"sluice-{os.getuid()}"
    assert [p.name for p in private.glob("cmd-*") if p.is_socket()]
    for pid in front.server_pids(str(private)):
        os.kill(pid, signal.SIGTERM)
    other = tmp_path / "other"
    other.mkdir()
    (other / f"sluice-{os.getuid()}").mkdir(mode=0o755)
    (other / f"sluice-{os.getuid()}").chmod(0o755)
    for _ in range(3):
        done = front.call("submit", "--bogus", TMPDIR=str(other))
        assert done.returncode == 2 and "unrecognized arguments" in done.stderr
    time.sleep(0.5)
    assert not list((other / f"sluice-{os.getuid()}").iterdir())


def test_inside_a_job_the_python_cli_runs(front: Front) -> None:
    for _ in range(3):
        assert front.call("submit", "--help", SLUICE_JOB_SLUID="s00000000000001").returncode == 0
    time.sleep(0.5)
    assert not front.server_pids()


def test_another_user_cannot_use_a_server(front: Front) -> None:
    if os.getuid() != 0:
        pytest.skip("needs root to act as another user")
    front.wait_server()
    [sock] = [p for p in (front.run_dir / "sluice").glob("cmd-*") if p.is_socket()]
    front.run_dir.chmod(0o755)  # even with the directories opened, the server's check holds
    (front.run_dir / "sluice").chmod(0o755)
    sock.chmod(0o777)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child process
        try:
            os.setgid(65534)
            os.setuid(65534)
            data = b"/\x0022\x002\x00submit\x00--help\x00"
            with socket.socket(socket.AF_UNIX) as s:
                s.connect(str(sock))
                s.settimeout(10)
                socket.send_fds(s, [struct.pack("=I", len(data))], [0, 1, 2])
                s.sendall(data)
                os._exit(0 if s.recv(16) == b"" else 3)  # closed unanswered, not 'P' + pid
        except OSError:
            os._exit(0)
        os._exit(4)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_a_call_is_parsed_whole_or_refused() -> None:
    call = parse_call(b"/w\x0022\x002\x00submit\x00--\x00A=1\x00A=2\x00B=x=y\x00")
    assert (call.cwd, call.umask, call.argv) == ("/w", 0o22, ["submit", "--"])
    assert call.env == {"A": "1", "B": "x=y"}
    for bad in (b"", b"/w\x0022\x00", b"/w\x0022\x005\x00submit\x00", b"/w\x00999\x000\x00",
                b"/w\x0022\x00x\x00", b"/w\x0022\x000"):
        with pytest.raises(ValueError):
            parse_call(bad)


def test_ctrl_c_reaches_the_served_call(front: Front) -> None:
    """A SIGINT to the front (a terminal's ^C) interrupts the call in the server's child, which
    ends as the Python CLI would: its message and status 130."""
    front.wait_server()
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    proc = subprocess.Popen([str(front.program), "submit", "--", "true"],
                            env=front.env(SLUICE_API=f"127.0.0.1:{port}"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_interruptible)  # noqa: PLW1509 -- no thread yet
    listener.settimeout(30)
    conn, _ = listener.accept()  # the call waits on the API: interrupt it there
    with conn:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    listener.close()
    assert proc.returncode == 130, err
    assert "sluice submit: interrupted" in err


def test_a_call_with_other_groups_gets_a_server_of_its_own(front: Front) -> None:
    """A credential carries the caller's gid: a call made under other groups (sg, newgrp)
    is never served by a server started under the first ones."""
    if os.getuid() != 0:
        pytest.skip("needs root to change its groups")
    front.wait_server()
    sockets = {p.name for p in (front.run_dir / "sluice").glob("cmd-*") if p.is_socket()}
    assert len(sockets) == 1

    def other_groups() -> None:
        os.setgroups([65534])
        os.setgid(65534)

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        subprocess.run([str(front.program), "submit", "--help"], env=front.env(),
                       capture_output=True, timeout=60, check=False, preexec_fn=other_groups)
        now = {p.name for p in (front.run_dir / "sluice").glob("cmd-*") if p.is_socket()}
        if len(now) == 2:
            break
        time.sleep(0.2)
    assert len(now) == 2 and sockets < now
    servers = front.server_pids()
    gids = {next(line.split()[1] for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                 if line.startswith("Gid:")) for pid in servers}
    assert gids == {"0", "65534"}


def test_the_front_and_the_server_agree_on_the_hot_commands() -> None:
    source = (ROOT / "cli" / "shim" / "sluice_front.c").read_text()
    array = source[source.index("HOT[] = {"):].split("};")[0]
    front_hot = tuple(word.strip().strip('"') for word in array.split("{")[1].split(",")
                      if word.strip() != "NULL")
    assert front_hot == HOT
    from cli.main import _HOT
    assert set(HOT) <= set(_HOT)  # each parsed with its own module only


def _interruptible() -> None:
    """SIGINT as a terminal's shell leaves it: a session started in the background of a
    non-interactive shell (CI's) inherits it ignored, and the front, as the Python CLI, then
    rightly ignores it too."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
