"""A reader of every job ever folded (``sacct``, ``/v1/jobs?all=1``) lets the views' lock go
every few hundred rows: with 20,000 ended jobs one such read held every API answer, decision
wait and the ledger's folding for 1 s, and anyone could ask it in a loop (red team)."""

from __future__ import annotations

import threading
from pathlib import Path

from projections.archive import CHUNK, StoreArchive, row_puts
from projections.extras import history
from projections.service import ProjectionService
from streams.rocks import RocksStore
from streams.settings import Settings


def _rows(count: int, start: int = 0) -> list[dict[str, object]]:
    return [{"job_sluid": f"s{i:013d}", "job_id": i + 1, "user": "alice", "state": "COMPLETED",
             "runs": []} for i in range(start, start + count)]


def _store(store: RocksStore, rows: list[dict[str, object]]) -> None:
    for row in rows:
        store.write(row_puts(row, live=False))


def test_a_paused_walk_reads_every_row_once_in_order_across_chunks(tmp_path: Path) -> None:
    store = RocksStore(tmp_path / "db")
    archive = StoreArchive(store)
    _store(store, _rows(2 * CHUNK + 1))
    late = _rows(3, start=5 * CHUNK)  # written while the walk pauses: after every row read
    pauses: list[int] = []

    def pause() -> None:
        pauses.append(1)
        if len(pauses) == 1:
            _store(store, late)

    walked = [row["job_sluid"] for row in archive.jobs(pause)]
    assert pauses == [1, 1]
    assert walked == [row["job_sluid"] for row in _rows(2 * CHUNK + 1) + late]
    assert walked == [row["job_sluid"] for row in archive.jobs()]
    store.close()


def test_sacct_over_every_job_lets_other_readers_in_while_it_walks(tmp_path: Path) -> None:
    service = ProjectionService(Settings(home=tmp_path))
    _store(service.store, _rows(6 * CHUNK))
    walking, done = threading.Event(), threading.Event()
    seen_done: list[bool] = []
    answer: list[int] = []

    def walk() -> None:
        with service.lock:
            walking.set()
            answer.append(len(history(service.views, {})["runs"]))
            done.set()

    def other_reader() -> None:
        walking.wait(10)
        with service.lock:
            seen_done.append(done.is_set())

    threads = [threading.Thread(target=walk), threading.Thread(target=other_reader)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert answer == [6 * CHUNK]
    assert seen_done == [False], "the other reader waited for the whole walk"
    service.store.close()
