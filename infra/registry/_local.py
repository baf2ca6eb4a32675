"""Start, find and stop one local Apicurio Registry (its state lives in one directory).

The directory holds ``registry.pid``, ``registry.log``, ``registry.port`` and the H2 database
(``db.mv.db``), so schemas and their ids survive a restart of the registry. The JVM listens on
127.0.0.1 only.
"""

from __future__ import annotations

import json
import shutil
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from infra.kafka._process import is_alive, launch, log_tail, read_pid, stop_pids

from ._build import RegistryInfraError, ensure_build

__all__ = ["DEFAULT_START_TIMEOUT_S", "LocalRegistry", "ccompat_url"]

DEFAULT_START_TIMEOUT_S = 240.0


def ccompat_url(port: int, host: str = "127.0.0.1") -> str:
    """The Confluent-compatible API of an Apicurio Registry on ``host:port``."""
    return f"http://{host}:{port}/apis/ccompat/v7"


def _ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health/ready", timeout=2) as r:
            return bool(json.loads(r.read()).get("status") == "UP")
    except (OSError, ValueError, urllib.error.URLError):
        return False


@dataclass(frozen=True, slots=True)
class LocalRegistry:
    """A registry started by :meth:`start` in ``directory``, answering on ``port``."""

    directory: Path
    port: int

    @property
    def url(self) -> str:
        """Its Confluent-compatible REST API (what ``SLUICE_SCHEMA_REGISTRY_URL`` takes)."""
        return ccompat_url(self.port)

    @classmethod
    def start(cls, directory: Path, port: int, *, heap: str = "-Xmx512m",
              tie_to_parent: bool = False,
              timeout: float = DEFAULT_START_TIMEOUT_S) -> LocalRegistry:
        """Start it (or return the one already running there) and wait until it is ready."""
        directory = directory.absolute()
        directory.mkdir(parents=True, exist_ok=True)
        found = cls.running(directory)
        if found is not None:
            return found
        runner = ensure_build()
        java = shutil.which("java")
        if java is None:
            raise RegistryInfraError("java is not on PATH (Java 17+ runs the registry)")
        command = [
            java, *heap.split(), f"-Dquarkus.http.port={port}", "-Dquarkus.http.host=127.0.0.1",
            "-Dquarkus.log.console.level=WARN", "-jar", str(runner),
        ]
        (directory / "registry.port").write_text(f"{port}\n")
        process = launch(command, directory / "registry.log", directory / "registry.pid",
                         tie_to_parent=tie_to_parent)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RegistryInfraError(
                    f"the registry exited with {process.returncode}; "
                    f"{directory / 'registry.log'}:\n{log_tail(directory / 'registry.log')}")
            if _ready(port):
                return cls(directory, port)
            time.sleep(0.5)
        stop_pids([process.pid], 20)
        raise RegistryInfraError(f"the registry was not ready on port {port} within "
                                 f"{timeout:.0f}s:\n{log_tail(directory / 'registry.log')}")

    @classmethod
    def running(cls, directory: Path) -> LocalRegistry | None:
        """The registry running from ``directory``, if any."""
        pid = read_pid(directory / "registry.pid")
        port_file = directory / "registry.port"
        if pid is None or not is_alive(pid) or not port_file.exists():
            return None
        return cls(directory, int(port_file.read_text().strip()))

    def stop(self, timeout: float = 30.0) -> None:
        """Stop it: SIGTERM, then SIGKILL after ``timeout`` seconds."""
        pid = read_pid(self.directory / "registry.pid")
        if pid is not None and is_alive(pid):
            stop_pids([pid], timeout)
        (self.directory / "registry.pid").unlink(missing_ok=True)
