"""squeue's ``-o`` letters ``%U %G %g %B %h %d %H %I %J %z %O %w`` and ``-O`` names
``UserID``, ``GroupName``, ``BatchHost``, ``cpus-per-task``, ``NumTasks``, ``EligibleTime``,
``exit_code``, ``RestartCnt``, ``Requeue``, ``tres-alloc``, ``OverSubscribe``... (squeue_fields).
Before, each was ``unknown field`` (exit 2): ``squeue -O jobid,cpus-per-task`` or
``squeue -o "%i %U"`` printed nothing (found 2026-12-07)."""

from __future__ import annotations

import os
import pwd
from typing import Any

from cli.formats import parse_field_list, parse_percent, render
from cli.job_fields import SQUEUE_CODES, SQUEUE_FIELDS, job_values

NOW = 1_796_000_000_000
ME = pwd.getpwuid(os.getuid())


def _running(**more: Any) -> dict[str, Any]:
    return {"job_id": 67, "job_sluid": "s67", "user": ME.pw_name, "state": "RUNNING",
            "start_ms": NOW, "submit_ms": NOW - 5_000, "begin_ms": 0, "nodes": ["n1", "n2"],
            "alloc": {"n1": [4, 0, 0], "n2": [4, 0, 0]}, "ntasks": 2, "cpus_per_task": 3,
            "exclusive": True, "mem_per_node_mb": 100, "restart_count": 1, "requeue": "no",
            **more}


def test_the_percent_letters_print_as_squeue_prints_them() -> None:
    layout = parse_percent("%U %G %B %h %d %H %I %J %z %O %w", SQUEUE_CODES, "-o")
    [_, line] = render([job_values(_running(), NOW, {})], layout)
    assert line.split() == [str(ME.pw_uid), str(ME.pw_gid), "n1", "NO", "0", "*", "*", "*",
                            "*:*:*", "0", "(null)"]
    pending = job_values(_running(state="PENDING", nodes=[], start_ms=0, exclusive=False),
                         NOW, {})
    assert (pending["batch_host"], pending["oversubscribe"]) == ("n/a", "OK")


def test_the_o_names_print_as_squeue_prints_them() -> None:
    names = ("cpus-per-task,numtasks,eligibletime,exit_code,restartcnt,requeue,tres-alloc:30,"
             "userid,groupname,batchhost")
    layout = parse_field_list(names, SQUEUE_FIELDS, "-O", ":")
    [header, line] = render([job_values(_running(), NOW, {})], layout)
    assert header.split()[:3] == ["CPUS_PER_TASK", "TASKS", "ELIGIBLE_TIME"]
    values = line.split()
    assert values[:2] == ["3", "2"] and values[3:7] == ["0:0", "1", "0", "cpu=8,mem=200M,node=2"]
    assert values[7:] == [str(ME.pw_uid), values[8], "n1"]
