"""``sluice cancel -s SIG [-b|-f]`` (scancel's signal options): the record it sends, and the
signal names it refuses in one line, before anything is sent."""

from __future__ import annotations

from typing import Any

import pytest

from cli import job_control
from cli.client import Client
from cli.main import main
from cli.slurm_units import signal_number, signal_spec

JOB = "s14DK8YBDF0000"


class FakeClient:
    """The views' API as far as cancel reads it: one job."""

    def __init__(self, settings: Any) -> None:
        del settings

    def get(self, path: str) -> dict[str, Any]:
        assert path == "/v1/jobs/42"
        return {"job": {"job_sluid": JOB, "job_id": 42}}

    job = Client.job  # the real lookup over this get


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []

    def decided(client: Any, verb: str, ref: str, subject: str, name: str,
                record: dict[str, Any], say: Any = None) -> bool:
        assert (verb, ref, subject, name) == ("cancel", "42", JOB, "CancelJob")
        records.append(record)
        return True

    monkeypatch.setattr(job_control, "Client", FakeClient)
    monkeypatch.setattr(job_control, "decided", decided)
    return records


@pytest.mark.parametrize(("argv", "fields"), [
    pytest.param([], {}, id="a cancel"),
    pytest.param(["-s", "USR1"], {"signal": 10, "signal_scope": "STEPS"}, id="steps by default"),
    pytest.param(["--signal=SIGUSR2", "-b"], {"signal": 12, "signal_scope": "BATCH"},
                 id="batch shell"),
    pytest.param(["-s", "15", "--full"], {"signal": 15, "signal_scope": "FULL"}, id="full"),
    pytest.param(["-s", "KILL", "-b"], {}, id="KILL is a cancel"),
    pytest.param(["-b"], {}, id="-b without -s is a cancel"),
])
def test_cancel_sends_the_signal_and_its_scope(sent: list[dict[str, Any]], argv: list[str],
                                               fields: dict[str, Any]) -> None:
    assert main(["cancel", *argv, "42"]) == 0
    [record] = sent
    assert {k: v for k, v in record.items() if k.startswith("signal")} == fields


@pytest.mark.parametrize("bad", ["NOPE", "0", "65", "SIG", "-1"])
def test_an_invalid_signal_is_refused_in_one_line_and_nothing_is_sent(
        sent: list[dict[str, Any]], capsys: pytest.CaptureFixture[str], bad: str) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["cancel", f"--signal={bad}", "42"])
    assert exited.value.code == 2 and sent == []
    err = capsys.readouterr().err
    assert f"invalid signal {bad!r}" in err and "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith("sluice cancel: error:")


def test_batch_and_full_together_are_refused(sent: list[dict[str, Any]]) -> None:
    with pytest.raises(SystemExit):
        main(["cancel", "-s", "USR1", "-b", "-f", "42"])
    assert sent == []


def test_names_numbers_and_specs_as_slurm_takes_them() -> None:
    assert [signal_number(t) for t in ("usr1", "SIGTERM", "10", "RTMIN+2", "RTMAX")] == [
        10, 15, 10, 36, 64]
    assert signal_spec("B:USR1@90") == "B:USR1@90" and signal_spec("R:TERM") == "R:TERM"
    for bad in ("B:NOPE@90", "USR1@70000", "X:USR1", "BB:USR1", "B:99"):
        with pytest.raises(Exception, match="invalid --signal"):
            signal_spec(bad)
