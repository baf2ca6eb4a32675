"""What the Sluice image is: its Debian base, its user, its paths, its names and cache keys.

Everything the two layers depend on is here, so the cache key of the slow base layer is the
hash of exactly these inputs (the Debian suite, mirrors and packages, the image's user and the
pinned dependencies of ``pyproject.toml``), and a change of Sluice's own code never touches it.
"""

from __future__ import annotations

import hashlib
import json
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "APP_USER",
    "BASE_PACKAGES",
    "BUILDER_VERSION",
    "HOME_DIR",
    "MIRRORS",
    "PRUNED",
    "PYTHON",
    "REPO",
    "SUITE",
    "VENV",
    "ImageBuildError",
    "Project",
    "base_key",
    "cache_root",
    "default_archive",
    "image_name",
]

REPO = Path(__file__).resolve().parents[2]

BUILDER_VERSION = "2"
"""Bumped when the base layer's recipe (the hook below, the excludes) changes."""

SUITE = "bookworm"
MIRRORS = (
    f"deb http://deb.debian.org/debian {SUITE} main",
    f"deb http://deb.debian.org/debian {SUITE}-updates main",
    f"deb http://deb.debian.org/debian-security {SUITE}-security main",
)
PYTHON = "python3.11"  # bookworm's python3
BASE_PACKAGES = (
    PYTHON,               # the interpreter and its standard library (libpython3.11-stdlib)
    f"{PYTHON}-venv",     # ensurepip for the venv; purged again once the venv is made
    "libstdc++6",         # C++ runtime of numpy's, rocksdict's, cel-expr-python's wheels
    "ca-certificates",    # TLS to a secured broker, a schema registry, the Kubernetes API
    "tini",               # PID 1: reaps orphans, forwards signals to `sluice`
    "libmunge2",          # munge credentials when munged's socket is mounted (docs/security.md)
    "libsodium23",        # sealed environments and signed commands (agents/auth/sodium.py)
)
DPKG_EXCLUDES = ("/usr/share/doc/*", "/usr/share/man/*", "/usr/share/info/*",
                 "/usr/share/locale/*", "/usr/share/lintian/*")
PRUNED = ("kubernetes/aio",)
"""Parts of installed distributions removed from the image (Sluice never imports them)."""

VENV = "/opt/sluice"
HOME_DIR = "/var/lib/sluice"  # SLUICE_HOME and the working directory


@dataclass(frozen=True, slots=True)
class User:
    """The image's default, non-root user."""

    name: str
    uid: int
    gid: int


APP_USER = User("sluice", 10001, 10001)


class ImageBuildError(RuntimeError):
    """The image could not be built (the message says which step and why)."""


@dataclass(frozen=True, slots=True)
class Project:
    """What pyproject.toml says the image must contain."""

    name: str
    version: str
    description: str
    license: str
    dependencies: tuple[str, ...]
    scripts: dict[str, str]

    @classmethod
    def read(cls, root: Path = REPO) -> Project:
        data = tomllib.loads((root / "pyproject.toml").read_text())["project"]
        return cls(name=data["name"], version=data["version"],
                   description=data.get("description", ""), license=data.get("license", ""),
                   dependencies=tuple(data["dependencies"]),
                   scripts=dict(data.get("scripts", {})))


def image_name(project: Project | None = None) -> str:
    """``sluice:<version>``: the name the build gives the image (and the operator's default)."""
    project = project or Project.read()
    return f"{project.name}:{project.version}"


def cache_root() -> Path:
    """``~/.cache/sluice/image`` (``SLUICE_IMAGE_CACHE`` moves it)."""
    return Path(os.environ.get("SLUICE_IMAGE_CACHE")
                or Path.home() / ".cache" / "sluice" / "image")


def default_archive(project: Project | None = None) -> Path:
    """Where ``build`` writes the OCI archive: ``build/image/sluice-<version>.oci.tar``."""
    project = project or Project.read()
    return REPO / "build" / "image" / f"{project.name}-{project.version}.oci.tar"


def base_inputs(project: Project) -> dict[str, object]:
    """Everything the base layer depends on (and nothing else)."""
    return {"builder": BUILDER_VERSION, "suite": SUITE, "mirrors": list(MIRRORS),
            "packages": list(BASE_PACKAGES), "dpkg_excludes": list(DPKG_EXCLUDES),
            "pruned": list(PRUNED),
            "venv": VENV, "home": HOME_DIR,
            "user": [APP_USER.name, APP_USER.uid, APP_USER.gid],
            "dependencies": sorted(project.dependencies)}


def base_key(project: Project) -> str:
    """The cache key of the base layer: sha256 of its inputs (first 16 hex digits)."""
    text = json.dumps(base_inputs(project), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
