"""Build etcd, kube-apiserver, kube-controller-manager and kwok from their Go modules.

Each piece has a small build module of ours under ``gomod/`` (``go.mod`` + ``go.sum``
committed): ``kube`` requires ``k8s.io/kubernetes`` with every staging module pinned by a
``replace`` directive (as is usual when k8s.io/kubernetes is used as a library), ``etcd``
requires ``go.etcd.io/etcd/server/v3`` and ``kwok`` requires ``sigs.k8s.io/kwok``. The Go
command fetches the sources through the Go module proxy (``GOPROXY``); binaries land in
``~/.cache/sluice/kubernetes/<piece>-<version>/`` and are built once per version.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from infra.kubernetes._errors import KubernetesSetupError

__all__ = ["PIECES", "Piece", "binaries", "cache_root", "ensure_built"]

GOMOD = Path(__file__).with_name("gomod")


@dataclass(frozen=True, slots=True)
class Piece:
    """One build module: its folder under gomod/, the version it pins, what it builds."""

    name: str
    version: str
    packages: tuple[tuple[str, str], ...]  # (binary name, Go package)
    optional: bool = False
    """Built only when asked for (``kube-scheduler``: the baseline of bench_kube_bind)."""


PIECES = (
    Piece("etcd", "v3.6.8", (("etcd", "go.etcd.io/etcd/server/v3"),)),
    Piece("kubernetes", "v1.36.3", (
        ("kube-apiserver", "k8s.io/kubernetes/cmd/kube-apiserver"),
        ("kube-controller-manager", "k8s.io/kubernetes/cmd/kube-controller-manager"),
    )),
    Piece("kwok", "v0.8.0", (("kwok", "sigs.k8s.io/kwok/cmd/kwok"),)),
    Piece("kube-scheduler", "v1.36.3", (
        ("kube-scheduler", "k8s.io/kubernetes/cmd/kube-scheduler"),
    ), optional=True),
)
_MODULE_DIR = {"etcd": "etcd", "kubernetes": "kube", "kwok": "kwok", "kube-scheduler": "kube"}
# kwok's stage files (the lifecycle it plays for fake nodes and pods), copied at build time.
_KWOK_STAGES = (
    "kustomize/stage/node/fast/node-initialize.yaml",
    "kustomize/stage/node/heartbeat/node-heartbeat.yaml",
    "kustomize/stage/node/chaos/node-not-ready.yaml",
    "kustomize/stage/pod/general/pod-create.yaml",
    "kustomize/stage/pod/general/pod-init-container-running.yaml",
    "kustomize/stage/pod/general/pod-init-container-completed.yaml",
    "kustomize/stage/pod/general/pod-ready.yaml",
    "kustomize/stage/pod/general/pod-complete.yaml",
    "kustomize/stage/pod/general/pod-delete.yaml",
)


def cache_root() -> Path:
    """Where built binaries are kept (``SLUICE_K8S_CACHE`` or ~/.cache/sluice/kubernetes)."""
    default = Path.home() / ".cache" / "sluice" / "kubernetes"
    return Path(os.environ.get("SLUICE_K8S_CACHE", default))


def _dir(piece: Piece) -> Path:
    return cache_root() / f"{piece.name}-{piece.version}"


def binaries() -> dict[str, Path]:
    """Binary name → path in the cache (they may not be built yet)."""
    return {name: _dir(p) / name for p in PIECES for name, _ in p.packages}


def _go() -> str:
    go = shutil.which("go")
    if go is None:
        raise KubernetesSetupError("the Go toolchain is not installed (go not on PATH); "
                                   "it builds etcd, kube-apiserver and kwok from their modules")
    return go


def _build(piece: Piece, log: Path) -> float:
    """Build one piece into the cache; returns the seconds it took."""
    target = _dir(piece)
    target.mkdir(parents=True, exist_ok=True)
    module = GOMOD / _MODULE_DIR[piece.name]
    env = {**os.environ, "GOFLAGS": os.environ.get("GOFLAGS", "-buildvcs=false"),
           "CGO_ENABLED": "0"}
    began = time.monotonic()
    command = ["nice", "-n", "10", _go(), "build", "-trimpath", "-ldflags=-s -w",
               "-o", str(target) + "/", *[pkg for _, pkg in piece.packages]]
    with log.open("ab") as out:
        done = subprocess.run(command, cwd=module, env=env, stdout=out, stderr=out, check=False)
    if done.returncode != 0:
        raise KubernetesSetupError(f"building {piece.name} {piece.version} failed "
                                   f"(exit {done.returncode}); see {log}")
    built = {Path(pkg).name if not pkg.endswith("/v3") else "server": name
             for name, pkg in piece.packages}
    for produced, name in built.items():  # go names a /v3 main after its parent folder
        if (target / produced).exists() and produced != name:
            (target / produced).rename(target / name)
    if piece.name == "kwok":
        _copy_stages(module, target, env)
    return time.monotonic() - began


def _copy_stages(module: Path, target: Path, env: dict[str, str]) -> None:
    source = subprocess.run([_go(), "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/kwok"],
                            cwd=module, env=env, capture_output=True, text=True, check=True)
    root = Path(source.stdout.strip())
    texts = [(root / rel).read_text().strip() for rel in _KWOK_STAGES]
    (target / "stages.yaml").write_text("\n---\n".join(texts) + "\n")


def ensure_built(log: Path | None = None, say: bool = False,
                 optional: bool = False) -> dict[str, Path]:
    """Build what is missing from the cache (``optional`` pieces too when asked); returns
    binary name → path."""
    log = log or cache_root() / "build.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    for piece in PIECES:
        if piece.optional and not optional:
            continue
        wanted = [_dir(piece) / name for name, _ in piece.packages]
        if piece.name == "kwok":
            wanted.append(_dir(piece) / "stages.yaml")
        if all(path.exists() for path in wanted):
            continue
        if say:
            print(f"building {piece.name} {piece.version} (log: {log})", flush=True)
        seconds = _build(piece, log)
        if say:
            print(f"built {piece.name} {piece.version} in {seconds:.0f} s", flush=True)
    return binaries()
