"""The application layer: a wheel of this repository installed into the base's venv, and the
image configuration (user, entrypoint, environment, OCI labels).

The wheel is built from a clean copy of the sources (never the tree's own ``build/``), then
installed with ``pip install --no-deps --target`` into a staging tree that mirrors
``/opt/sluice``; the ``sluice`` console script is written for the image's interpreter, and the
modules are byte-compiled (unchecked-hash ``.pyc``: the image never changes, and its user cannot
write ``__pycache__``) when this interpreter is a 3.11 like the image's. The staging tree is the
layer: no chroot and no unpacking of the base are needed, so a code change rebuilds in seconds.
"""

from __future__ import annotations

import compileall
import py_compile
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from infra.image._spec import APP_USER, HOME_DIR, REPO, VENV, ImageBuildError, Project

__all__ = ["SOURCES", "config_arguments", "stage_app", "wheel"]

SOURCES = ("pyproject.toml", "README.md", "schemas", "scheduler", "streams", "agents",
           "projections", "infra", "cli", "sim")
"""What the wheel is built from (pyproject's packages and their data)."""
_SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", "libs", "target", "node_modules",
                               "*.egg-info")


def revision() -> str:
    """The commit the image is built from (``-dirty`` when the tree has changes)."""
    def git(*argv: str) -> str:
        done = subprocess.run(["git", "-C", str(REPO), *argv], capture_output=True, text=True,
                              check=False)
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "HEAD") or "unknown"
    return commit + ("-dirty" if git("status", "--porcelain", "--untracked-files=no") else "")


def wheel(project: Project, work: Path) -> Path:
    """``sluice-<version>-py3-none-any.whl`` built from a copy of the sources."""
    source = work / "src"
    source.mkdir()
    for name in SOURCES:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=_SKIP)
        else:
            shutil.copy2(path, source / name)
    out = work / "wheel"
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet",
                           "--disable-pip-version-check", "-w", str(out), str(source)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise ImageBuildError(f"pip wheel failed:\n{done.stderr[-3000:]}")
    wheels = list(out.glob(f"{project.name}-{project.version}-*.whl"))
    if len(wheels) != 1:
        raise ImageBuildError(f"pip wheel made {wheels}, not one {project.name} wheel")
    return wheels[0]


def _site_packages() -> str:
    return f"{VENV.lstrip('/')}/lib/python3.11/site-packages"


def stage_app(project: Project, wheel_path: Path, work: Path) -> Path:
    """The layer's tree (``stage/opt/sluice/...``), then its tar (``app.tar``)."""
    stage = work / "stage"
    site = stage / _site_packages()
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-compile",
                           "--quiet", "--disable-pip-version-check", "--target", str(site),
                           str(wheel_path)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise ImageBuildError(f"pip install --target failed:\n{done.stderr[-3000:]}")
    shutil.rmtree(site / "bin", ignore_errors=True)  # scripts for this host's interpreter
    bin_dir = stage / VENV.lstrip("/") / "bin"
    bin_dir.mkdir(parents=True)
    for name, target in project.scripts.items():
        module, _, func = target.partition(":")
        script = bin_dir / name
        script.write_text(f"#!{VENV}/bin/python3.11\nimport sys\nfrom {module} import {func}\n"
                          f"sys.exit({func}())\n")
        script.chmod(0o755)
    _stage_exec_helper(site)
    if sys.version_info[:2] == (3, 11):
        compileall.compile_dir(site, quiet=1, stripdir=str(stage), prependdir="/",
                               invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
    layer = work / "app.tar"
    with tarfile.open(layer, "w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(stage.rglob("*")):
            tar.add(path, arcname=str(path.relative_to(stage)), recursive=False,
                    filter=_root_owned)
    return layer


def _stage_exec_helper(site: Path) -> None:
    """The C exec helper next to the image's ``supervise.py``, where this host can build it
    (docs/node-daemon.md, "The exec helper"): linked statically or without a C library, so
    the host's build runs in the image. Without a compiler the image's supervisors start
    commands through Python, as before (the daemon's log says which)."""
    from agents.node import exec_helper  # noqa: PLC0415 - only an image build needs it

    target = site / "agents" / "node" / "helper" / exec_helper.BINARY.name
    try:
        how = exec_helper.build(target)
    except exec_helper.HelperBuildError as exc:
        print(f"image: no exec helper ({exc}); commands start through Python", file=sys.stderr)
        return
    if how == "dynamic":  # the host's libc need not be the image's
        target.unlink()
        print("image: the exec helper links only dynamically here; not staged", file=sys.stderr)


def _root_owned(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info


def config_arguments(project: Project, tag: str, created: str,
                     revision_id: str) -> list[str]:
    """``umoci config`` arguments: non-root user, ``tini -- sluice`` entrypoint, OCI labels."""
    labels = {
        "org.opencontainers.image.title": project.name,
        "org.opencontainers.image.description": project.description,
        "org.opencontainers.image.version": project.version,
        "org.opencontainers.image.revision": revision_id,
        "org.opencontainers.image.licenses": project.license,
        "org.opencontainers.image.created": created,
    }
    argv = ["--tag", tag, "--created", created, "--author", "infra/image",
            "--config.user", f"{APP_USER.uid}:{APP_USER.gid}",
            "--config.workingdir", HOME_DIR,
            "--config.exposedports", "6817/tcp",
            "--config.entrypoint", "/usr/bin/tini",
            "--config.entrypoint", "--",
            "--config.entrypoint", f"{VENV}/bin/sluice",
            "--config.cmd", "--help",
            "--config.env", f"PATH={VENV}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin"
                            ":/sbin:/bin",
            "--config.env", f"SLUICE_HOME={HOME_DIR}",
            "--config.env", "PYTHONUNBUFFERED=1",
            "--config.env", "LANG=C.UTF-8",
            "--history.created_by", "umoci config (infra/image/_app.py)"]
    for key, value in labels.items():
        argv += ["--config.label", f"{key}={value}", "--manifest.annotation", f"{key}={value}"]
    return argv


def app_work(parent: Path) -> Path:
    """A scratch folder for one application build."""
    parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix="app-", dir=parent))


def now_utc() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
