"""``sluice submit`` refuses what the shard would refuse whatever its configuration, before
sending anything: one line naming the reason, exit 1, no traceback (issue #11)."""

from __future__ import annotations

import pytest

from cli.main import main


@pytest.mark.parametrize(
    ("argv", "reason", "field"),
    [
        (["-t", "99999999999999999"], "ValueOutOfRange", "time_limit_s"),
        (["-c", "0"], "InvalidTaskCount", "cpus_per_task"),
        (["-n", "0"], "InvalidTaskCount", "ntasks"),
        (["-N", "3000000000"], "ValueOutOfRange", "nodes_min"),
        (["--mem", str(2**62)], "ValueOutOfRange", "mem_per_node_mb"),
        (["-J", "x" * 5000], "FieldTooLong", "name"),
    ],
)
def test_submit_refuses_out_of_range_values_in_one_line_before_sending(
    argv: list[str], reason: str, field: str, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KAFKA_BOOTSTRAP", "127.0.0.1:1")  # nothing may be sent anywhere
    status = main(["submit", *argv, "--", "true"])
    err = capsys.readouterr().err
    assert status == 1
    assert err.startswith(f"sluice submit: {reason}: ") and field in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_a_gres_count_in_non_ascii_digits_is_named_not_an_int_error(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKA_BOOTSTRAP", "127.0.0.1:1")  # nothing may be sent anywhere
    status = main(["submit", "--gres", "gpu:\u00b2", "--", "true"])
    err = capsys.readouterr().err
    assert status != 0
    assert "the GPU count must be a whole number" in err and "int()" not in err
