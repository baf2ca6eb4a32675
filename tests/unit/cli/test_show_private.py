"""``scontrol show job`` of another user's job under ``PrivateData=jobs``: the views leave out
its paths (``projections/api_auth.PRIVATE_FIELDS``), and StdOut/StdErr say ``(null)`` as
WorkDir and Command do, never a default path invented under a directory the reader was not
shown (it printed ``StdOut=sluice-2.out``)."""

from __future__ import annotations

from typing import Any

from cli.show_cmd import job_lines
from projections.api_auth import PRIVATE_FIELDS

ROW: dict[str, Any] = {"job_id": 2, "job_sluid": "s2", "name": "x", "user": "alice",
                       "state": "PENDING", "start_ms": 0, "submit_ms": 1, "nodes": [],
                       "workdir": "/home/alice", "command": ["true"], "output": "",
                       "error": ""}


def _field(lines: list[str], key: str) -> str:
    return next(w for line in lines for w in line.split() if w.startswith(key + "="))


def test_hidden_paths_are_null_and_the_owners_are_shown() -> None:
    hidden = {k: v for k, v in ROW.items() if k not in PRIVATE_FIELDS}
    lines = job_lines(hidden, 10, "2")
    assert [_field(lines, k) for k in ("StdOut", "StdErr", "WorkDir", "Command")] == [
        "StdOut=(null)", "StdErr=(null)", "WorkDir=(null)", "Command=(null)"]
    own = job_lines(ROW, 10, "2")
    assert _field(own, "StdOut") == "StdOut=/home/alice/sluice-2.out"
    assert _field(own, "StdErr") == "StdErr=/home/alice/sluice-2.out"
