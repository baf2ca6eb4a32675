"""The Sluice container image, built without Docker: Debian packages (mmdebstrap), PyPI wheels,
umoci; an OCI archive a user pushes with ``skopeo copy oci-archive:FILE docker://REG/sluice:TAG``.

Two layers (docs/kubernetes.md, "The image"):

1. **base** (slow, cached under ``~/.cache/sluice/image/base-<key>/``, the key a hash of the
   Debian suite, mirrors and packages, the image's user and pyproject's pinned dependencies):
   Debian bookworm's ``essential`` variant with Python 3.11, libstdc++6, ca-certificates,
   tini, libmunge2 and libsodium23, and a venv ``/opt/sluice`` holding the dependencies
   (wheels only, no pip left);
2. **app** (seconds): a wheel of this repository in that venv, the ``sluice`` script, and the
   configuration: user ``10001:10001`` (``sluice``), entrypoint ``tini -- sluice``, OCI labels.

Public API::

    build(archive=None, say=print) -> Built     the archive (default build/image/sluice-V.oci.tar)
    built(archive=None) -> Built | None         what the last build wrote, if it is there
    image_name() -> "sluice:<version>"          the name the build gives the image

``python -m infra.image build|info`` does the same from a shell.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from infra.image._app import app_work, config_arguments, now_utc, revision, stage_app, wheel
from infra.image._base import BASE_TAG, base_dir, ensure_base
from infra.image._layout import add_layer, copy_layout, name_reference, umoci, write_archive
from infra.image._spec import (
    APP_USER,
    HOME_DIR,
    VENV,
    ImageBuildError,
    Project,
    base_key,
    cache_root,
    default_archive,
    image_name,
)

__all__ = ["APP_USER", "HOME_DIR", "VENV", "Built", "ImageBuildError", "base_dir", "build",
           "built", "default_archive", "image_name"]


@dataclass(frozen=True, slots=True)
class Built:
    """One build's result, also written beside the archive as ``<archive>.json``."""

    archive: str
    name: str          # sluice:<version>
    tag: str           # <version>; the archive's reference name is ``name``
    revision: str      # the commit built (``-dirty``: with uncommitted changes)
    base_key: str
    base_seconds: float  # 0 when the base came from the cache
    app_seconds: float
    compressed_bytes: int  # the layers as a registry stores them (gzip)
    created: str

    @property
    def path(self) -> Path:
        return Path(self.archive)


def _sidecar(archive: Path) -> Path:
    return archive.with_name(archive.name + ".json")


def built(archive: Path | None = None) -> Built | None:
    """The last build's record, if its archive is still there."""
    archive = archive or default_archive()
    try:
        record = json.loads(_sidecar(archive).read_text())
    except (OSError, ValueError):
        return None
    return Built(**record) if archive.is_file() else None


def _compressed_bytes(layout: Path) -> int:
    index = json.loads((layout / "index.json").read_text())
    digest = index["manifests"][0]["digest"].split(":", 1)[1]
    manifest = json.loads((layout / "blobs" / "sha256" / digest).read_text())
    return sum(int(layer["size"]) for layer in manifest["layers"])


def build(archive: Path | None = None, say: Callable[[str], None] = print) -> Built:
    """Build the image (the base from the cache when its inputs are unchanged) and write the
    OCI archive; returns what was built."""
    project = Project.read()
    archive = (archive or default_archive(project)).resolve()
    began = time.monotonic()
    cached = (base_dir(project) / "base.json").is_file()
    base = ensure_base(project, say)
    base_seconds = 0.0 if cached else time.monotonic() - began
    app_began = time.monotonic()
    created, revision_id, tag = now_utc(), revision(), project.version
    work = app_work(cache_root() / "work")  # beside the cache: its blobs are hard-linked
    try:
        wheel_path = wheel(project, work)
        layer = stage_app(project, wheel_path, work)
        layout = work / "layout"
        copy_layout(base / "layout", layout)
        add_layer(layout, BASE_TAG, layer, f"pip install --no-deps --target {wheel_path.name}")
        umoci("config", "--image", f"{layout}:{BASE_TAG}",
              *config_arguments(project, tag, created, revision_id))
        umoci("rm", "--image", f"{layout}:{BASE_TAG}")
        umoci("gc", "--layout", str(layout))
        name_reference(layout, tag, image_name(project))
        compressed = _compressed_bytes(layout)
        write_archive(layout, archive)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result = Built(archive=str(archive), name=image_name(project), tag=tag,
                   revision=revision_id, base_key=base_key(project),
                   base_seconds=round(base_seconds, 1),
                   app_seconds=round(time.monotonic() - app_began, 1),
                   compressed_bytes=compressed, created=created)
    _sidecar(archive).write_text(json.dumps(asdict(result), indent=1) + "\n")
    say(f"{result.name} ({revision_id[:12]}): {archive}, {compressed / 2**20:.0f} MiB compressed;"
        f" app layer {result.app_seconds:.0f} s")
    return result
