"""A batch script travels sealed: the ledger never holds its text; the job runs it; its owner
reads it back (red team, 8 Dec 2026: every local user read every job's script on the
ledger's users' listener)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.harness import LocalSystem
from tests.e2e.ledger import facts

pytestmark = [pytest.mark.kafka, pytest.mark.e2e]

SECRET = "hunter2-not-on-the-ledger"


def _cli(system: LocalSystem, cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **system.settings.as_env()}
    return subprocess.run([sys.executable, "-m", "cli.main", *argv], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=120, check=False)


def test_a_sealed_batch_script_runs_and_its_owner_reads_it(system: LocalSystem,
                                                          tmp_path: Path) -> None:
    system.start_core()
    system.start_nodes(1)
    system.wait_nodes_idle(1)
    script = tmp_path / "job.sh"
    script.write_text(f"#!/bin/sh\n#SBATCH -J sealed\necho ran {SECRET}\n")
    done = _cli(system, tmp_path, "submit", "-W", "--parsable", "-o", str(tmp_path / "out.txt"),
                str(script))
    assert done.returncode == 0, done.stdout + done.stderr + system.log_tail()
    job_id = done.stdout.strip().split(";")[0]
    assert (tmp_path / "out.txt").read_text() == f"ran {SECRET}\n"  # the node opened it

    queued = [r.record for r in facts(system.settings, "JobQueued")]
    assert queued and all(r["spec"]["script"].startswith("sealed:") for r in queued)
    assert not any(SECRET in str(r) for r in queued)

    shown = _cli(system, tmp_path, "show", "job", job_id, "--script")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == script.read_text()  # the views hold the key: the owner reads it
