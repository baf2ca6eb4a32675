"""``GET /v1/jobs?all=1`` is written as it is read, never built whole in the views' memory.

Red team, 7 Dec 2026: the answer of every job ever was built in memory (25 MB of JSON for
20,000 ended jobs, several times that in rows while it was built), and any reader of the API
could ask it on each of its connections. Now the views hold the jobs' sort keys and a step of
rows at a time (``projections.job_stream``); the answer is the same JSON object.
"""

from __future__ import annotations

import json
import socket
import tracemalloc
from pathlib import Path

from projections.archive import row_puts
from projections.http import ApiServer
from projections.job_stream import ROWS_A_STEP
from projections.service import ProjectionService
from streams.settings import Settings

JOBS = 10_000


def _fill(service: ProjectionService, count: int) -> None:
    for i in range(count):  # stored out of id order: the answer is sorted by id
        job_id = (i * 7919) % count + 1
        service.store.write(row_puts({
            "job_sluid": f"s{i:013d}", "job_id": job_id, "user": "alice" if i % 3 else "bob",
            "state": "COMPLETED", "runs": [], "name": f"job-{job_id}-" + "x" * 1000,
            "script": "#!/bin/sh\n" + "y" * 500}, live=False))


def _get(port: int, path: str, keep: bool) -> tuple[bytes, int]:
    """The answer's head (and its body when ``keep``) and its size, read to the end."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as conn:
        conn.sendall(f"GET {path} HTTP/1.0\r\n\r\n".encode())
        kept, size = bytearray(), 0
        while chunk := conn.recv(1 << 16):
            size += len(chunk)
            if keep or len(kept) < 200:
                kept += chunk
        return bytes(kept), size


def test_every_job_is_streamed_in_id_order_with_the_filters_and_without_scripts(
        tmp_path: Path) -> None:
    service = ProjectionService(Settings(home=tmp_path))
    _fill(service, 2 * ROWS_A_STEP + 7)
    server = ApiServer(service, "127.0.0.1", 0)
    server.start()
    try:
        answer, _ = _get(server.port, "/v1/jobs?all=1&user=bob", keep=True)
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.0 200 ")
        assert b"content-length" not in head.lower()
        streamed = json.loads(body)
        _code, _type, whole = server.dispatch("/v1/jobs", {"all": ["1"], "user": ["bob"]})
        expected = json.loads(whole)
        assert streamed["jobs"] == expected["jobs"]
        assert set(streamed) == {"jobs", "freshness"}
        ids = [job["job_id"] for job in streamed["jobs"]]
        assert ids == sorted(ids) and len(ids) == (2 * ROWS_A_STEP + 7 + 2) // 3
        assert all(job["user"] == "bob" and "script" not in job for job in streamed["jobs"])
        empty, _ = _get(server.port, "/v1/jobs?all=1&user=nobody", keep=True)
        assert json.loads(empty.partition(b"\r\n\r\n")[2])["jobs"] == []
    finally:
        server.stop()
        service.store.close()


def test_the_views_hold_a_fraction_of_the_answer_of_every_job(tmp_path: Path) -> None:
    service = ProjectionService(Settings(home=tmp_path))
    _fill(service, JOBS)
    server = ApiServer(service, "127.0.0.1", 0)
    server.start()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        _head, size = _get(server.port, "/v1/jobs?all=1", keep=False)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
        server.stop()
        service.store.close()
    assert size > 10 << 20  # 10,000 jobs of ~1 kB: ~11 MB of JSON
    # the sort keys (~150 bytes a job), a chunk of the store's walk and a step of rows: 5.3 MiB
    # measured; built whole, the rows, their copies and the JSON text: 39.9 MiB
    assert peak < size * 0.75, f"{peak / 2**20:.1f} MiB held for {size / 2**20:.1f} MiB sent"
