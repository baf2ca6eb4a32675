"""A full or read-only state directory: the errors told apart, said once a minute, waited out.

The classification and the rate limit are plain unit tests; the rest runs on real file
systems (a small tmpfs the test fills, ``mount -o remount,ro``; root only, skipped otherwise):
real RocksDB errors, the start check, a store write that waits until space returns, the
health table and the views' process.
"""

from __future__ import annotations

import errno
import logging
import shutil
import threading
import time
from pathlib import Path

import pytest

from agents.health_store import HealthStore
from projections.service import ProjectionService
from streams import state_dir
from streams.rocks import RocksStore, open_store
from streams.settings import Settings
from streams.state_dir import (
    FULL,
    READ_ONLY,
    UNWRITABLE,
    BackOff,
    StateDirAlarm,
    WaitOut,
    check_at_start,
    probe,
    problem_of,
)
from tests.unit.projections.ledger_builder import LedgerBuilder
from tests.unit.state_mounts import fill, remount, small_fs

__all__ = ["small_fs"]


# -- which errors are a full or read-only directory -----------------------------------------

@pytest.mark.parametrize(("error", "problem"), [
    (OSError(errno.ENOSPC, "No space left on device"), FULL),
    (OSError(errno.EDQUOT, "Disk quota exceeded"), FULL),
    (OSError(errno.EROFS, "Read-only file system"), READ_ONLY),
    (PermissionError(errno.EACCES, "Permission denied"), UNWRITABLE),
    (Exception("IO error: No space left on device: While appending to file: "
               "/x/000004.log: No space left on device"), FULL),
    (Exception("IO error: While open a file for appending: /x/000009.log: Read-only file "
               "system"), READ_ONLY),
    (OSError("Read-only file system (os error 30)"), READ_ONLY),  # rocksdict's open error
    (OSError(errno.ENOENT, "No such file or directory"), None),
    (OSError(errno.EIO, "Input/output error"), None),
    (Exception("Corruption: block checksum mismatch"), None),
    (Exception("IO error: lock hold by current process"), None),
    (ValueError("No space left on device"), None),  # not an I/O error, whatever it says
])
def test_tells_a_full_disk_from_a_read_only_one_from_anything_else(
    error: BaseException, problem: str | None,
) -> None:
    assert problem_of(error) == problem


def test_finds_the_full_disk_behind_an_error_raised_from_it() -> None:
    try:
        try:
            raise OSError(errno.ENOSPC, "No space left on device")
        except OSError as exc:
            raise RuntimeError("batch failed") from exc
    except RuntimeError as outer:
        assert problem_of(outer) == FULL


# -- one line, at most once a minute --------------------------------------------------------

class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "test.alarm"]


