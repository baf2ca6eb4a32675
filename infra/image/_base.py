"""The base layer: Debian bookworm from Debian packages (mmdebstrap) plus Sluice's pinned
dependencies from PyPI in a venv, cached per :func:`infra.image._spec.base_key`.

mmdebstrap's ``essential`` variant (only Essential:yes packages: no apt, no perl) with
Python 3.11, libstdc++6, ca-certificates, tini, libmunge2 and libsodium23; documentation,
manuals and locales are never unpacked. A customize hook makes the venv ``/opt/sluice`` in the
new root (``chroot``), installs the dependencies as wheels only (``--only-binary=:all:``: no
compiler in the image or needed), with no pip cache, then removes pip, setuptools and the
``-venv`` packages again and adds the ``sluice`` user. The root file system becomes one layer
of an OCI layout under ``~/.cache/sluice/image/base-<key>/``.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from infra.image._layout import add_layer, init_layout
from infra.image._spec import (
    APP_USER,
    BASE_PACKAGES,
    DPKG_EXCLUDES,
    HOME_DIR,
    MIRRORS,
    PRUNED,
    PYTHON,
    SUITE,
    VENV,
    ImageBuildError,
    Project,
    base_inputs,
    base_key,
    cache_root,
)

__all__ = ["BASE_TAG", "base_dir", "ensure_base"]

BASE_TAG = "base"
_FORWARDED_ENV = ("http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY",
                  "NO_PROXY", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL")


def base_dir(project: Project) -> Path:
    """The cache folder of this project's base layer (it may not exist yet)."""
    return cache_root() / f"base-{base_key(project)}"


def ensure_base(project: Project, say: Callable[[str], None] = print) -> Path:
    """The base layout's folder, built first if not cached. Returns ``<dir>`` holding
    ``layout/`` (tag ``base``) and ``base.json`` (its inputs, pip freeze, build time)."""
    final = base_dir(project)
    if (final / "base.json").is_file():
        say(f"base layer cached: {final}")
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"{final.name}.partial-", dir=final.parent))
    try:
        began = time.monotonic()
        say(f"building the base layer (Debian {SUITE} + {len(project.dependencies)} pinned "
            f"dependencies) in {work}")
        rootfs_tar = work / "rootfs.tar"
        _mmdebstrap(project, work, rootfs_tar)
        layout = work / "layout"
        init_layout(layout, BASE_TAG)
        add_layer(layout, BASE_TAG, rootfs_tar,
                  f"mmdebstrap --variant=essential {SUITE} + pip install (infra/image/_base.py)")
        size = rootfs_tar.stat().st_size
        rootfs_tar.unlink()
        seconds = time.monotonic() - began
        record = {"key": base_key(project), "inputs": base_inputs(project),
                  "seconds": round(seconds, 1), "rootfs_bytes": size,
                  "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                  "freeze": (work / "freeze.txt").read_text().split()}
        (work / "freeze.txt").unlink()
        (work / "hook.sh").unlink()
        (work / "requirements.txt").unlink()
        (work / "base.json").write_text(json.dumps(record, indent=1) + "\n")
        work.chmod(0o755)
        try:
            work.rename(final)
        except OSError:
            if not (final / "base.json").is_file():
                raise
            shutil.rmtree(work)  # a concurrent build of the same key finished first
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    say(f"base layer built in {seconds:.0f} s ({size / 2**20:.0f} MiB unpacked): {final}")
    return final


def _host_ca_bundle() -> Path | None:
    """The CA bundle the host's pip trusts (a TLS-intercepting proxy's CA is in it)."""
    for candidate in (os.environ.get("PIP_CERT"), os.environ.get("SSL_CERT_FILE"),
                      "/etc/ssl/certs/ca-certificates.crt"):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


def _hook(project: Project, work: Path) -> Path:
    """The customize hook (``sh hook.sh ROOT``): venv, wheels, user; pip removed again."""
    (work / "requirements.txt").write_text("\n".join(project.dependencies) + "\n")
    env = ["PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", "LANG=C.UTF-8"]
    env += [f"{name}={os.environ[name]}" for name in _FORWARDED_ENV if os.environ.get(name)]
    ca = _host_ca_bundle()
    cert = ["--cert", "/tmp/build-ca.crt"] if ca else []
    pip = [f"{VENV}/bin/python", "-m", "pip"]
    install = [*pip, "install", "--no-cache-dir", "--only-binary=:all:",
               "--disable-pip-version-check", "--no-input", *cert,
               "-r", "/tmp/requirements.txt"]
    user = APP_USER
    q = shlex.quote
    lines = [
        "set -eu",
        'root="$1"',
        f"run() {{ env -i {' '.join(q(e) for e in env)} /usr/sbin/chroot \"$root\" \"$@\"; }}",
        f"cp {q(str(work / 'requirements.txt'))} \"$root/tmp/requirements.txt\"",
        *([f"cp {q(str(ca))} \"$root/tmp/build-ca.crt\""] if ca else []),
        f"run {PYTHON} -m venv {VENV}",
        f"run {' '.join(q(a) for a in install)}",
        f"run {' '.join(pip)} freeze --all > {q(str(work / 'freeze.txt'))}",
        f"run {' '.join(pip)} uninstall --yes --quiet pip setuptools",
        f"rm -f \"$root{VENV}\"/bin/pip* \"$root{VENV}\"/bin/Activate.ps1",
        f"run dpkg --purge {PYTHON}-venv python3-pip-whl python3-setuptools-whl >/dev/null",
        # kubernetes' asyncio copy of its client (68 MB with its .pyc): Sluice never imports it
        *(f"rm -rf \"$root{VENV}/lib/{PYTHON}/site-packages/{path}\"" for path in PRUNED),
        f"echo '{user.name}:x:{user.uid}:{user.gid}:Sluice:{HOME_DIR}:/usr/sbin/nologin'"
        " >> \"$root/etc/passwd\"",
        f"echo '{user.name}:x:{user.gid}:' >> \"$root/etc/group\"",
        f"echo '{user.name}:!:1::::::' >> \"$root/etc/shadow\"",
        f"mkdir -p \"$root{HOME_DIR}\"",
        f"chown {user.uid}:{user.gid} \"$root{HOME_DIR}\"",
        "rm -f \"$root/tmp/requirements.txt\" \"$root/tmp/build-ca.crt\"",
        "rm -rf \"$root/root/.cache\" \"$root/var/cache/debconf\"/*-old",
    ]
    hook = work / "hook.sh"
    hook.write_text("\n".join(lines) + "\n")
    return hook


def _mmdebstrap(project: Project, work: Path, output: Path) -> None:
    path = shutil.which("mmdebstrap")
    if path is None:
        raise ImageBuildError("mmdebstrap is not installed (apt-get install mmdebstrap)")
    hook = _hook(project, work)
    argv = [path, "--variant=essential", f"--include={','.join(BASE_PACKAGES)}",
            "--skip=output/dev", "--format=tar",
            *(f"--dpkgopt=path-exclude={pattern}" for pattern in DPKG_EXCLUDES),
            f"--customize-hook=sh {shlex.quote(str(hook))} \"$1\"",
            SUITE, str(output), *MIRRORS]
    log = work / "mmdebstrap.log"
    with log.open("w") as out:
        done = subprocess.run(["nice", "-n", "10", *argv], stdout=out, stderr=subprocess.STDOUT,
                              check=False)
    if done.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-25:])
        raise ImageBuildError(f"mmdebstrap failed (exit {done.returncode}):\n{tail}")
    log.unlink()
