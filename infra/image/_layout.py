"""OCI image layouts with umoci, and the OCI archive a user pushes with skopeo.

umoci works on an OCI layout directory directly (no daemon, no storage driver): ``raw add-layer``
appends a tar we made as a layer, ``config`` writes the image configuration. An *oci-archive*
is a tar of such a layout, what ``skopeo copy oci-archive:FILE docker://…`` and
``podman load`` read.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tarfile
from collections.abc import Sequence
from pathlib import Path

from infra.image._spec import ImageBuildError

__all__ = ["add_layer", "copy_layout", "init_layout", "name_reference", "umoci",
           "write_archive"]

_REF_NAME = "org.opencontainers.image.ref.name"


def umoci(*argv: str) -> str:
    """Run ``umoci`` (the build runs as root, like mmdebstrap's root mode: no ``--rootless``)."""
    path = shutil.which("umoci")
    if path is None:
        raise ImageBuildError("umoci is not installed (apt-get install umoci)")
    done = subprocess.run([path, *argv], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise ImageBuildError(f"umoci {' '.join(argv)}: {done.stderr.strip() or done.stdout}")
    return done.stdout


def init_layout(layout: Path, tag: str) -> None:
    """A new layout with one empty image under ``tag``."""
    umoci("init", "--layout", str(layout))
    umoci("new", "--image", f"{layout}:{tag}")


def add_layer(layout: Path, tag: str, layer_tar: Path, created_by: str,
              new_tag: str = "") -> None:
    """Append an uncompressed tar as a (gzip) layer of ``tag`` (or of a new tag)."""
    argv = ["raw", "add-layer", "--image", f"{layout}:{tag}",
            "--history.created_by", created_by]
    if new_tag:
        argv += ["--tag", new_tag]
    umoci(*argv, str(layer_tar))


def copy_layout(source: Path, target: Path) -> None:
    """A copy of a layout; blobs are content-addressed and never rewritten, so they are
    hard-linked where the file system allows (the base layer is not copied byte by byte)."""

    def link_or_copy(src: str, dst: str) -> object:
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)
        return dst

    shutil.copytree(source, target, copy_function=link_or_copy)
    for name in ("index.json",):  # rewritten by umoci: never a link into the cache
        path = target / name
        data = path.read_bytes()
        path.unlink()
        path.write_bytes(data)


def name_reference(layout: Path, tag: str, name: str) -> None:
    """Give the image tagged ``tag`` the reference name ``name`` (``sluice:0.1.0``).

    umoci's tags are plain tags (no ``:``), and an archive whose reference is ``0.1.0`` is
    loaded by podman as ``localhost/0.1.0``; with ``sluice:0.1.0`` it is ``localhost/sluice:0.1.0``
    (skopeo copies the archive's only image whatever its reference)."""
    index_path = layout / "index.json"
    index = json.loads(index_path.read_text())
    found = [m for m in index["manifests"] if m.get("annotations", {}).get(_REF_NAME) == tag]
    if len(found) != 1:
        raise ImageBuildError(f"{layout}: {len(found)} images tagged {tag!r}, not one")
    found[0]["annotations"][_REF_NAME] = name
    index_path.write_text(json.dumps(index))


def write_archive(layout: Path, archive: Path, members: Sequence[str] = ()) -> None:
    """The layout as an *oci-archive* (an uncompressed tar: the blobs are gzip already)."""
    archive.parent.mkdir(parents=True, exist_ok=True)
    partial = archive.with_name(archive.name + ".partial")
    names = list(members) or sorted(p.name for p in layout.iterdir())
    with tarfile.open(partial, "w", format=tarfile.PAX_FORMAT) as tar:
        for name in names:
            tar.add(layout / name, arcname=name, filter=_owned_by_root)
    partial.replace(archive)


def _owned_by_root(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info
