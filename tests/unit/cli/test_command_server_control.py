"""The served call under the caller's control: job control from an interactive shell (Ctrl-Z,
``fg``), the caller's cgroup (its limits, ``cgroup.kill``), and a connection that never sends
its go (cli/shim/sluice_front.c, cli/command_server.py)."""

from __future__ import annotations

import contextlib
import os
import pty
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cli.command_server import GO_S
from tests.unit.cli.test_command_server import Front, _alive, _children
from tests.unit.node.procs import cgroup2_mount

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "gone"


def _until(check: Callable[[], bool], seconds: float = 15.0) -> bool:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


class Terminal:
    """An interactive bash on a pseudo-terminal (job control on), its output kept."""

    def __init__(self, env: dict[str, str]) -> None:
        self.pid, self.master = pty.fork()
        if self.pid == 0:  # pragma: no cover - the shell
            os.execvpe("bash", ["bash", "--norc", "--noprofile", "-i"], {**env, "PS1": "$ "})
        self.output = b""

    def type(self, text: bytes) -> None:
        os.write(self.master, text)

    def read(self) -> str:
        while select.select([self.master], [], [], 0.05)[0]:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                break
            if not chunk:
                break
            self.output += chunk
        return self.output.decode(errors="replace")

    def close(self) -> None:
        try:
            os.kill(self.pid, 9)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        os.close(self.master)


def _waiting_api() -> tuple[socket.socket, int]:
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(30)
    return listener, listener.getsockname()[1]


def _answer(conn: socket.socket) -> None:
    conn.recv(65536)
    body = b'{"error": "not here (front test)"}'
    conn.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body))
    conn.close()


def test_ctrl_z_stops_the_served_call_and_fg_continues_it(front: Front) -> None:
    """In an interactive shell, Ctrl-Z stops the Python CLI's process (the terminal's
    SIGTSTP to its foreground group) and ``fg`` continues it. The served call's process is the
    server's child, in another session: it ran on while the shell said "Stopped"."""
    server = front.wait_server()
    before = set(_children(server))
    listener, port = _waiting_api()
    term = Terminal(front.env(SLUICE_API=f"127.0.0.1:{port}"))
    try:
        term.type(f'"{front.program}" submit -- true; echo "status=$?"\n'.encode())
        conn, _ = listener.accept()  # the call waits on the API: stop it there
        [child] = set(_children(server)) - before
        assert _state(child) in "SR"
        term.type(b"\x1a")
        assert _until(lambda: "Stopped" in term.read()), term.read()
        assert _until(lambda: _state(child) == "T"), "the served call ran on after Ctrl-Z"
        time.sleep(0.3)
        assert _state(child) == "T"
        term.type(b"fg\n")
        assert _until(lambda: _state(child) in "SR"), "fg did not continue the served call"
        _answer(conn)
        assert _until(lambda: "status=1" in term.read()), term.read()
        assert "not here (front test)" in term.read()
    finally:
        listener.close()
        term.close()


def test_a_stopped_call_whose_front_is_killed_ends(front: Front) -> None:
    """Ctrl-Z, then ``kill -9 %1``: the Python CLI's process dies with its job. The served
    call's child, stopped, could not die of its front's end (a stopped process only keeps the
    signal pending) and stayed stopped for ever; the server continues it, and it dies."""
    server = front.wait_server()
    before = set(_children(server))
    listener, port = _waiting_api()
    term = Terminal(front.env(SLUICE_API=f"127.0.0.1:{port}"))
    try:
        term.type(f'"{front.program}" submit -- true\n'.encode())
        conn, _ = listener.accept()
        [child] = set(_children(server)) - before
        [front_pid] = _children(term.pid)
        term.type(b"\x1a")
        assert _until(lambda: _state(child) == "T"), term.read()
        term.type(b"kill -9 %1\n")
        assert _until(lambda: not _alive(front_pid)), term.read()
        assert _until(lambda: not _alive(child), 10), "the stopped call outlived its front"
        conn.close()
    finally:
        listener.close()
        term.close()


@pytest.fixture
def cgroup() -> Iterator[Path]:
    """A cgroup v2 directory of the test's own (removed with whatever runs in it)."""
    mount = cgroup2_mount()
    if mount is None:
        pytest.skip("no writable cgroup2 mount (needs root)")
    made = mount / f"sluice-front-test-{os.getpid()}"
    made.mkdir()
    yield made
    for _ in range(100):
        pids = (made / "cgroup.procs").read_text().split()
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)
        time.sleep(0.05)
    made.rmdir()


