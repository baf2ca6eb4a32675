"""Slurm's unit and time syntaxes (``cli.slurm_units``) and ``sluice update``'s field names."""

from __future__ import annotations

import argparse
from datetime import datetime, timedelta

import pytest

from cli.job_control import update_changes
from cli.main import main
from cli.slurm_units import (
    mail_types,
    mem_mb,
    node_counts,
    node_range,
    parse_begin,
    signal_spec,
)

NOW = datetime(2026, 12, 2, 14, 30, 15).astimezone()


def _ms(when: datetime) -> int:
    return int(when.timestamp() * 1000)


@pytest.mark.parametrize(
    ("text", "mb"),
    [("512", 512), ("4G", 4096), ("4g", 4096), ("2T", 2 * 1024 * 1024), ("1024K", 1),
     ("1K", 1), ("100M", 100), ("0", 0), ("8GB", 8192)],
)
def test_memory_sizes_are_read_in_mb(text: str, mb: int) -> None:
    assert mem_mb(text) == mb


@pytest.mark.parametrize("text", ["4X", "-1G", "1.5G", "", "G"])
def test_a_bad_memory_size_names_the_accepted_forms(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="K, M, G or T"):
        mem_mb(text)


@pytest.mark.parametrize(
    ("text", "when"),
    [
        ("now", NOW),
        ("now+90", NOW + timedelta(seconds=90)),
        ("now+1hour", NOW + timedelta(hours=1)),
        ("now+2hours", NOW + timedelta(hours=2)),
        ("now+30minutes", NOW + timedelta(minutes=30)),
        ("now+3days", NOW + timedelta(days=3)),
        ("now+1week", NOW + timedelta(weeks=1)),
        ("now-2days", NOW - timedelta(days=2)),
        ("today", NOW.replace(hour=0, minute=0, second=0)),
        ("tomorrow", NOW.replace(hour=0, minute=0, second=0) + timedelta(days=1)),
        ("16:00", NOW.replace(hour=16, minute=0, second=0)),
        ("09:15:30", NOW.replace(hour=9, minute=15, second=30) + timedelta(days=1)),
        ("4:00pm", NOW.replace(hour=16, minute=0, second=0)),
        ("noon", NOW.replace(hour=12, minute=0, second=0) + timedelta(days=1)),
        ("2026-12-24", NOW.replace(month=12, day=24, hour=0, minute=0, second=0)),
        ("2027-01-05T08:30", NOW.replace(year=2027, month=1, day=5, hour=8, minute=30,
                                         second=0)),
        ("2027-01-05T08:30:09", NOW.replace(year=2027, month=1, day=5, hour=8, minute=30,
                                            second=9)),
        ("12/24", NOW.replace(month=12, day=24, hour=0, minute=0, second=0)),
        ("01/05/27", NOW.replace(year=2027, month=1, day=5, hour=0, minute=0, second=0)),
    ],
)
def test_begin_times_resolve_against_the_given_clock(text: str, when: datetime) -> None:
    assert parse_begin(text, NOW) == _ms(when.replace(microsecond=0))


@pytest.mark.parametrize("text", ["now+1fortnight", "2026-02-30", "25:00", "someday", "now+"])
def test_a_bad_begin_time_is_refused_by_name(text: str) -> None:
    with pytest.raises(ValueError, match="begin time"):
        parse_begin(text, NOW)


def test_node_counts_signals_and_mail_types() -> None:
    assert node_range("4") == (4, 0) and node_range("2-8") == (2, 8)
    for bad in ("abc", "2-", "-3", "1.5"):
        with pytest.raises(argparse.ArgumentTypeError, match="node count"):
            node_range(bad)
    assert node_counts(None) == (1, 0) and node_counts((1, 0)) == (1, 1)  # no -N; -N 1
    assert node_counts("3") == (3, 0) and node_counts("1-1") == (1, 1)
    with pytest.raises(ValueError, match="node count"):
        node_counts("x")
    assert signal_spec("B:USR1@120") == "B:USR1@120" and signal_spec("10") == "10"
    with pytest.raises(argparse.ArgumentTypeError):
        signal_spec("USR1@soon")
    assert mail_types("end,fail") == "END,FAIL"
    with pytest.raises(argparse.ArgumentTypeError, match="SOMETIMES"):
        mail_types("END,SOMETIMES")


