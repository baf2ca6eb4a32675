"""A second worker started without the cluster's worker secret or command key is refused.

Red team (7 Dec 2026, live on ``sluice up --nodes 4``): a second ``sluice worker`` with a
``SLUICE_HOME`` of its own made its own secret and signing key, and nothing said so. Its intake
took half of the requests partitions and sealed what it read with its secret, which the
shard's owner ignores (``inbox offset … ignored: not sealed by this cluster's worker``): two of
four ``sbatch -W`` calls waited for ever. Had the shard moved to it, the nodes would have
refused every command it signed. Now it exits 2 at its start, naming the files to copy, and
writes neither; a secret that exists but does not open the inbox's newest record is warned
about and the worker starts (a rotation whose old workers stopped moments ago).
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from tests.e2e.harness import LocalSystem

pytestmark = [pytest.mark.kafka, pytest.mark.e2e, pytest.mark.slow]


def _exit_code(system: LocalSystem, name: str, timeout_s: float = 60) -> int | None:
    process = system.processes.pop(name)
    try:
        return process.wait(timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)
        return None


def test_a_second_worker_without_the_secret_and_signing_key_is_refused_and_makes_neither(
    system: LocalSystem, tmp_path: Path,
) -> None:
    system.start_core()
    system.start_nodes(1, cpus=2)
    system.wait_nodes_idle(1)  # the inbox holds sealed records, the node commands signed ones
    sluid = system.client.sluids.new()
    system.client.send(sluid, "SubmitJob", {"job_sluid": sluid, "spec": {
        "user": "root", "command": ["true"], "workdir": str(tmp_path)}})
    system.wait(lambda: system.client.get(f"/v1/jobs/{sluid}")["job"]["state"] == "COMPLETED",
                90, "the job to complete")
    home = tmp_path / "other-host"
    own_key = home / "keys" / "command-ed25519.key"
    system.start("worker-2", "worker", env={
        "SLUICE_HOME": str(home), "SLUICE_WORKER_METRICS": "", "SLUICE_COMMAND_KEY": str(own_key),
        "SLUICE_COMMAND_PUBKEY": str(home / "keys" / "command-ed25519.pub")})
    assert _exit_code(system, "worker-2") == 2
    log = (system.settings.home / "logs" / "worker-2.log").read_text()
    assert f"no worker secret at {home / 'worker' / 'inbox.key'}" in log
    assert f"no node-command signing key at {own_key}" in log
    assert "Traceback" not in log
    assert not (home / "worker" / "inbox.key").exists()
    assert not own_key.exists()

    wrong = tmp_path / "wrong.key"
    wrong.write_bytes(os.urandom(32))
    wrong.chmod(0o600)
    system.start("worker-3", "worker", env={
        "SLUICE_HOME": str(tmp_path / "third"), "SLUICE_WORKER_METRICS": "",
        "SLUICE_WORKER_SECRET": str(wrong)})
    system.wait(lambda: "does not open the shard inbox's newest sealed record" in (
        system.settings.home / "logs" / "worker-3.log").read_text(), 60, "the warning")
    assert _exit_code(system, "worker-3", timeout_s=3) is None, "the worker did not start"
