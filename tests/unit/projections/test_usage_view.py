"""``/v1/usage`` (sreport's input): the runs of a window with their CPUs, and the nodes'
service timelines, folded from the ledger."""

from __future__ import annotations

import json
from pathlib import Path

from projections.http import ApiServer
from projections.service import ProjectionService
from projections.usage import timeline, usage, usage_runs
from projections.views import Views
from streams.settings import Settings
from tests.unit.projections.ledger_builder import LedgerBuilder


def _views(b: LedgerBuilder) -> Views:
    views = Views()
    for name, record in b.facts:
        views.apply(name, record)
    return views


def test_a_requeued_job_lists_each_run_with_its_cpus_and_a_running_one_no_end() -> None:
    b = LedgerBuilder()
    t0 = b.now_ms
    b.node("n1", cpus=8)
    b.node("n2", cpus=8)
    job = b.queued(cpus_per_task=2, ntasks=2)
    first = b.started(job, ["n1"], alloc_cpus=[6], alloc_mem_mb=[100], alloc_gpus=[0])
    b.advance(100_000)
    b.ended(job, first, "NODE_FAIL")
    b.requeued(job, first)
    b.advance(10_000)
    second = b.started(job, ["n2"], alloc_cpus=[8], alloc_mem_mb=[100], alloc_gpus=[0])
    other = b.queued(cpus_per_task=1)
    b.started(other, ["n1"], alloc_cpus=[1], alloc_mem_mb=[100], alloc_gpus=[0])
    b.advance(50_000)
    b.ended(job, second, "COMPLETED")

    runs = usage(_views(b), {"start": [str(t0)], "end": [str(b.now_ms + 1)]})["runs"]

    shown = [(r["job_id"], r["start_ms"] - t0, r["end_ms"] and r["end_ms"] - t0, r["cpus"],
              r["nodes"]) for r in runs]
    # each run's own allocation: 6 CPUs of n1 (more than the 4 the job asks), then 8 of n2
    assert shown == [(1, 0, 100_000, 6, ["n1"]), (1, 110_000, 160_000, 8, ["n2"]),
                     (2, 110_000, 0, 1, ["n1"])]
    assert runs[1]["alloc"] == {"n2": 8} and "alloc" not in runs[0]


def test_a_run_folded_before_runs_kept_their_cpus_counts_what_the_job_asks_per_node() -> None:
    job = {"job_id": 1, "run_sluid": "r2", "state": "COMPLETED", "cpus_per_node": 4,
           "alloc": {"n2": [8, 0, 0]}, "runs": [
               {"run_sluid": "r1", "start_ms": 1, "end_ms": 2, "nodes": ["n1"]},
               {"run_sluid": "r2", "start_ms": 3, "end_ms": 4, "nodes": ["n2"]}]}
    assert [r["cpus"] for r in usage_runs([job], 0, 10)] == [4, 8]


def test_only_runs_that_overlap_the_window_are_listed() -> None:
    b = LedgerBuilder()
    t0 = b.now_ms
    b.node("n1")
    early = b.queued()
    run = b.started(early, ["n1"])
    b.advance(60_000)
    b.ended(early, run)
    late = b.queued()
    b.started(late, ["n1"])
    views = _views(b)
    assert [r["job_id"] for r in usage(views, {"start": [str(t0 + 60_000)]})["runs"]] == [2]
    assert [r["job_id"] for r in usage(views, {"end": [str(t0 + 60_000)]})["runs"]] == [1]
    assert [r["job_id"] for r in usage(views, {"start": ["junk"]})["runs"]] == [1, 2]


def test_a_node_timeline_records_each_change_of_service_state_or_cpus() -> None:
    b = LedgerBuilder()
    t0 = b.now_ms
    b.node("n1", cpus=4)
    b.advance(1_000)
    b.node_state("n1", "DRAIN", "maintenance")
    b.advance(1_000)
    b.node_state("n1", "DRAIN", "still")  # the same state: no new entry
    b.advance(1_000)
    b.node_state("n1", "IDLE")
    nodes = usage(_views(b), {})["nodes"]
    assert nodes == [{"name": "n1", "cpus": 4, "timeline": [
        [t0, "UNKNOWN", 4], [t0, "IDLE", 4], [t0 + 1_000, "DRAIN", 4], [t0 + 3_000, "IDLE", 4]]}]


def test_a_node_row_from_before_timelines_gets_one_from_its_registration_and_last_change() -> None:
    row = {"name": "n1", "cpus": 4, "service": "DRAIN", "registered_ms": 1_000,
           "state_ms": 5_000}
    assert timeline(row) == [[1_000, "IDLE", 4], [5_000, "DRAIN", 4]]
    assert timeline({**row, "service": "IDLE", "state_ms": 1_000}) == [[1_000, "IDLE", 4]]


def test_the_node_list_leaves_the_timelines_out_and_one_node_shows_its_own(
        tmp_path: Path) -> None:
    b = LedgerBuilder()
    b.node("n1", cpus=4)
    b.node_state("n1", "DRAIN", "maintenance")
    service = ProjectionService(Settings(home=tmp_path))
    for name, record in b.facts:
        service.views.apply(name, record)
    server = ApiServer(service, "127.0.0.1", 0)
    try:
        listed = json.loads(server.dispatch("/v1/nodes", {})[2])["nodes"]
        one = json.loads(server.dispatch("/v1/nodes/n1", {})[2])["node"]
    finally:
        server.httpd.server_close()
    assert [n["name"] for n in listed] == ["n1"] and "timeline" not in listed[0]
    assert [state for _t, state, _c in one["timeline"]] == ["UNKNOWN", "IDLE", "DRAIN"]