def test_update_takes_scontrols_names() -> None:
    ref, changes = update_changes(["job", "42", "TimeLimit=1:30:00", "Partition=gpu",
                                   "QOS=high", "Name=x", "MinMemoryNode=2G"])
    assert ref == "42"
    assert changes == {"time_limit_s": "5400", "partition": "gpu", "qos": "high",
                       "name": "x", "mem_per_node_mb": "2048"}
    assert update_changes(["JobId=7", "NumNodes=3"]) == ("7", {"nodes_min": "3"})
    for words in (["job", "1", "Colour=red"], ["job", "1", "TimeLimit=soon"], ["job", "1"],
                  ["TimeLimit=5"]):
        with pytest.raises(ValueError):
            update_changes(words)


@pytest.mark.parametrize(
    "argv",
    [["submit", "-N", "abc", "--", "true"], ["submit", "-n", "x", "--", "true"],
     ["submit", "--mem", "lots", "--", "true"], ["submit", "--begin", "whenever", "--", "x"],
     ["queue", "-t", "SOMETIMES"], ["history", "--format", "JobID,Colour"],
     ["nodes", "-o", "%Q"], ["update", "job", "1", "Colour=red"]],
)
def test_a_users_mistake_is_one_line_and_a_usage_status(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        status = main(argv)
    except SystemExit as exit_:  # argparse's usage error
        status = int(exit_.code or 0)
    err = capsys.readouterr().err
    assert status == 2
    assert "Traceback" not in err and err.strip().splitlines()[-1].startswith("sluice ")


def test_a_missing_file_is_one_line_and_status_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "apply", "/nonexistent/cluster.yaml"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "/nonexistent/cluster.yaml" in err[0]


@pytest.mark.parametrize(
    ("text", "when"),
    [
        ("09:15:30", NOW.replace(hour=9, minute=15, second=30)),
        ("16:00", NOW.replace(hour=16, minute=0, second=0)),
        ("noon", NOW.replace(hour=12, minute=0, second=0)),
        ("12/24", NOW.replace(month=12, day=24, hour=0, minute=0, second=0)),
        ("01/05", NOW.replace(month=1, day=5, hour=0, minute=0, second=0)),
        ("now-2days", NOW - timedelta(days=2)),
    ],
)
def test_sacct_window_times_look_into_the_past_as_slurms_parse_time(
        text: str, when: datetime) -> None:
    """sacct's ``-S``/``-E`` (Slurm's ``parse_time(text, past=1)``): a time of day is today's
    even when it has passed, a date without a year this year's unless its month is still to
    come. ``sacct -S 09:30 -E 09:40`` at 10:05 once looked at tomorrow's 09:30-09:40."""
    assert parse_begin(text, NOW, past=True) == _ms(when.replace(microsecond=0))


def test_a_relative_time_limit_is_made_absolute_from_the_jobs_current_limit() -> None:
    from cli.job_control import relative_limit

    _, plus = update_changes(["JobId=7", "TimeLimit=+30"])
    _, minus = update_changes(["JobId=7", "TimeLimit=-0:30"])
    assert (plus, minus) == ({"time_limit_s": "+1800"}, {"time_limit_s": "-30"})
    assert relative_limit(plus, 600) == {"time_limit_s": "2400"}
    assert relative_limit(minus, 600) == {"time_limit_s": "570"}
    assert relative_limit({"time_limit_s": "60"}, 600) == {"time_limit_s": "60"}
    with pytest.raises(ValueError, match="when set to UNLIMITED"):
        relative_limit(plus, 0)
    with pytest.raises(ValueError, match=r"decrement larger than current time limit \(1800 s"):
        relative_limit({"time_limit_s": "-1800"}, 600)
    for bad in ("TimeLimit=+=5", "TimeLimit=+soon", "TimeLimit=--5"):
        with pytest.raises(ValueError):
            update_changes(["JobId=7", bad])


def test_a_refused_update_is_printed_in_scontrols_words() -> None:
    from cli.job_control import refusal_line

    owner = {"reason": "AccessDenied",
             "detail": "Access/permission denied: alice may lower the time limit, not raise it"}
    other = {"reason": "NotOwner", "detail": "bob may not update job 12 of user alice"}
    assert refusal_line(owner, "12") == (
        "Access/permission denied for job 12 (AccessDenied: alice may lower the time limit, "
        "not raise it)")
    assert refusal_line(other, "12").startswith("Access/permission denied for job 12 (NotOwner")
    plain = {"reason": "InvalidUpdate", "detail": "'colour' is not a job field"}
    assert refusal_line(plain, "12") == (
        "sluice update: 12: refused: InvalidUpdate: 'colour' is not a job field")
