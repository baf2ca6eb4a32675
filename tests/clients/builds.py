"""Building the Java, Go and TypeScript clients of clients/ with their own tools.

Each build uses its tool's own cache (Maven: ~/.m2, tried offline first; Go: the module and
build caches; npm: ~/.npm, then ``npm ci``), so a second build is quick and needs no network.
A build that fails raises with the tool's output; a tool that is absent skips the test.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLIENTS = ROOT / "clients"
BUILD_TIMEOUT_S = 900


@dataclass(frozen=True)
class BuiltClient:
    """A client ready to run: its language and the command that runs it."""

    language: str
    argv: tuple[str, ...]


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True,
                          timeout=BUILD_TIMEOUT_S, check=False)


def _check(done: subprocess.CompletedProcess[str], what: str) -> None:
    if done.returncode != 0:
        raise AssertionError(f"{what} failed ({done.returncode}):\n{done.stdout[-4000:]}\n"
                             f"{done.stderr[-4000:]}")


def _need(*tools: str) -> None:
    missing = [tool for tool in tools if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed (CI installs it: .ci/run)")


def build_java() -> BuiltClient:
    """``mvn package``: avro-maven-plugin generates the records, the unit tests run, a fat jar."""
    _need("mvn", "java")
    where = CLIENTS / "java"
    done = _run(["mvn", "-o", "-B", "-q", "package"], where)  # offline once the cache is warm
    if done.returncode != 0:
        done = _run(["mvn", "-B", "-q", "package"], where)
    _check(done, "mvn package")
    return BuiltClient("java", ("java", "-jar", str(where / "target" / "sluice-client.jar")))


def build_go(out_dir: Path) -> BuiltClient:
    """``go generate`` (hamba/avro's avrogen), ``go vet``, ``go test``, ``go build``."""
    _need("go")
    where = CLIENTS / "go"
    for argv in (["go", "generate", "./..."], ["go", "vet", "./..."], ["go", "test", "./..."]):
        _check(_run(argv, where), " ".join(argv))
    binary = out_dir / "sluice-client-go"
    _check(_run(["go", "build", "-o", str(binary), "."], where), "go build")
    return BuiltClient("go", (str(binary),))


def build_ts() -> BuiltClient:
    """``npm ci`` from the lock file, then ``npm test`` (generate the types, tsc, node --test)."""
    _need("node", "npm")
    where = CLIENTS / "ts"
    _check(_run(["npm", "ci", "--no-audit", "--no-fund", "--prefer-offline"], where), "npm ci")
    _check(_run(["npm", "test"], where), "npm test")
    return BuiltClient("ts", ("node", str(where / "dist" / "src" / "main.js")))
