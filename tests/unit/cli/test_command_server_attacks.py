"""Attacks on the sluice front and its command server (red team, docs/security.md "The
command server"): a socket another user bound under the caller's expected name, a caller
whose standard descriptors are closed, a front killed while its call runs, a module edited
with its modification time put back."""

from __future__ import annotations

import contextlib
import os
import resource
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from tests.front_venv import ROOT
from tests.unit.cli.test_command_server import Front, _alive, _children

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")


def _socket_name(front: Front) -> Path:
    front.wait_server()
    [sock] = [p for p in (front.run_dir / "sluice").glob("cmd-*") if p.is_socket()]
    front.stop()
    deadline = time.monotonic() + 10
    while front.server_pids() and time.monotonic() < deadline:
        time.sleep(0.05)
    return sock


def test_the_front_never_talks_to_a_server_of_another_user(front: Front) -> None:
    """A socket under the caller's expected name whose listener is another user (it won a race
    on a shared TMPDIR, or root's mistake put it there) gets neither the call nor its
    descriptors: the front checks its peer's uid (SO_PEERCRED), and the call runs as the
    Python CLI would."""
    if os.getuid() != 0:
        pytest.skip("needs root to listen as another user")
    sock = _socket_name(front)
    sock.unlink(missing_ok=True)
    Path(f"{sock}.lock").unlink(missing_ok=True)
    report_r, report_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the attacker's listener
        os.close(report_r)
        status = 3
        try:
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(str(sock))
            os.setgid(65534)
            os.setuid(65534)
            listener.listen(8)  # SO_PEERCRED names who listened: nobody
            os.write(report_w, b"L")
            listener.settimeout(20)
            conn, _ = listener.accept()
            conn.settimeout(5)
            try:
                data, fds, _flags, _addr = socket.recv_fds(conn, 65536, 8)
            except OSError:
                data, fds = b"", []
            status = 0 if not data and not fds else 5  # the victim's call leaked to us
        except TimeoutError:
            status = 0  # the front never connected: nothing leaked either
        except OSError:
            status = 4
        os._exit(status)
    os.close(report_w)
    assert select.select([report_r], [], [], 20)[0] and os.read(report_r, 1) == b"L"
    os.close(report_r)
    done = front.call("submit", "--bogus", SLUICE_JWT="victims-token")
    assert done.returncode == 2 and "unrecognized arguments" in done.stderr
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "the call reached another user's server"


@pytest.mark.parametrize(("fd", "argv"), [(0, ["submit"]), (1, ["submit", "--help"]),
                                          (2, ["submit", "--bogus"])])
def test_a_caller_with_a_closed_standard_descriptor_gets_what_the_python_cli_does(
        front: Front, fd: int, argv: list[str]) -> None:
    """With descriptor 0, 1 or 2 closed, the front's socket would take its number and be
    passed to the child as the caller's stdin, stdout or stderr: output sent into the
    protocol, a read that waits on itself (``sluice submit`` reading its script). The front
    runs the Python CLI instead."""
    closing = ["exec 0<&-", "exec 1>&-", "exec 2>&-"][fd]
    results = []
    for setting in ("on", "off"):
        if setting == "on":
            front.wait_server()
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            try:
                done = subprocess.run(
                    ["sh", "-c", f'{closing}; exec "$0" "$@"', str(front.program), *argv],
                    env=front.env(SLUICE_COMMAND_SERVER=setting), stdout=out, stderr=err,
                    stdin=subprocess.DEVNULL, timeout=20, check=False)
                status: int | str = done.returncode
            except subprocess.TimeoutExpired:
                status = "no end"
            out.seek(0)
            err.seek(0)
            results.append((status, out.read(), err.read()))
    assert results[0] == results[1]


