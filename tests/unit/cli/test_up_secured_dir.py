"""``sluice up --plaintext`` on a home whose bundled broker is secured (``sluice up``'s default)
is refused before anything starts: it used to probe the system's users' listener, take that
PLAINTEXT port for a broker of someone else's, and record that it had not started it, so
``sluice down`` then left the JVM running."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from infra.kafka._config import plan_cluster, save_spec


def test_plaintext_up_on_a_secured_broker_directory_is_refused_before_anything_starts(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    save_spec(home / "kafka", plan_cluster(1, None, "4.1.0", secure=True))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KAFKA_", "SLUICE_"))}
    env.update({"SLUICE_HOME": str(home), "SLUICE_API": "127.0.0.1:1",
                "SLUICE_WORKER_METRICS": "off", "SLUICE_CONF": str(tmp_path / "none")})
    done = subprocess.run([sys.executable, "-m", "cli.main", "up", "--plaintext"], env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "holds this system's secured broker" in done.stderr
    assert "without --plaintext" in done.stderr and "Traceback" not in done.stderr
    assert not list((home / "run").glob("*.pid"))
    assert not (home / "run" / "system.json").exists()
    assert json.loads((home / "kafka" / "cluster.json").read_text())["secure"] is True


def test_secure_and_plaintext_are_one_or_the_other() -> None:
    done = subprocess.run([sys.executable, "-m", "cli.main", "up", "--secure", "--plaintext"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2 and "not allowed with argument" in done.stderr
