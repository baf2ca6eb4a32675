"""Which jobs ``sluice queue`` (squeue) lists: ``-t all`` never lists a refused submission
(it is no job: it once showed as job 0 in a state ``RJ`` Slurm has not), ``-w/--nodelist``
lists the jobs on those nodes, ``-a/--all`` is accepted (Sluice has no hidden partitions)."""

from __future__ import annotations

import argparse
from typing import Any

from cli.job_fields import state_filter
from cli.queue_cmd import add_queue_parser, select_rows, user_names

ROWS: list[dict[str, Any]] = [
    {"job_id": 0, "state": "REJECTED", "reason": "InvalidQOS", "nodes": [], "name": "x"},
    {"job_id": 7, "state": "RUNNING", "nodes": ["node01", "node02"], "name": "a"},
    {"job_id": 8, "state": "RUNNING", "nodes": ["node03"], "name": "b"},
    {"job_id": 9, "state": "COMPLETED", "nodes": ["node01"], "name": "c"},
    {"job_id": 10, "state": "PENDING", "nodes": [], "name": "d", "reservation": "maint"},
]


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_queue_parser(parser.add_subparsers())
    return parser.parse_args(["queue", *argv])


def _ids(*argv: str) -> list[int]:
    args = _args(*argv)
    wanted = state_filter(args.states, "-t") if args.states else None
    include_ended = bool(args.states) and wanted is None
    return [int(r["job_id"]) for r in select_rows(ROWS, args, wanted, include_ended)]


def test_every_state_lists_every_job_but_no_refused_submission() -> None:
    assert _ids("-t", "all") == [7, 8, 9, 10]
    assert _ids() == [7, 8, 10]


def test_nodelist_lists_the_jobs_on_those_nodes() -> None:
    assert _ids("-w", "node[01-02]") == [7]
    assert _ids("--nodelist", "node03,node09") == [8]
    assert _ids("-t", "all", "-w", "node01") == [7, 9]


def test_all_is_accepted_as_squeue_takes_it() -> None:
    assert _ids("-a") == _ids("--all") == [7, 8, 10]


def test_users_by_name_or_uid_and_the_names_no_one_knows() -> None:
    """``-u`` takes names and uids (squeue's ``-u 0`` is root's jobs); the names this host does
    not know come back apart, for squeue's "Invalid user" when the cluster knows none either."""
    assert user_names("0,root") == ("root,root", [])
    assert user_names("root, nosuch-user-x,") == ("root,nosuch-user-x", ["nosuch-user-x"])
    assert user_names("4294967295999") == ("4294967295999", ["4294967295999"])
    assert user_names("") == ("", [])


def test_reservation_lists_that_reservations_jobs_and_v_shows_it() -> None:
    from cli.job_fields import SQUEUE_CODES, job_values

    assert _ids("-R", "maint") == [10]
    assert _ids("--reservation", "other") == []
    assert SQUEUE_CODES["v"] == ("reservation", "RESERVATION")
    row = {**ROWS[4], "submit_ms": 0, "start_ms": 0, "user": "alice"}
    assert job_values(row, 0, {})["reservation"] == "maint"
    assert job_values({**row, "reservation": ""}, 0, {})["reservation"] == "(null)"