def test_a_served_call_runs_in_the_callers_cgroup(front: Front, cgroup: Path) -> None:
    """A caller in a cgroup of its own (a systemd scope, ``MemoryMax=``, ``TasksMax=``) runs the
    Python CLI inside it, under its limits, and ``systemctl stop`` (``cgroup.kill``) ends it.
    The served call ran in the server's cgroup, started by a caller elsewhere: out of reach
    of both. Whatever serves it, the process running the call must be in the caller's."""
    outside = front.wait_server()

    def enter() -> None:
        (cgroup / "cgroup.procs").write_text("0")

    def servers() -> set[int]:
        return set(front.server_pids())

    deadline = time.monotonic() + 10  # time for a server of that cgroup, if one is started
    while time.monotonic() < deadline:
        subprocess.run([str(front.program), "submit", "--help"], env=front.env(),
                       capture_output=True, timeout=60, check=False, preexec_fn=enter)
        if any(str(pid) in (cgroup / "cgroup.procs").read_text().split() for pid in servers()):
            break
        time.sleep(0.2)
    before = {c for s in servers() for c in _children(s)}
    reader, writer = os.pipe()
    proc = subprocess.Popen([str(front.program), "submit"], env=front.env(), stdin=reader,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            preexec_fn=enter)  # noqa: PLW1509 -- no thread here
    os.close(reader)
    try:
        time.sleep(2)  # reading its script, served or not
        served = {c for s in servers() for c in _children(s)} - before
        runs = served.pop() if served else proc.pid
        members = (cgroup / "cgroup.procs").read_text().split()
        assert str(runs) in members, f"the call runs outside the caller's cgroup ({runs})"
        assert _alive(outside)  # the caller elsewhere keeps its server
        (cgroup / "cgroup.kill").write_text("1")
        assert _until(lambda: not _alive(runs)), "the call outlived its cgroup's kill"
    finally:
        os.close(writer)
        proc.wait(60)


def test_the_server_closes_a_connection_from_another_cgroup(front: Front, cgroup: Path) -> None:
    """Whatever a front hashes, the server itself serves no peer of another cgroup: a call
    sent straight to its socket from one is closed unanswered (the caller runs Python)."""
    front.wait_server()
    [sock] = [p for p in (front.run_dir / "sluice").glob("cmd-*") if p.is_socket()]
    client = (
        "import socket, struct, sys\n"
        "open(sys.argv[2], 'w').write('0')\n"
        "data = b'/\\x0022\\x002\\x00submit\\x00--help\\x00'\n"
        "s = socket.socket(socket.AF_UNIX)\n"
        "s.connect(sys.argv[1])\n"
        "s.settimeout(10)\n"
        "try:\n"
        "    s.sendall(struct.pack('=I', len(data)) + data)\n"
        "    answer = s.recv(16)\n"
        "except (ConnectionResetError, BrokenPipeError):\n"
        "    answer = b''\n"
        "sys.exit(0 if answer == b'' else 3)\n")
    done = subprocess.run([sys.executable, "-c", client, str(sock),
                           str(cgroup / "cgroup.procs")],
                          capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr


def _ready(sock: socket.socket) -> tuple[bytes, int]:
    reply = b""
    while len(reply) < 5:
        chunk = sock.recv(5 - len(reply))
        assert chunk, "closed before its ready"
        reply += chunk
    kind, pid = struct.unpack("=ci", reply)
    return kind, pid


def test_a_connection_that_never_sends_its_go_holds_no_child(front: Front) -> None:
    """A same-user peer that sends a call and never its go kept a forked child waiting for
    ever (one per connection). The child waits :data:`GO_S`, says it ran nothing ('R') and
    ends."""
    server = front.wait_server()
    [sock] = [p for p in (front.run_dir / "sluice").glob("cmd-*") if p.is_socket()]
    data = b"/\x0022\x002\x00submit\x00--help\x00"
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(str(sock))
        s.settimeout(GO_S + 20)
        s.sendall(struct.pack("=I", len(data)) + data)
        kind, pid = _ready(s)
        assert kind == b"P"
        assert pid in _children(server)
        assert s.recv(16) == struct.pack("=ci", b"R", 0)  # nothing ran
        assert s.recv(16) == b""
    assert _until(lambda: not _alive(pid), 10), "the child outlived its connection's silence"


def test_a_refusal_after_the_go_runs_the_python_cli(front: Front) -> None:
    """A child that gave up waiting for the go (its front was stopped in between) refuses
    after the go has been sent: nothing ran, so the front runs the Python CLI, as it does
    for a refusal before it (it said the call's process ended without an exit status)."""
    front.wait_server()
    [sock] = [p for p in (front.run_dir / "sluice").glob("cmd-*") if p.is_socket()]
    front.stop()
    assert _until(lambda: not front.server_pids())
    sock.unlink(missing_ok=True)
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(sock))
    listener.listen(1)
    listener.settimeout(30)
    served: list[bool] = []

    def late_refusal() -> None:  # a child whose go came after it gave up
        conn, _ = listener.accept()
        with conn:
            (length,) = struct.unpack("=I", conn.recv(4, socket.MSG_WAITALL))
            conn.recv(length, socket.MSG_WAITALL)
            conn.sendall(struct.pack("=ci", b"P", os.getpid()))
            go, fds, _flags, _addr = socket.recv_fds(conn, 1, 3)
            for fd in fds:
                os.close(fd)
            served.append(go == b"G")
            conn.sendall(struct.pack("=ci", b"R", 0))

    thread = threading.Thread(target=late_refusal, daemon=True)
    thread.start()
    try:
        done = front.call("submit", "--bogus")
    finally:
        thread.join(30)
        listener.close()
    assert served == [True]
    assert done.returncode == 2 and "unrecognized arguments" in done.stderr, done.stderr
