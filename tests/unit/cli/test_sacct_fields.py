"""sacct fields derived from a line's values, and usage counters printed empty
(cli/sacct_fields.py)."""

from __future__ import annotations

import os
import pwd

from cli.formats import parse_field_list, render
from cli.history_cmd import SACCT_FIELDS
from cli.sacct_fields import add_derived

ME = pwd.getpwuid(os.getuid()).pw_name


def _line(**values: str) -> dict[str, str]:
    row = {"job_id": "12", "alloc_cpus": "4", "cpus": "4", "nnodes": "2", "elapsed_raw": "90",
           "req_mem": "2G", "req_mem_mb": "2048", "user": ME, "exit_code": "0:0", **values}
    add_derived(row, "alpha")
    return row


def test_derived_fields_follow_from_the_line() -> None:
    row = _line()
    assert (row["ncpus"], row["cpu_time_raw"], row["cpu_time"]) == ("4", "360", "00:06:00")
    assert row["alloc_tres"] == "billing=4,cpu=4,mem=2G,node=2" == row["req_tres"]
    assert (row["cluster"], row["uid"], row["suspended"]) == ("alpha", str(os.getuid()),
                                                              "00:00:00")
    pending = _line(alloc_cpus="0", elapsed_raw="0", req_mem="0", req_mem_mb="0")
    assert pending["alloc_tres"] == "" and pending["req_tres"] == "billing=4,cpu=4,node=2"


def test_usage_counters_sluice_does_not_collect_print_empty_instead_of_failing() -> None:
    columns = parse_field_list("JobID,MaxRSS,TotalCPU,CPUTimeRAW", SACCT_FIELDS, "-o", "%")
    lines = render([_line()], columns, header=True, delimiter="|")
    assert lines == ["JobID|MaxRSS|TotalCPU|CPUTimeRAW", "12|||360"]
