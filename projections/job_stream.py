"""``GET /v1/jobs?all=1`` (every job ever: ``sacct``, ``sluice history``) written as it is read.

The answer was built whole in memory: every matching row, then the list of them without their
scripts, then the private view of each, then one JSON text of it all (25 MB of JSON for
20,000 ended jobs, several times that in rows while it was built). Any reader of the API, an
anonymous one too, could ask it on each of its connections (a quarter of 256), so a long
history took gigabytes of the views. Now a request holds the sort keys of the matching jobs,
``(job id, SLUID)``, about 150 bytes a job, and :data:`ROWS_A_STEP` rows at a time: the keys
are gathered in one walk of the store (which lets the views' lock go every few hundred rows,
``Views.pause``), then the rows are read again by SLUID, a step of them under the lock, and
written to the client with the lock let go. The answer is the same JSON object as before
(``{"jobs": [...], "freshness": {...}}``, the jobs in id order), sent without a
``Content-Length`` and ended by closing the connection (HTTP/1.0); a row that changed between
the walk and its step is sent as it is then, one that no longer matches the filters is left
out.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from projections.api_auth import Viewer, private_view
from projections.service import ProjectionService

__all__ = ["ROWS_A_STEP", "every_job_answer"]

ROWS_A_STEP = 500
"""Rows read under the lock, and serialized, at a time."""

Matches = Callable[[dict[str, Any]], bool]


def every_job_answer(service: ProjectionService, matches: Matches,
                     viewer: Viewer) -> Iterator[bytes]:
    """The answer's body, a piece at a time; the keys are gathered when it is first asked."""
    with service.lock:
        views = service.views
        keys = sorted((int(row.get("job_id") or 0), str(row["job_sluid"]))
                      for row in views.every_job(pausing=True) if matches(row))
        freshness = service.freshness()
    yield b'{"jobs": ['
    first = True
    for start in range(0, len(keys), ROWS_A_STEP):
        with service.lock:
            views = service.views
            rows = [views.lookup(sluid) for _id, sluid in keys[start:start + ROWS_A_STEP]]
            shown = [private_view({k: v for k, v in row.items() if k != "script"}, viewer,
                                  views.private_jobs, views.privileged)
                     for row in rows if row is not None and matches(row)]
        if shown:
            text = ", ".join(json.dumps(row) for row in shown)
            yield (text if first else ", " + text).encode()
            first = False
    yield b'], "freshness": ' + json.dumps(freshness).encode() + b"}"
