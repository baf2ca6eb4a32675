"""Red team, 2026-12-07: under ``sluice up --secure`` another local user, given the client
configuration ``up`` wrote for them and a copy of the ``user`` password (docs/security.md), got a
Python traceback from ``scontrol hold`` (any command that produces to Kafka): the configuration's
``KafkaCA`` was the CA certificate in the broker's private directory (0700), and the CLI did not
take the C extension's ``KafkaException`` for a Kafka error."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from cli.up_auth import shared_ca

ROOT = Path(__file__).resolve().parents[3]


def test_a_ca_others_cannot_read_is_copied_where_they_can_and_a_readable_one_is_kept() -> None:
    with tempfile.TemporaryDirectory(dir="/tmp") as top:  # pytest's own tmp is 0700
        _check_shared_ca(Path(top))


def _check_shared_ca(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "run").mkdir(parents=True)
    private = home / "kafka" / "tls"
    private.mkdir(parents=True)
    ca = private / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\nxyz\n-----END CERTIFICATE-----\n")
    ca.chmod(0o644)
    private.chmod(0o700)
    for folder in (tmp_path, home, home / "run", home / "kafka"):
        folder.chmod(0o755)
    shared = Path(shared_ca(home, str(ca)))
    assert shared == home / "run" / "kafka-ca.pem"
    assert shared.read_bytes() == ca.read_bytes() and shared.stat().st_mode & 0o777 == 0o644
    private.chmod(0o755)
    assert shared_ca(home, str(ca)) == str(ca)  # readable by all: named as it is
    assert shared_ca(home, str(tmp_path / "missing.pem")) == str(tmp_path / "missing.pem")


def test_a_producer_that_cannot_be_made_is_one_line_not_a_traceback() -> None:
    """Only the C extension is loaded (as the CLI loads it), not the confluent_kafka package."""
    code = (
        "import sys\n"
        "from streams.kafka_native import Producer\n"
        "from cli.main import _kafka_error\n"
        "try:\n"
        "    Producer({'bootstrap.servers': '127.0.0.1:1', 'security.protocol': 'SSL',\n"
        "              'ssl.ca.location': '/nonexistent/ca.pem'})\n"
        "except Exception as exc:\n"
        "    print(_kafka_error(exc), 'confluent_kafka' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60, check=True)
    assert out.stdout.split() == ["True", "False"], out.stderr
