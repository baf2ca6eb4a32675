"""``sluice sprio``: sprio's columns, only the factors whose weight is set."""

from __future__ import annotations

from cli.sprio_cmd import sprio_lines

JOBS = [{"job_id": 12, "partition": "gpu", "user": "alice", "account": "phys",
         "priority": 1530, "age": 1000, "fairshare": 0, "jobsize": 0, "partition_factor": 0,
         "qos": 550, "nice": 20}]
WEIGHTS = {"age": 1000, "fairshare": 0, "jobsize": 0, "partition": 0, "qos": 1000}


def test_the_default_columns_are_sprios_with_the_weighted_factors_only() -> None:
    header, line = sprio_lines(JOBS, WEIGHTS)
    assert header.split() == ["JOBID", "PARTITION", "PRIORITY", "SITE", "AGE", "QOS"]
    assert line.split() == ["12", "gpu", "1530", "0", "1000", "550"]
    assert header.index("PRIORITY") + len("PRIORITY") == line.index("1530") + len("1530")


def test_long_adds_user_account_and_nice_and_weights_prints_the_weights() -> None:
    header, line = sprio_lines(JOBS, WEIGHTS, long=True)
    assert header.split() == ["JOBID", "PARTITION", "USER", "ACCOUNT", "PRIORITY", "SITE",
                              "AGE", "QOS", "NICE"]
    assert line.split() == ["12", "gpu", "alice", "phys", "1530", "0", "1000", "550", "20"]
    _, weights = sprio_lines([], WEIGHTS, weights_only=True)
    assert weights.split() == ["Weights", "1000", "1000"]
    assert sprio_lines(JOBS, WEIGHTS, header=False)[0].split()[0] == "12"
