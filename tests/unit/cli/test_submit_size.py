"""``sluice submit`` refuses a job larger than the intake accepts, before sending anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.main import main


def test_a_submission_over_the_request_limit_is_refused_before_sending(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SLUICE_HOME", str(tmp_path))
    monkeypatch.setenv("KAFKA_BOOTSTRAP", "127.0.0.1:1")  # nothing answers: nothing is sent
    monkeypatch.setenv("SLUICE_MAX_REQUEST_BYTES", "2000")

    status = main(["submit", "--comment", "x" * 3000, "--", "true"])

    err = capsys.readouterr().err
    assert status == 2
    assert "RequestTooLarge" in err and "2000" in err and "SLUICE_MAX_REQUEST_BYTES" in err
    assert "Traceback" not in err


def test_a_value_the_record_cannot_hold_is_a_clear_error_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SLUICE_HOME", str(tmp_path))
    monkeypatch.setenv("KAFKA_BOOTSTRAP", "127.0.0.1:1")

    status = main(["submit", "--nice", str(2**40), "--", "true"])

    err = capsys.readouterr().err
    assert status == 1  # the range check (schemas.ranges) refuses it before encoding
    assert "nice" in err
