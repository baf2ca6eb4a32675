"""The sluice front against a real system (``sluice up`` on the real broker): ``sbatch``-style
calls served by the warm command server submit, hold, release and cancel real jobs in the
caller's directory, with the script on the caller's standard input."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli import system as sluice_system
from cli.client import PATIENT_POLL_S
from streams.settings import Settings
from tests.e2e.harness import free_port
from tests.front_venv import ROOT, front_venv

pytestmark = [pytest.mark.kafka, pytest.mark.e2e,
              pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")]


@pytest.fixture
def system(kafka_bootstrap: str, tmp_path: Path, unique: str) -> Iterator[dict[str, str]]:
    run_dir = Path(tempfile.mkdtemp(prefix="sluice-front-"))
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("SLUICE_")},
        "KAFKA_BOOTSTRAP": kafka_bootstrap, "SLUICE_HOME": str(tmp_path / "home"),
        "SLUICE_TOPIC_PREFIX": f"front{unique}", "SLUICE_CLUSTER": f"front{unique}",
        "SLUICE_API": f"127.0.0.1:{free_port()}",
        "SLUICE_WORKER_METRICS": f"127.0.0.1:{free_port()}",
        "SLUICE_ALLOW_ROOT_JOBS": "true", "XDG_RUNTIME_DIR": str(run_dir),
        "PYTHONPATH": str(ROOT),
    }
    up = subprocess.run([sys.executable, "-m", "cli.main", "up", "--nodes", "2"], env=env,
                        cwd=tmp_path, capture_output=True, text=True, timeout=240, check=False)
    assert up.returncode == 0, up.stdout + up.stderr
    try:
        yield env
    finally:
        subprocess.run([sys.executable, "-m", "cli.main", "down"], env=env, cwd=tmp_path,
                       capture_output=True, text=True, timeout=120, check=False)
        for pid in _servers(run_dir):
            os.kill(pid, 15)
        shutil.rmtree(run_dir, ignore_errors=True)


def _servers(run_dir: Path) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            words = (entry / "cmdline").read_bytes().split(b"\0") if entry.name.isdigit() else []
        except OSError:
            continue
        if b"cli.command_server" in words and any(w.startswith(bytes(run_dir)) for w in words):
            found.append(int(entry.name))
    return found


def test_served_calls_submit_hold_release_and_cancel_real_jobs(
        system: dict[str, str], tmp_path: Path) -> None:
    program = front_venv(tmp_path)
    work = tmp_path / "work"
    work.mkdir()

    def sluice(*argv: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(program), *argv], env=system, cwd=work, input=stdin,
                              capture_output=True, text=True, timeout=120, check=False)

    run_dir = Path(system["XDG_RUNTIME_DIR"])
    deadline = time.monotonic() + 30
    while not _servers(run_dir) and time.monotonic() < deadline:
        sluice("submit", "--help")
        time.sleep(0.2)
    assert _servers(run_dir), "no command server started"

    script = "#!/bin/sh\n#SBATCH -J fromstdin\necho \"job $SLURM_JOB_ID in $PWD\"\n"
    done = sluice("submit", "--sbatch", "-W", stdin=script)
    assert done.returncode == 0, done.stderr
    job = done.stdout.split()[3]
    assert (work / f"slurm-{job}.out").read_text() == f"job {job} in {work}\n"

    later = sluice("submit", "--parsable", "--begin", "now+1hour", "--", "true")
    assert later.returncode == 0, later.stderr
    held = later.stdout.strip().split(";")[0]
    assert sluice("hold", held).returncode == 0
    assert sluice("release", held).returncode == 0
    assert sluice("cancel", held).returncode == 0
    shown = subprocess.run([sys.executable, "-m", "cli.main", "show", "job", held], env=system,
                           capture_output=True, text=True, timeout=60, check=False)
    assert "JobState=CANCELLED" in shown.stdout, shown.stdout + shown.stderr
    for argv in (["queue", "-t", "all"], ["nodes"], ["show", "job", job],
                 ["history", "-j", job], ["scontrol", "show", "job", held]):
        served = sluice(*argv)
        plain = subprocess.run([str(program), *argv],
                               env={**system, "SLUICE_COMMAND_SERVER": "off"}, cwd=work,
                               capture_output=True, text=True, timeout=60, check=False)
        assert served.returncode == plain.returncode == 0, served.stderr + plain.stderr
        assert served.stdout == plain.stdout and served.stdout, argv
    bad = sluice("submit", "-N", "99", "--", "true")
    assert bad.returncode == 1
    assert "Requested node configuration is not available" in bad.stderr


def test_waiting_calls_when_the_system_vanishes(
        system: dict[str, str], tmp_path: Path) -> None:
    """``sbatch --wait`` (served by the front's command server) and ``srun`` (the Python CLI)
    wait on running jobs; the system's processes go away under them (its node daemons, views
    and worker; munged stays, so credentials are not what fails). Both waited for ever, saying
    nothing. Now ``srun`` ends after ``SLUICE_CONTACT_TIMEOUT`` with Slurm's "Unable to
    contact", no traceback, status 1; ``sbatch --wait`` says it is retrying (Slurm's line) and
    waits on, as Slurm's sbatch does for a controller that is away."""
    program = front_venv(tmp_path)
    env = {**system, "SLUICE_CONTACT_TIMEOUT": "5"}
    work = tmp_path / "work"
    work.mkdir()
    run_dir = Path(system["XDG_RUNTIME_DIR"])
    deadline = time.monotonic() + 30
    while not _servers(run_dir) and time.monotonic() < deadline:
        subprocess.run([str(program), "submit", "--help"], env=env, capture_output=True,
                       timeout=60, check=False)
        time.sleep(0.2)
    assert _servers(run_dir), "no command server started"
    waits = {name: subprocess.Popen([str(program), *argv], env=env, cwd=work, text=True,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for name, argv in (("sbatch", ["submit", "-W", "--", "sleep", "300"]),
                                ("srun", ["run", "--", "sleep", "300"]))}
    try:
        deadline = time.monotonic() + 120
        running: list[str] = []
        while len(running) < 2 and time.monotonic() < deadline:
            queue = subprocess.run([sys.executable, "-m", "cli.main", "queue", "-h", "-t",
                                    "running", "-o", "%i"], env=system, capture_output=True,
                                   text=True, timeout=60, check=False)
            running = queue.stdout.split()
            time.sleep(0.5)
        assert len(running) == 2, "the jobs did not start"
        run = sluice_system.run_dir(Settings.from_env(system))  # munged stays: credentials work
        for pid_file in [*sorted(run.glob("node-*.pid")), run / "projections.pid",
                         run / "worker.pid"]:
            assert sluice_system.stop_process(pid_file), pid_file
        _, err = waits["srun"].communicate(timeout=120)
        assert waits["srun"].returncode == 1, err
        assert "Unable to contact the Sluice system for 5 s" in err, err
        assert "Traceback" not in err, err
        sbatch = waits["sbatch"]
        assert sbatch.stderr is not None
        os.set_blocking(sbatch.stderr.fileno(), False)
        said = ""
        deadline = time.monotonic() + 60
        while "retrying" not in said and time.monotonic() < deadline:
            said += sbatch.stderr.read() or ""
            time.sleep(0.2)
        assert ("Currently unable to load job state information, retrying: Unable to contact "
                "the Sluice system for 5 s") in said, said
        time.sleep(PATIENT_POLL_S + 1)  # a poll or more after it said so
        assert sbatch.poll() is None, said + (sbatch.stderr.read() or "")  # it waits on
        assert "Traceback" not in said, said
    finally:
        for proc in waits.values():
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
