"""Resolve the Apache Kafka broker classpath from Maven Central, once per version.

``ensure_jars()`` does, in order:

1. read the Kafka version from ``pom.xml`` next to this module (or take the ``version`` argument,
   or ``$SLUICE_KAFKA_VERSION``);
2. pick the cache directory: ``$SLUICE_KAFKA_LIBS`` if set, else
   ``~/.cache/sluice/kafka-<version>/libs``;
3. if the directory holds a completion marker for that version, return it at once;
4. otherwise take a file lock (several test sessions may race), run ``mvn -B -q -f <pom>
   dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory=<dir>``
   and write the marker only after Maven succeeded, so an interrupted copy is redone next time.
"""

from __future__ import annotations

import fcntl
import functools
import os
import shutil
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ._errors import JarsUnavailableError, ToolMissingError

POM_PATH = Path(__file__).with_name("pom.xml")
LOG4J2_CONFIG = Path(__file__).with_name("log4j2.properties")
MARKER_NAME = ".sluice-complete"
_POM_NS = {"m": "http://maven.apache.org/POM/4.0.0"}
_MVN_TIMEOUT_S = 900.0


@functools.cache
def pom_kafka_version() -> str:
    """The ``kafka.version`` property of ``infra/kafka/pom.xml``."""
    root = ET.parse(POM_PATH).getroot()
    node = root.find("m:properties/m:kafka.version", _POM_NS)
    if node is None or not (node.text or "").strip():
        raise JarsUnavailableError(f"{POM_PATH} has no <kafka.version> property")
    return (node.text or "").strip()


def kafka_version() -> str:
    """The Kafka version in use: ``$SLUICE_KAFKA_VERSION`` if set, else the pom's."""
    return os.environ.get("SLUICE_KAFKA_VERSION") or pom_kafka_version()


def libs_dir(version: str | None = None) -> Path:
    """Where the jars of ``version`` live (not necessarily resolved yet)."""
    if override := os.environ.get("SLUICE_KAFKA_LIBS"):
        return Path(override).expanduser()
    version = version or kafka_version()
    return Path.home() / ".cache" / "sluice" / f"kafka-{version}" / "libs"


def require_tool(name: str) -> str:
    """Absolute path of executable ``name``; raise ``ToolMissingError`` with a hint if absent."""
    found = shutil.which(name)
    if found is None:
        hints = {
            "java": "install a JDK 17+ (e.g. apt-get install openjdk-17-jre-headless)",
            "mvn": "install Maven 3 (e.g. apt-get install maven), or point SLUICE_KAFKA_LIBS "
            "at a directory already filled by `python -m infra.kafka fetch`",
        }
        raise ToolMissingError(f"`{name}` not found on PATH: {hints.get(name, 'install it')}")
    return found


def jars_complete(directory: Path, version: str) -> bool:
    """True if ``directory`` holds a finished copy of the jars of ``version``."""
    marker = directory / MARKER_NAME
    try:
        return marker.read_text(encoding="utf-8").strip() == version
    except OSError:
        return False


@contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _drop_stale_copy(directory: Path) -> None:
    """Remove the jars of another version, but only from a directory we marked before."""
    if not (directory / MARKER_NAME).exists():
        return
    for jar in directory.glob("*.jar"):
        jar.unlink()
    (directory / MARKER_NAME).unlink()


def ensure_jars(version: str | None = None) -> Path:
    """Return a directory holding the broker's runtime jars, resolving them with Maven if needed.

    Idempotent and safe to call from concurrent processes. Raises ``ToolMissingError`` if
    ``java``/``mvn`` are missing and ``JarsUnavailableError`` if Maven fails.
    """
    version = version or kafka_version()
    directory = libs_dir(version)
    if jars_complete(directory, version):
        return directory
    with _file_lock(directory.parent / f".{directory.name}.lock"):
        if jars_complete(directory, version):  # another process finished meanwhile
            return directory
        require_tool("java")
        mvn = require_tool("mvn")
        _drop_stale_copy(directory)
        directory.mkdir(parents=True, exist_ok=True)
        command = [
            mvn, "-B", "-q", "-f", str(POM_PATH), "dependency:copy-dependencies",
            "-DincludeScope=runtime", f"-DoutputDirectory={directory}",
        ]
        if version != pom_kafka_version():
            command.append(f"-Dkafka.version={version}")
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, timeout=_MVN_TIMEOUT_S, check=False
            )
        except subprocess.TimeoutExpired as exc:
            raise JarsUnavailableError(f"mvn timed out after {_MVN_TIMEOUT_S:.0f}s") from exc
        if done.returncode != 0:
            tail = "\n".join((done.stdout + done.stderr).splitlines()[-30:])
            raise JarsUnavailableError(
                f"mvn failed (exit {done.returncode}) resolving Kafka {version}:\n{tail}"
            )
        if not any(directory.glob(f"kafka_2.13-{version}.jar")):
            raise JarsUnavailableError(
                f"mvn finished but {directory} has no kafka_2.13-{version}.jar"
            )
        (directory / MARKER_NAME).write_text(version + "\n", encoding="utf-8")
    return directory


def classpath(directory: Path) -> str:
    """The JVM ``-cp`` value for a jar directory (Java expands the ``*`` itself)."""
    return str(directory / "*")
