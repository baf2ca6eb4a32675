"""JVM processes of the local broker: format, launch, PID files, stop by PID.

Only processes this package started are ever signalled: a PID is acted on only while
``/proc/<pid>/cmdline`` still names ``kafka.Kafka`` and that node's ``server.properties``
(a recycled PID belongs to someone else and is left alone). Nothing is looked up by name.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shlex
import signal
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

from ._jars import LOG4J2_CONFIG, classpath

DEFAULT_HEAP = "-Xms256m -Xmx1g"
# kafka-run-class.sh's KAFKA_JVM_PERFORMANCE_OPTS, plus exit on OOM instead of limping on.
_JVM_OPTS = (
    "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent", "-XX:MaxInlineLevel=15", "-XX:+ExitOnOutOfMemoryError",
    "-Djava.awt.headless=true",
)
_PR_SET_PDEATHSIG = 1
_POLL_S = 0.05


def heap_options(heap: str | None) -> list[str]:
    """JVM heap flags: ``heap``, else ``$SLUICE_KAFKA_HEAP_OPTS``, else ``-Xms256m -Xmx1g``."""
    return shlex.split(heap or os.environ.get("SLUICE_KAFKA_HEAP_OPTS") or DEFAULT_HEAP)


def _log_options(node_dir: Path) -> list[str]:
    return [f"-Dlog4j2.configurationFile={LOG4J2_CONFIG}", f"-Dkafka.logs.dir={node_dir}"]


def format_command(
    java: str, libs: Path, properties: Path, cluster_id: str, scram: list[str] | None = None
) -> list[str]:
    """``kafka.tools.StorageTool format`` for one node (static quorum, so no ``--standalone``).

    ``scram`` entries (``SCRAM-SHA-512=[name=...,password=...]``) become ``--add-scram``.
    """
    extra = [arg for entry in (scram or []) for arg in ("--add-scram", entry)]
    return [
        java, "-Xmx256m", *_log_options(properties.parent), "-cp", classpath(libs),
        "kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(properties), *extra,
    ]


def broker_command(java: str, libs: Path, properties: Path, heap: str | None) -> list[str]:
    """``java ... kafka.Kafka server.properties``, as ``kafka-server-start.sh`` would run it."""
    return [
        java, *heap_options(heap), *_JVM_OPTS, *_log_options(properties.parent),
        "-cp", classpath(libs), "kafka.Kafka", str(properties),
    ]


def _die_with_parent() -> None:
    """In the child before exec: get SIGTERM when the process that started us dies (Linux)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def launch(
    command: list[str], log_path: Path, pid_path: Path, *, tie_to_parent: bool
) -> subprocess.Popen[bytes]:
    """Start ``command`` in its own session, output appended to ``log_path``, PID to ``pid_path``.

    With ``tie_to_parent`` the JVM is sent SIGTERM if the calling process dies (test sessions);
    without it the JVM outlives the caller (``python -m infra.kafka start``).
    """
    with log_path.open("ab") as log:
        stamp = datetime.now(UTC).isoformat(timespec="seconds")
        log.write(f"=== {stamp} starting: {shlex.join(command)}\n".encode())
        log.flush()
        proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=log_path.parent,
            start_new_session=True,
            preexec_fn=_die_with_parent if tie_to_parent else None,  # noqa: PLW1509
        )
    tmp = pid_path.with_suffix(".pid.tmp")
    tmp.write_text(f"{proc.pid}\n", encoding="utf-8")
    tmp.replace(pid_path)
    return proc


def read_pid(pid_path: Path) -> int | None:
    """The PID stored in ``pid_path``, or ``None`` if absent or garbled."""
    try:
        return int(pid_path.read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return None


def _is_zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] == "Z"


def _reap(pid: int) -> None:
    """Collect ``pid`` if it is our zombie child (else nothing happens)."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def is_alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    _reap(pid)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _is_zombie(pid)


def is_our_broker(pid: int, properties: Path) -> bool:
    """True if ``pid`` is alive and is the ``kafka.Kafka`` JVM of ``properties``."""
    if not is_alive(pid):
        return False
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"kafka.Kafka" in argv and str(properties).encode() in argv


def live_pid(pid_path: Path, properties: Path) -> int | None:
    """The running broker PID recorded in ``pid_path``; removes the file if it is stale."""
    pid = read_pid(pid_path)
    if pid is not None and is_our_broker(pid, properties):
        return pid
    pid_path.unlink(missing_ok=True)
    return None


def wait_gone(pid: int, timeout: float) -> bool:
    """Wait until ``pid`` has exited (reaping it if it is our child); True if it did in time."""
    deadline = time.monotonic() + timeout
    while is_alive(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(_POLL_S)
    return True


def send(pid: int, sig: signal.Signals) -> None:
    """Signal ``pid``, ignoring a process that is already gone."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def stop_pids(pids: list[int], timeout: float) -> list[int]:
    """SIGTERM every PID, wait up to ``timeout`` in total, SIGKILL the rest; return those killed."""
    for pid in pids:
        send(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    killed = []
    for pid in pids:
        if not wait_gone(pid, max(0.0, deadline - time.monotonic())):
            send(pid, signal.SIGKILL)
            killed.append(pid)
    for pid in killed:
        wait_gone(pid, 10.0)
    return killed


def log_tail(log_path: Path, lines: int = 40) -> str:
    """The last ``lines`` lines of a node's log (empty if it has none)."""
    try:
        text = log_path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])
