"""A worker that cannot serve its metrics where ``SLUICE_WORKER_METRICS`` says stops in one line.

``sluice up`` sets ``SLUICE_WORKER_METRICS``, and a second worker started the same way (on the
same state directory: 529abd3 promises one line and exit 2 for it) met the first one's
metrics port before its state-directory lock: it stopped with ``OSError: [Errno 98] Address
already in use`` and a traceback, exit 1."""

from __future__ import annotations

import argparse
import socket
from pathlib import Path

import pytest

from cli.services import _worker
from streams.settings import Settings


def test_a_metrics_address_in_use_is_one_line_and_exit_2(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        monkeypatch.setenv("SLUICE_WORKER_METRICS", f"127.0.0.1:{port}")
        status = _worker(argparse.Namespace(loglevel="warning"), Settings(home=tmp_path))
    err = capsys.readouterr().err
    assert status == 2
    assert err.count("\n") == 1 and f"127.0.0.1:{port}" in err and "Traceback" not in err
