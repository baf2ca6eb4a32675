"""Build Apicurio Registry into a runnable Quarkus application, once, cached.

Apicurio publishes its application to Maven Central as a plain (un-augmented) jar. Quarkus'
build step, run by Maven on ``infra/registry/pom.xml``, turns it into
``target/sluice-schema-registry-1-runner.jar`` plus ``target/lib/``. The build runs in a copy of
the pom (and its one Java source) under the cache directory, under a file lock, and is redone
only when the pom or the source change (their digest is stored beside the result).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from infra.kafka._jars import _file_lock, require_tool

__all__ = ["APICURIO_VERSION", "RegistryInfraError", "build_dir", "ensure_build"]

APICURIO_VERSION = "2.4.2.Final"
"""The Apicurio Registry release whose every module is on Maven Central (see pom.xml)."""
HERE = Path(__file__).resolve().parent
SOURCES = ("pom.xml", "src/main/java/dev/sluice/registry/StaticConfigIndex.java")
RUNNER = "target/sluice-schema-registry-1-runner.jar"
_MVN_TIMEOUT_S = 1800.0


class RegistryInfraError(RuntimeError):
    """The registry could not be built, started or stopped; the message says why."""


def build_dir() -> Path:
    """``$SLUICE_REGISTRY_BUILD``, else ``~/.cache/sluice/apicurio-registry-<version>``."""
    if override := os.environ.get("SLUICE_REGISTRY_BUILD"):
        return Path(override).expanduser()
    return Path.home() / ".cache" / "sluice" / f"apicurio-registry-{APICURIO_VERSION}"


def _digest() -> str:
    sha = hashlib.sha256()
    for name in SOURCES:
        sha.update(name.encode() + b"\0" + (HERE / name).read_bytes())
    return sha.hexdigest()


def ensure_build() -> Path:
    """The runner jar, building it with Maven first if needed (minutes, the first time)."""
    directory = build_dir()
    runner, stamp = directory / RUNNER, directory / "built.sha256"
    digest = _digest()

    def done() -> bool:
        return runner.exists() and stamp.exists() and stamp.read_text().strip() == digest

    if done():
        return runner
    directory.mkdir(parents=True, exist_ok=True)
    with _file_lock(directory.parent / f".{directory.name}.lock"):
        if done():
            return runner
        try:
            require_tool("java")
            mvn = require_tool("mvn")
        except RuntimeError as exc:
            raise RegistryInfraError(str(exc)) from exc
        shutil.rmtree(directory / "target", ignore_errors=True)
        for name in SOURCES:
            (directory / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(HERE / name, directory / name)
        try:
            result = subprocess.run(
                [mvn, "-B", "-q", "package", "-DskipTests"], cwd=directory,
                capture_output=True, text=True, timeout=_MVN_TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired as exc:
            raise RegistryInfraError(f"mvn timed out after {_MVN_TIMEOUT_S:.0f}s") from exc
        if result.returncode != 0 or not runner.exists():
            tail = "\n".join((result.stdout + result.stderr).splitlines()[-30:])
            raise RegistryInfraError(f"building Apicurio Registry {APICURIO_VERSION} failed "
                                     f"(mvn exit {result.returncode}) in {directory}:\n{tail}")
        stamp.write_text(digest + "\n")
    return runner
