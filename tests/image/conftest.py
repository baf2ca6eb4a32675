"""The Sluice image (``python -m infra.image build``) run by podman with a real OCI runtime.

Opt-in: ``SLUICE_IMAGE_TESTS=1`` (``.ci/run`` sets it after building the image). The tests
skip, saying why, when it is not set, when no image was built, when podman or an OCI runtime
(runc, else crun) is missing, or when not run as root (the node daemon's container runs as
root with only the capabilities it needs; rootless podman is not what is tested here).

Podman gets a storage of its own under the test's temporary folder (``--root``/``--runroot``,
the overlay driver), so nothing is left in the machine's container storage: the archive is
loaded there, and everything is removed at the end.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from infra.image import Built, built

# Below this sandbox's hard limits: podman run as root asks for 1048576 open files otherwise,
# which a host without CAP_SYS_RESOURCE refuses.
_ULIMITS = ("--ulimit", "nofile=4096:4096", "--ulimit", "nproc=4096:4096")


@dataclass
class Podman:
    """``podman`` on a private storage, with the image loaded under ``image``."""

    storage: Path
    runtime: str
    image: str
    built: Built

    def argv(self, *args: str) -> list[str]:
        return ["podman", "--root", str(self.storage / "root"),
                "--runroot", str(self.storage / "run"), "--storage-driver", "overlay",
                "--cgroup-manager", "cgroupfs", "--events-backend", "file",
                "--runtime", self.runtime, *args]

    def __call__(self, *args: str, timeout: float = 120,
                 check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(self.argv(*args), capture_output=True, text=True,
                              timeout=timeout, check=False)
        if check and done.returncode != 0:
            raise AssertionError(f"podman {' '.join(args)}: exit {done.returncode}\n"
                                 f"{done.stdout}\n{done.stderr}")
        return done

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """``podman run --rm --network host`` with the sandbox's ulimits."""
        return self("run", "--rm", "--network", "host", *_ULIMITS, *args, timeout=timeout,
                    check=False)

    def start(self, name: str, *args: str) -> None:
        """A detached container (``podman run -d``)."""
        self("run", "-d", "--name", name, "--network", "host", *_ULIMITS, *args)

    def logs(self, name: str) -> str:
        done = self("logs", name, check=False)
        return done.stdout + done.stderr


@pytest.fixture(scope="session")
def podman(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Podman]:
    if os.environ.get("SLUICE_IMAGE_TESTS") != "1":
        pytest.skip("the image tests are opt-in: SLUICE_IMAGE_TESTS=1, after "
                    "`python -m infra.image build` (CI does both)")
    record = built()
    if record is None:
        pytest.skip("no image built: python -m infra.image build")
    if shutil.which("podman") is None:
        pytest.skip("podman is not installed (apt-get install podman runc)")
    runtime = next((r for r in ("runc", "crun") if shutil.which(r)), None)
    if runtime is None:
        pytest.skip("no OCI runtime (apt-get install runc)")
    if os.geteuid() != 0:
        pytest.skip("the image tests run podman as root")
    storage = tmp_path_factory.mktemp("podman")
    pod = Podman(storage, runtime, f"localhost/{record.name}", record)
    try:
        pod("load", "--quiet", "--input", record.archive, timeout=300)
        yield pod
    finally:
        _clean_up(pod, storage)


def _clean_up(pod: Podman, storage: Path) -> None:
    """Remove the containers, the image and the private storage. A podman that hangs in its
    own clean-up (once in a CI run: ``rm --all --force`` had removed every container and still
    not exited after 120 s) is warned about and passed over: the tests have run, and a
    clean-up that never ends must not turn them into an error."""
    for args in (("rm", "--all", "--force", "--time", "5"), ("rmi", "--all", "--force")):
        try:
            pod(*args, timeout=300, check=False)
        except subprocess.TimeoutExpired:
            warnings.warn(f"podman {' '.join(args)} did not end in 300 s", stacklevel=1)
    subprocess.run(["umount", "-R", str(storage / "root" / "overlay")], capture_output=True,
                   check=False)
    shutil.rmtree(storage, ignore_errors=True)
