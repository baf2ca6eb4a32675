"""How ``sluice up`` sets up authentication for the user who runs it (docs/security.md).

1. A JWT key (``$SLUICE_HOME/auth/jwt_hs256.key``, mode 0600) always: ``sluice token`` signs
   with it and the worker checks JWTs with it.
2. MUNGE when ``munged`` and libmunge are installed: the munged at ``SLUICE_MUNGE_SOCKET`` (or
   the system's) if one answers, else a munged of its own with a fresh key under
   ``$SLUICE_HOME/munge`` and its socket in ``/tmp/sluice-munge-<uid>/`` (one per home,
   reachable by every local user, so they can ask it for credentials). Without munged: JWT,
   and it says so.
3. A client configuration for the other users of the machine,
   ``$SLUICE_HOME/run/sluice.conf`` (readable by all, no secret), to copy to
   ``/etc/sluice/sluice.conf`` or to name with ``SLUICE_CONF``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from agents.auth import jwt_token, munge
from streams.settings import Settings, client_conf_lines

__all__ = ["AuthSetup", "setup_auth", "shared_ca", "stop_munged", "write_client_conf"]

SYSTEM_SOCKET = "/run/munge/munge.socket.2"


@dataclass(frozen=True, slots=True)
class AuthSetup:
    """What ``up`` chose."""

    kind: str
    munge_socket: str
    jwt_key: str
    note: str


def _answers(socket: str) -> bool:
    try:
        credential = munge.encode(b"sluice up", socket)
        munge.decode(credential, socket)
    except munge.MungeError:
        return False
    return True


def setup_auth(settings: Settings) -> AuthSetup:
    """Make the keys and pick the kind (see the module docstring)."""
    key = settings.home / "auth" / "jwt_hs256.key"
    key.parent.mkdir(parents=True, exist_ok=True)
    key.parent.chmod(0o700)
    jwt_token.create_key(key)
    if os.environ.get("SLUICE_AUTH"):
        return AuthSetup(settings.auth, settings.munge_socket, str(key), "")
    munged = shutil.which("munged") or ("/usr/sbin/munged" if Path("/usr/sbin/munged").exists()
                                        else "")
    if not munged or not munge.available():
        return AuthSetup("jwt", "", str(key),
                         f"munged is not installed: requests are signed with the JWT key {key}, "
                         "readable only by you; others need 'sluice token --user NAME'")
    for socket in (settings.munge_socket, SYSTEM_SOCKET):
        if socket and _answers(socket):
            return AuthSetup("munge", socket, str(key), f"munge: using munged at {socket}")
    socket = _start_munged(settings, munged)
    return AuthSetup("munge", socket, str(key), f"munge: started munged at {socket}")


def _start_munged(settings: Settings, munged: str) -> str:
    state = settings.home / "munge"
    state.mkdir(parents=True, exist_ok=True)
    state.chmod(0o700)
    run = Path(f"/tmp/sluice-munge-{os.getuid()}")  # every local user needs it
    run.mkdir(mode=0o755, exist_ok=True)
    if run.is_symlink() or run.stat().st_uid != os.getuid():
        raise PermissionError(f"{run} is not owned by you; remove it")
    run.chmod(0o755)
    key = state / "munge.key"
    if not key.exists():
        fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(os.urandom(1024))
    home_digest = hashlib.sha256(str(settings.home).encode()).hexdigest()[:12]
    socket = str(run / f"munge-{home_digest}.socket")  # one per system on the machine
    argv = [munged, f"--socket={socket}", f"--key-file={key}",
            f"--pid-file={state / 'munged.pid'}", f"--log-file={state / 'munged.log'}",
            f"--seed-file={state / 'munged.seed'}"]
    if os.getuid() == 0:
        argv.append("--force")  # munged refuses to run as root without it
    subprocess.run(argv, check=True, stdin=subprocess.DEVNULL, capture_output=True)
    deadline = time.monotonic() + 10
    while not _answers(socket):
        if time.monotonic() > deadline:
            raise RuntimeError(f"munged did not answer at {socket}; see {state}/munged.log")
        time.sleep(0.1)
    return socket


def stop_munged(settings: Settings) -> bool:
    """Stop the munged ``up`` started (by its PID file, if it is a munged)."""
    pid_file = settings.home / "munge" / "munged.pid"
    try:
        pid = int(pid_file.read_text().strip())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError):
        return False
    if b"munged" not in cmdline:
        return False
    os.kill(pid, 15)
    return True


def write_client_conf(settings: Settings, setup: AuthSetup, plaintext: bool = False) -> Path:
    """The system-wide client configuration for this system (readable by all, no secret);
    ``plaintext``: its broker is the secured broker's users' listener, no Kafka security."""
    path = settings.home / "run" / "sluice.conf"
    lines = [
        "# Sluice client configuration (like /etc/slurm/slurm.conf): copy to",
        "# /etc/sluice/sluice.conf, or point SLUICE_CONF at it. It holds no secret.",
        *client_conf_lines(settings.with_(auth=setup.kind, munge_socket=setup.munge_socket)),
    ]
    if plaintext:
        lines = [line for line in lines if not line.startswith(("KafkaSecurity=",
                                                                "KafkaMechanism=",
                                                                "KafkaCA="))]
    lines = [f"KafkaCA={shared_ca(settings.home, line[8:])}" if line.startswith("KafkaCA=")
             else line for line in lines]
    from agents.auth.node_keys import load_env_public, public_text

    lines.append(f"EnvPublicKey={public_text(load_env_public(settings))}  # seals --export values")
    path.write_text("\n".join(lines) + "\n")
    path.chmod(0o644)
    return path


def shared_ca(home: Path, ca: str) -> str:
    """A path of the brokers' CA certificate that every local user can read: ``ca`` itself when
    it is, else a copy in ``$SLUICE_HOME/run/kafka-ca.pem`` (0644). ``up --secure`` makes it in
    its broker's private directory (0700), so the client configuration it wrote for the other
    users named a file they could not open, and their first command that produced to Kafka
    (``scontrol hold``, ``srun``) ended in a traceback (red team, 2026-12-07). A certificate is
    no secret."""
    path = Path(ca)
    try:
        readable = path.stat().st_mode & 0o004 and all(
            parent.stat().st_mode & 0o001 for parent in path.resolve().parents)
    except OSError:
        return ca
    if readable:
        return ca
    copy = home / "run" / "kafka-ca.pem"
    copy.write_bytes(path.read_bytes())
    copy.chmod(0o644)
    return str(copy)