def test_a_lasting_problem_is_said_once_and_then_at_most_once_a_minute(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = FakeClock()
    alarm = StateDirAlarm(clock, logging.getLogger("test.alarm"), check=lambda _d: None)
    caplog.set_level(logging.INFO, "test.alarm")
    for _ in range(100):  # a hundred refused writes within a second
        alarm.failed("/srv/sluice/worker", FULL)
    assert len(lines(caplog)) == 1
    assert "/srv/sluice/worker: no space left on device (ENOSPC)" in lines(caplog)[0]
    assert alarm.count(FULL) == 1 and alarm.count(READ_ONLY) == 0
    clock.now += 59
    assert not alarm.failed("/srv/sluice/worker", FULL)
    clock.now += 1
    assert alarm.failed("/srv/sluice/worker", FULL)  # a minute later: said again
    assert len(lines(caplog)) == 2
    alarm.cleared("/srv/sluice/worker")
    alarm.cleared("/srv/sluice/worker")  # only once
    assert len(lines(caplog)) == 3 and "writable again" in lines(caplog)[2]
    assert alarm.troubles() == []
    assert alarm.failed("/srv/sluice/worker", FULL)  # a new episode is said at once


def test_another_problem_or_directory_is_said_at_once(caplog: pytest.LogCaptureFixture) -> None:
    alarm = StateDirAlarm(FakeClock(), logging.getLogger("test.alarm"), check=lambda _d: None)
    caplog.set_level(logging.INFO, "test.alarm")
    alarm.failed("/a", FULL)
    alarm.failed("/a", READ_ONLY)
    alarm.failed("/b", FULL)
    alarm.failed("/b", FULL)
    assert len(lines(caplog)) == 3
    assert alarm.count(FULL) == 1 and alarm.count(READ_ONLY) == 1


def test_a_write_in_the_slack_of_a_full_disk_does_not_clear_it_without_a_probe(
    caplog: pytest.LogCaptureFixture,
) -> None:
    answers = [FULL, None]
    alarm = StateDirAlarm(FakeClock(), logging.getLogger("test.alarm"),
                          check=lambda _d: answers.pop(0))
    caplog.set_level(logging.INFO, "test.alarm")
    alarm.failed("/a", FULL)
    alarm.cleared("/a")  # the probe still fails: still in trouble, nothing said
    assert alarm.count(FULL) == 1 and len(lines(caplog)) == 1
    assert not alarm.failed("/a", FULL)  # and not said again within the minute
    alarm.cleared("/a")
    assert alarm.count(FULL) == 0 and "writable again" in lines(caplog)[-1]


def test_the_back_off_doubles_to_its_cap_and_starts_again_after_a_success() -> None:
    back_off = BackOff(1.0, 30.0)
    assert [back_off.next() for _ in range(7)] == [1, 2, 4, 8, 16, 30, 30]
    back_off.reset()
    assert back_off.next() == 1


# -- real file systems ----------------------------------------------------------------------

@pytest.fixture(autouse=True)
def _quiet_alarm() -> None:
    """Each test starts with the process's alarm clear."""
    for trouble in state_dir.alarm.troubles():
        state_dir.alarm.cleared(trouble.directory)


def test_rocksdb_on_a_full_tmpfs_raises_what_is_classified_full(small_fs: Path) -> None:
    store = RocksStore(small_fs / "db")
    store.write({b"a": b"1"})
    filler = fill(small_fs)
    with pytest.raises(Exception) as raised:
        store.write({b"b": b"x" * 100_000})
    assert problem_of(raised.value) == FULL
    assert probe(small_fs) == FULL
    filler.unlink()
    store.reopen()  # RocksDB refuses every write after one failed, until reopened
    store.write({b"b": b"2"})
    store.close()
    again = RocksStore(small_fs / "db")
    assert (again.get(b"a"), again.get(b"b")) == (b"1", b"2")
    again.close()


def test_a_read_only_directory_fails_the_start_check_with_one_line(
    small_fs: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    RocksStore(small_fs / "db").close()
    remount(small_fs, "ro")
    try:
        with pytest.raises(OSError) as raised:
            open_store(small_fs / "db")
        assert problem_of(raised.value) == READ_ONLY
        assert probe(small_fs / "worker") == READ_ONLY
        assert check_at_start("sluice worker", small_fs / "worker") == 2
    finally:
        remount(small_fs, "rw")
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"sluice worker: state directory {small_fs / 'worker'} is not writable: "
                   "read-only file system (EROFS)"]


def test_a_full_directory_at_start_is_waited_out(small_fs: Path) -> None:
    filler = fill(small_fs)
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        if len(waits) == 3:
            filler.unlink()  # the operator frees space

    assert check_at_start("sluice worker", small_fs / "worker", sleep=sleep) == 0
    assert waits == [1, 2, 4]
    assert state_dir.alarm.troubles() == []


def test_a_store_write_on_a_full_disk_waits_and_lands_once_space_returns(small_fs: Path) -> None:
    store = RocksStore(small_fs / "db")
    stopping = threading.Event()
    store.wait_out = WaitOut(stopping, "test writes",
                             back_off=lambda: BackOff(0.05, 0.2))
    store.written = state_dir.alarm.cleared
    filler = fill(small_fs)
    writer = threading.Thread(target=store.write, args=({b"k": b"v" * 200_000},))
    writer.start()
    time.sleep(1.0)
    assert writer.is_alive()  # waiting, not failed, not lost
    assert state_dir.alarm.count(FULL) == 1
    filler.unlink()
    writer.join(10)
    assert not writer.is_alive()
    assert store.get(b"k") == b"v" * 200_000
    assert state_dir.alarm.troubles() == []
    store.close()


def test_a_store_write_waiting_out_a_full_disk_is_raised_when_the_process_stops(
    small_fs: Path,
) -> None:
    store = RocksStore(small_fs / "db")
    stopping = threading.Event()
    store.wait_out = WaitOut(stopping, "test writes", back_off=lambda: BackOff(0.05, 0.2))
    fill(small_fs)
    stopping.set()
    with pytest.raises(Exception) as raised:
        store.write({b"k": b"v" * 200_000})
    assert problem_of(raised.value) == FULL
    store.close()  # the failed write is not raised again


def test_the_health_table_stays_in_memory_on_a_full_disk_and_is_written_later(
    small_fs: Path,
) -> None:
    table = HealthStore(small_fs / "health.db")
    filler = fill(small_fs)
    for n in range(200):
        table.put(f"node-{n:04d}", {"name": f"n{n}", "seen_ms": n, "partition": 0, "x": "y" * 900})
    table.persist()  # refused: said, kept
    assert state_dir.alarm.count(FULL) == 1
    assert table.get("node-0199") is not None
    filler.unlink()
    table.persist()
    assert state_dir.alarm.troubles() == []
    table.close()
    again = HealthStore(small_fs / "health.db")
    assert again.get("node-0199") == {"name": "n199", "seen_ms": 199, "partition": 0,
                                      "x": "y" * 900}
    again.close()


def test_the_views_stop_folding_on_a_full_disk_answer_meanwhile_and_lose_nothing(
    small_fs: Path,
) -> None:
    service = ProjectionService(Settings(home=small_fs))
    service.store.wait_out = WaitOut(service._stopping, "the views' writes",
                                     service._wait, back_off=lambda: BackOff(0.05, 0.2))
    b = LedgerBuilder()
    b.node("n1", cpus=64)
    first = b.queued(name="first")
    service.fold([(n, r, 0) for n, r in b.facts])
    done = len(b.facts)
    filler = fill(small_fs)
    second = b.queued(name="second" + "x" * 100)
    for _ in range(300):  # enough rows that the write needs pages
        b.queued(name="filler" + "y" * 200)
    folding = threading.Thread(target=service.fold,
                               args=([(n, r, 0) for n, r in b.facts[done:]],))
    folding.start()
    time.sleep(1.0)
    assert folding.is_alive()  # paused on the write
    assert service.freshness()["state_dir"][0]["problem"] == FULL
    assert service.lock.acquire(timeout=2)  # the API is not locked out meanwhile
    service.lock.release()
    filler.unlink()
    folding.join(10)
    assert not folding.is_alive()
    assert service.freshness()["state_dir"] == []
    service.store.close()
    again = ProjectionService(Settings(home=small_fs))
    assert {first, second} <= set(again.views.jobs)
    again.store.close()


# -- what an operator sees ------------------------------------------------------------------

def test_the_worker_gauges_and_sluice_status_show_a_full_directory(tmp_path: Path) -> None:
    from prometheus_client import generate_latest

    from agents.metrics import REGISTRY
    from cli.status import status_lines

    state_dir.alarm.failed(tmp_path / "full", FULL)
    text = generate_latest(REGISTRY).decode()
    assert "\nsluice_state_dir_full 1.0\n" in text
    assert "\nsluice_state_dir_read_only 0.0\n" in text
    fresh = {"caught_up": True, "state_dir": [
        {"directory": "/srv/views", "problem": FULL, "since_ms": 1_800_000_000_000}]}
    lines, bad = status_lines(fresh)
    assert bad and lines[-1] == ("views: state directory /srv/views: no space left on device "
                                 "since 2027-01-15T08:00:00Z: PAUSED")
    state_dir.alarm.cleared(tmp_path / "full")  # the probe makes it
    assert "\nsluice_state_dir_full 0.0\n" in generate_latest(REGISTRY).decode()


def test_the_shipped_alerts_watch_the_state_directory_gauges() -> None:
    import yaml

    rules = {r["alert"]: r for g in yaml.safe_load(Path("infra/prometheus/alerts.yml")
                                                   .read_text())["groups"] for r in g["rules"]}
    assert rules["SluiceStateDirFull"]["expr"] == "sluice_state_dir_full > 0"
    assert rules["SluiceStateDirReadOnly"]["expr"] == "sluice_state_dir_read_only > 0"


def test_a_health_table_reopened_into_a_replaced_directory_never_stops_the_agent(
    tmp_path: Path,
) -> None:
    """The worker's directory replaced under it (docs/operations.md: a read-only one copied to
    another file system): the health table's database, reopened after the refused write, may
    be half copied (CI, 2026-12-07: the worker died right after the replacement)."""
    where = tmp_path / "worker"
    table = HealthStore(where / "health.db")
    table.put("sA", {"name": "a", "seen_ms": 1, "partition": 0})
    table.advance(0, 5)
    table.persist()
    table._broken = True  # a write was refused (read-only), then the directory was replaced:
    shutil.rmtree(where)
    where.write_bytes(b"")  # not a directory yet: the database cannot be opened
    table.put("sB", {"name": "b", "seen_ms": 2, "partition": 1})
    table.persist()  # tried again later, not raised
    assert table.get("sB") is not None
    where.unlink()
    where.mkdir()  # half copied: a database whose files are garbage
    (where / "health.db").mkdir()
    for name in ("CURRENT", "MANIFEST-000001", "IDENTITY"):
        (where / "health.db" / name).write_bytes(b"\x00garbage\xff" * 10)
    table.persist()  # corrupt: set aside, the whole table written to a new one
    assert [p.name for p in where.iterdir() if ".corrupt-" in p.name] == ["health.db.corrupt-1"]
    table.close()
    again = HealthStore(where / "health.db")
    assert again.get("sA") == {"name": "a", "seen_ms": 1, "partition": 0}
    assert again.get("sB") == {"name": "b", "seen_ms": 2, "partition": 1}
    assert again.position(0) == 5
    again.close()