def test_a_call_whose_front_is_killed_ends_with_it(front: Front) -> None:
    """``kill -9`` of a front (a job step's timeout, the OOM killer) ends the Python CLI's
    process with it; the served call, in the server's child, ends too instead of running on
    (here: a submission reading its script from a pipe that stays open)."""
    server = front.wait_server()
    before = set(_children(server))
    reader, writer = os.pipe()
    proc = subprocess.Popen([str(front.program), "submit"], env=front.env(), stdin=reader,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(reader)
    try:
        deadline = time.monotonic() + 20
        while not (set(_children(server)) - before) and time.monotonic() < deadline:
            time.sleep(0.05)
        [child] = set(_children(server)) - before
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        deadline = time.monotonic() + 10
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(child), "the served call outlived its front"
    finally:
        os.close(writer)


def test_a_module_edited_with_its_time_put_back_is_not_served_stale(
        front: Front, tmp_path: Path) -> None:
    """``cp -p``, ``rsync -a`` or ``tar -x`` put a file's modification time back: a server
    that went by it alone would run the old code. (Python's own check of its cached bytecode
    goes by the time and the size: a change of size is what the Python CLI sees.)"""
    tree = tmp_path / "tree"
    shutil.copytree(ROOT / "cli", tree / "cli", ignore=shutil.ignore_patterns("__pycache__"))
    for package in ("schemas", "streams", "agents", "projections", "scheduler"):
        (tree / package).symlink_to(ROOT / package)
    env = {"PYTHONPATH": str(tree)}
    old = front.wait_server(**env)
    source = tree / "cli" / "submit.py"
    before = source.stat()
    text = source.read_text()
    assert 'help="node count, or min-max"' in text
    source.write_text(text.replace('help="node count, or min-max"',
                                   'help="NEW node count"'))
    os.utime(source, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert source.stat().st_mtime_ns == before.st_mtime_ns
    for _ in range(3):
        done = front.call("submit", "--help", **env)
        assert done.returncode == 0 and "NEW node count" in done.stdout
    deadline = time.monotonic() + 30
    while _alive(old) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(old)


def test_the_order_of_the_environment_makes_no_other_server(front: Front) -> None:
    """A shell passes its variables on in an order of its own (dash's hash table): the same
    PYTHON* settings in another order are the same code, served by the same server."""
    front.wait_server(PYTHONFOO="1", PYTHONBAR="2")
    env = front.env(PYTHONFOO="1", PYTHONBAR="2")
    reordered = dict(reversed(list(env.items())))
    for _ in range(3):
        subprocess.run([str(front.program), "submit", "--help"], env=reordered,
                       capture_output=True, timeout=60, check=True)
        time.sleep(0.3)
    sockets = [p for p in (front.run_dir / "sluice").glob("cmd-*") if p.is_socket()]
    assert len(sockets) == 1


@pytest.mark.parametrize("env", [{"PYTHONIOENCODING": "ascii:backslashreplace"},
                                 {"LC_ALL": "C", "PYTHONUTF8": "0"},
                                 {"PYTHONUNBUFFERED": "1"}])
def test_a_served_call_writes_in_the_encoding_the_python_cli_would(
        front: Front, env: dict[str, str]) -> None:
    """The interpreter picks its streams' encoding from PYTHONIOENCODING and the locale
    (LC_ALL, LC_CTYPE, LANG): a served call's text is the same bytes, or the same error."""
    front.wait_server(**env)
    served = front.call("submit", "--help", **env)
    plain = front.call("submit", "--help", SLUICE_COMMAND_SERVER="off", **env)
    assert (served.returncode, served.stdout, served.stderr) == (
        plain.returncode, plain.stdout, plain.stderr)


def test_a_call_from_another_network_namespace_is_not_served_outside_it(front: Front) -> None:
    """A caller in a sandbox of its own (``unshare -n``, a container sharing the directory)
    must not have its call run in the server's world: there it would reach what the sandbox
    keeps it from (here, an API on the host's loopback). Its call runs as the Python CLI
    would, inside."""
    if subprocess.run(["unshare", "-n", "true"], capture_output=True, check=False).returncode:
        pytest.skip("cannot make a network namespace here")
    front.wait_server()
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    listener.settimeout(0.2)
    reached = threading.Event()
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            reached.set()
            conn.close()

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    results = []
    for setting in ("on", "off"):
        done = subprocess.run(["unshare", "-n", str(front.program), "queue"],
                              env=front.env(SLUICE_API=f"127.0.0.1:{port}",
                                            SLUICE_COMMAND_SERVER=setting),
                              capture_output=True, text=True, timeout=60, check=False)
        results.append((done.returncode, done.stdout, done.stderr))
    stop.set()
    thread.join(5)
    listener.close()
    assert not reached.is_set(), "a call from inside the namespace reached the host's loopback"
    assert results[0] == results[1]


def test_the_server_closes_a_connection_from_another_namespace(front: Front) -> None:
    """Whatever a front hashes, the server itself serves no peer of other namespaces: a call
    sent straight to its socket from ``unshare -n`` is closed unanswered."""
    if subprocess.run(["unshare", "-n", "true"], capture_output=True, check=False).returncode:
        pytest.skip("cannot make a network namespace here")
    front.wait_server()
    [sock] = [p for p in (front.run_dir / "sluice").glob("cmd-*") if p.is_socket()]
    client = (
        "import socket, struct, sys\n"
        "data = b'/\\x0022\\x002\\x00submit\\x00--help\\x00'\n"
        "s = socket.socket(socket.AF_UNIX)\n"
        "s.connect(sys.argv[1])\n"
        "s.settimeout(10)\n"
        "try:\n"
        "    socket.send_fds(s, [struct.pack('=I', len(data))], [0, 1, 2])\n"
        "    s.sendall(data)\n"
        "    answer = s.recv(16)\n"
        "except (ConnectionResetError, BrokenPipeError):\n"
        "    answer = b''  # closed unanswered, our call unread\n"
        "sys.exit(0 if answer == b'' else 3)\n")
    done = subprocess.run(["unshare", "-n", sys.executable, "-c", client, str(sock)],
                          capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr


def test_a_signal_before_the_go_ends_the_child_quietly_and_runs_nothing(front: Front) -> None:
    """The front passes a Ctrl-C on as soon as it knows the child's pid, which is before it
    sends its go: a child interrupted there has run nothing and must end without a word on
    the caller's stderr (it printed a KeyboardInterrupt traceback there)."""
    front.wait_server()
    [sock] = [p for p in (front.run_dir / "sluice").glob("cmd-*") if p.is_socket()]
    err_r, err_w = os.pipe()
    data = b"/\x0022\x002\x00submit\x00--help\x00"
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(str(sock))
        s.settimeout(20)
        socket.send_fds(s, [struct.pack("=I", len(data))], [0, err_w, err_w])
        os.close(err_w)
        s.sendall(data)
        reply = b""
        while len(reply) < 5:
            reply += s.recv(5 - len(reply))
        kind, pid = struct.unpack("=ci", reply)
        assert kind == b"P"
        os.kill(pid, signal.SIGINT)
        assert s.recv(16) == b""  # ended, no 'X': it ran nothing
    deadline = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    written = b""
    while select.select([err_r], [], [], 1)[0]:
        chunk = os.read(err_r, 65536)
        if not chunk:
            break
        written += chunk
    os.close(err_r)
    assert written == b"", written.decode(errors="replace")


def test_a_signal_the_caller_ignores_is_not_passed_on(front: Front) -> None:
    """``nohup sluice submit ... &``: the caller ignores SIGHUP, and the Python CLI inherits
    that and lives on when the terminal goes. The front must not pass a SIGHUP on to the
    served call either (it installed its forwarder over the ignored signal)."""
    front.wait_server()
    outcomes = []
    for setting in ("on", "off"):
        reader, writer = os.pipe()
        proc = subprocess.Popen(["sh", "-c", 'trap "" HUP; exec "$0" "$@"', str(front.program),
                                 "submit", "--parsable"],
                                env=front.env(SLUICE_COMMAND_SERVER=setting), stdin=reader,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        os.close(reader)
        time.sleep(1.5)  # reading its script from the pipe
        proc.send_signal(signal.SIGHUP)
        time.sleep(0.5)
        alive = proc.poll() is None
        os.close(writer)  # an empty script: the call ends on its own
        proc.communicate(timeout=60)
        outcomes.append(alive)
    assert outcomes == [True, True]


def test_a_served_call_shows_times_in_the_callers_time_zone(front: Front) -> None:
    """``TZ=Asia/Tokyo squeue``: the C library reads ``TZ`` once per process, and the server's
    child is the server's process, started without the caller's ``TZ``: its times were the
    server's zone's. Against a views API of the test's own (one pending job)."""
    from tests.unit.cli.json_api import json_api

    row = {"job_id": 7, "job_sluid": "s0000000000001", "state": "PENDING", "user": "alice",
           "name": "x", "partition": "main", "submit_ms": 1_796_540_000_000, "start_ms": 0,
           "end_ms": 0, "reason": "Priority", "nodes": "", "num_nodes": 1,
           "array_task_id": -1, "array_job_sluid": "", "time_limit_s": 60}
    with json_api(lambda _path: {"jobs": [row], "freshness": {}}) as where:
        front.wait_server()
        served = front.call("queue", "-o", "%i %V", TZ="Asia/Tokyo", SLUICE_API=where)
        plain = front.call("queue", "-o", "%i %V", TZ="Asia/Tokyo", SLUICE_API=where,
                           SLUICE_COMMAND_SERVER="off")
    assert plain.returncode == 0 and "2026-12-06T15:53:20" in plain.stdout, plain.stderr
    assert (served.returncode, served.stdout, served.stderr) == (
        plain.returncode, plain.stdout, plain.stderr)


def _limits_and_nice(pid: int) -> tuple[str, str, int]:
    limits = Path(f"/proc/{pid}/limits").read_text().splitlines()
    files = next(line for line in limits if line.startswith("Max open files"))
    size = next(line for line in limits if line.startswith("Max file size"))
    nice = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[16])
    return files.split()[3], size.split()[3], nice


def test_a_served_call_runs_under_the_callers_limits_and_nice_value(front: Front) -> None:
    """``ulimit -n 77; nice -n 5 sbatch ...``: the Python CLI runs under the caller's resource
    limits and nice value; the served call ran under the server's, whatever the caller had
    lowered. It takes the caller's where they are lower (it can raise none)."""
    server = front.wait_server()
    before = set(_children(server))
    reader, writer = os.pipe()
    proc = subprocess.Popen(["sh", "-c", 'ulimit -n 77; ulimit -f 1000; exec nice -n 5 "$0" "$@"',
                             str(front.program), "submit"], env=front.env(), stdin=reader,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(reader)
    try:
        deadline = time.monotonic() + 20
        while not (set(_children(server)) - before) and time.monotonic() < deadline:
            time.sleep(0.05)
        [child] = set(_children(server)) - before
        time.sleep(0.3)  # past its setup, reading its script
        files, size, nice = _limits_and_nice(child)
    finally:
        os.close(writer)
        proc.wait(60)
    assert (files, size, nice) == ("77", "512000", 5)  # ulimit -f counts 512-byte blocks


def _servers_limit(front: Front) -> list[str]:
    return [next(line.split()[3] for line in Path(f"/proc/{pid}/limits").read_text().splitlines()
                 if line.startswith("Max open files"))
            for pid in front.server_pids() if _alive(pid)]


def test_a_server_started_under_a_tiny_descriptor_limit_neither_spins_nor_hangs_calls(
        front: Front) -> None:
    """The first call of a session made under ``ulimit -n 5`` started a server that could not
    accept (EMFILE): it spun at 100 % CPU for ever and every later call waited for ever. Now
    it ends, and the calls run (through Python, then a new server)."""
    for _ in range(3):
        subprocess.run(["sh", "-c", 'ulimit -n 5; exec "$0" "$@"', str(front.program), "submit",
                        "--bogus"], env=front.env(), capture_output=True, timeout=60,
                       check=False)
        time.sleep(1)
    for _ in range(3):
        done = front.call("submit", "--bogus")  # timeout=60: a hang fails the test
        assert done.returncode == 2 and "unrecognized arguments" in done.stderr
    deadline = time.monotonic() + 20
    while "5" in _servers_limit(front) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert "5" not in _servers_limit(front)


def test_a_stopped_server_costs_a_call_seconds_not_for_ever(front: Front) -> None:
    """A server that cannot answer (stopped, frozen with its cgroup, starved) must not hold
    its callers for ever: without its child's ready within seconds the front runs the Python
    CLI (nothing of the command has run before the go)."""
    server = front.wait_server()
    os.kill(server, signal.SIGSTOP)
    try:
        started = time.monotonic()
        done = front.call("submit", "--bogus")
        took = time.monotonic() - started
    finally:
        os.kill(server, signal.SIGCONT)
    assert done.returncode == 2 and "unrecognized arguments" in done.stderr
    assert took < 30


def test_the_server_holds_none_of_the_first_callers_descriptors(front: Front) -> None:
    """A descriptor the first caller left open (a CI runner's pipe, ``$(...)``'s in a wrapper,
    make's jobserver) stayed open in the server it started, for the server's life: whoever
    waited for its end of file waited minutes."""
    reader, writer = os.pipe()
    try:
        subprocess.run([str(front.program), "submit", "--bogus"], env=front.env(),
                       capture_output=True, timeout=60, check=False, pass_fds=(writer,))
        os.close(writer)
        writer = -1
        front.wait_server()
        assert select.select([reader], [], [], 10)[0], "the pipe's writer is still open"
        assert os.read(reader, 1) == b""
    finally:
        os.close(reader)
        if writer >= 0:
            os.close(writer)


def _reading_the_pipe(front_pid: int, servers: list[int], before: set[int], pipe: int) -> int:
    """The process running the call whose standard input is the pipe ``pipe`` (its inode): a
    server's new child once it holds the caller's descriptors (it took the caller's limits
    before it was sent them), or the front itself once it became the Python CLI (not
    served). Sampling at a fixed delay could catch the child before it had the call."""
    want = f"pipe:[{pipe}]"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for child in {c for s in servers for c in _children(s)} - before:
            with contextlib.suppress(OSError):
                if str(Path(f"/proc/{child}/fd/0").readlink()) == want:
                    return child
        with contextlib.suppress(OSError):
            if "python" in Path(f"/proc/{front_pid}/exe").readlink().name:
                return front_pid
        time.sleep(0.05)
    raise AssertionError("no process took the call within 30 s")


def test_a_caller_with_higher_limits_than_the_server_is_not_held_to_the_servers(
        front: Front) -> None:
    """A server started by a call under ``ulimit -n 100`` must not hold a later caller to 100:
    a child of a server that may raise limits (``CAP_SYS_RESOURCE``) takes the caller's; a
    server that cannot (another user's, or root's where the container dropped the capability,
    as on the machine where this failed 9 times in 11) refuses the call (run through Python
    with its own limits) and ends, so that the next server is started with the new caller's."""
    subprocess.run(["sh", "-c", 'ulimit -n 100; exec "$0" "$@"', str(front.program), "submit",
                    "--bogus"], env=front.env(), capture_output=True, timeout=60, check=False)
    deadline = time.monotonic() + 30
    while "100" not in _servers_limit(front) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert "100" in _servers_limit(front)
    servers = front.server_pids()
    before = {c for s in servers for c in _children(s)}
    reader, writer = os.pipe()
    proc = subprocess.Popen([str(front.program), "submit"], env=front.env(), stdin=reader,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(reader)
    try:
        runs = _reading_the_pipe(proc.pid, servers, before, os.fstat(writer).st_ino)
        files = _limits_and_nice(runs)[0]
    finally:
        os.close(writer)
        proc.wait(60)
    mine = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    assert files == str(mine)


def test_the_server_knows_whether_it_may_raise_a_hard_limit() -> None:
    """``_capable(CAP_SYS_RESOURCE)`` says what raising a hard limit does: root without the
    capability (a container's) may not, and was taken to."""
    from cli.command_server import _CAP_SYS_RESOURCE, _capable
    probe = ("import resource; s, h = resource.getrlimit(resource.RLIMIT_NOFILE); "
             "resource.setrlimit(resource.RLIMIT_NOFILE, (h - 1, h - 1)); "
             "resource.setrlimit(resource.RLIMIT_NOFILE, (h, h))")
    raised = subprocess.run([sys.executable, "-c", probe], capture_output=True,
                            check=False, timeout=60).returncode == 0
    assert _capable(_CAP_SYS_RESOURCE) == raised
