"""Job-start notifications against a real broker: exactly once per run, across restarts,
crashes and a rebuild, read by a consumer written only from the published Avro schema; and
Slurm jobcomp/kafka JSON with Slurm's field names."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition

from projections.notifications import Notifier
from projections.views import Views
from streams.rocks import RocksStore
from streams.settings import Settings
from streams.topics import Topics
from tests.unit.projections.kafka_ledger import (
    LedgerWriter,
    SchemaOnlyConsumer,
    running_projections,
    settings_for,
)
from tests.unit.projections.ledger_builder import LedgerBuilder

pytestmark = [pytest.mark.kafka]


# Slurm's jobcomp_common_job_record_to_data field names (reference §7), plus ours.
SLURM_JOBCOMP_FIELDS = {
    "jobid", "sluid", "original_sluid", "container", "username", "user_id", "groupname",
    "group_id", "@start", "@end", "elapsed", "partition", "alloc_node", "nodes", "total_cpus",
    "total_nodes", "derived_ec", "exit_code", "state", "failed_node", "cpu_hours",
    "array_job_id", "array_task_id", "het_job_id", "het_job_offset", "pack_job_id",
    "pack_job_offset", "priority", "@submit", "@eligible", "@queue_wait", "work_dir", "std_err",
    "std_in", "std_out", "cluster", "qos", "ntasks", "ntasks_per_node", "ntasks_per_tres",
    "cpus_per_task", "orig_dependency", "excluded_nodes", "features", "time_limit", "job_name",
    "reservation_name", "wc_key", "tres_req_raw", "tres_req", "tres_alloc_raw", "tres_alloc",
    "account", "admin_comment", "comment", "script", "parent_accounts",
}
SLUICE_ADDITIONS = {"job_sluid"}


# -- a consumer that knows only the .avsc files ---------------------------------------------------


def read_json(bootstrap: str, topic: str) -> list[dict[str, Any]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"json-{topic}",
                         "isolation.level": "read_committed", "auto.offset.reset": "earliest",
                         "enable.partition.eof": True})
    consumer.assign([TopicPartition(topic, 0, 0)])
    out = []
    try:
        while True:
            messages: list[Any] = consumer.consume(num_messages=500, timeout=2.0)
            if not messages:
                break
            done = False
            for message in messages:
                if message.error() is not None:
                    done = message.error().code() == KafkaError._PARTITION_EOF
                    continue
                out.append(json.loads(message.value()))
            if done:
                break
    finally:
        consumer.close()
    return out


# -- the workload -----------------------------------------------------------------------------


def workload(b: LedgerBuilder, jobs: int, first: int = 0) -> list[str]:
    """``jobs`` jobs that start and end; every third one fails once and restarts."""
    runs = []
    if first == 0:
        for i in range(1, 5):
            b.node(f"n{i}", partitions=("main",))
    for i in range(first, first + jobs):
        job = b.queued(name=f"j{i}", user=f"u{i % 3}", account="acct", partition="main")
        b.advance(1_000)
        run = b.started(job, [f"n{1 + i % 4}"])
        runs.append(run)
        b.advance(2_000)
        if i % 3 == 0:
            b.ended(job, run, "NODE_FAIL")
            b.advance(500)
            run = b.started(job, [f"n{1 + (i + 1) % 4}"], restart_count=1)
            runs.append(run)
            b.advance(1_000)
        b.ended(job, run, "COMPLETED")
    return runs


def test_every_run_start_is_received_exactly_once_across_restarts_and_a_rebuild(
    kafka_bootstrap: str, tmp_path: Path, unique: str
) -> None:
    settings = settings_for(kafka_bootstrap, tmp_path / "home", f"n{unique}")
    b = LedgerBuilder(shard=settings.cluster, start_ms=int(time.time() * 1000) - 3_600_000)
    writer = LedgerWriter(settings)
    expected = workload(b, 12)
    writer.write(b.facts)
    written = len(b.facts)
    user = SchemaOnlyConsumer(kafka_bootstrap, Topics(settings).job_starts)
    try:
        with running_projections(settings) as projections:
            projections.wait_applied(settings.cluster, b.seq[settings.cluster])
        # A restart: the views resume from their positions; new facts arrive meanwhile.
        expected += workload(b, 6, first=12)
        writer.write(b.facts[written:])
        with running_projections(settings) as projections:
            projections.wait_applied(settings.cluster, b.seq[settings.cluster])
        # A rebuild from the start of the ledger must not announce anything again.
        with running_projections(settings, rebuild=True) as projections:
            projections.wait_applied(settings.cluster, b.seq[settings.cluster])
            time.sleep(1.0)
        received = user.read_all()
    finally:
        user.close()

    runs = [record["run_sluid"] for record, _headers in received]
    assert sorted(runs) == sorted(expected), "every run once, nothing else"
    first = next(r for r, _h in received if r["restart_count"] == 0)
    assert first["queue_wait_s"] == 1
    assert first["cluster"] == settings.cluster and first["account"] == "acct"
    restarted = next(r for r, _h in received if r["restart_count"] == 1)
    assert restarted["queue_wait_s"] == 0  # 500 ms after the failed run ended
    headers = received[0][1]
    assert headers["sluice-notification"] == f"start:{received[0][0]['run_sluid']}".encode()
    assert headers["traceparent"].startswith(b"00-")


def _notifier(settings: Settings, store: RocksStore, views: Views) -> Notifier:
    notifier = Notifier(settings, store, views)
    notifier.recover()
    return notifier


def test_a_crash_after_the_commit_or_before_the_publish_neither_doubles_nor_loses_a_start(
    kafka_bootstrap: str, tmp_path: Path, unique: str
) -> None:
    settings = settings_for(kafka_bootstrap, tmp_path / "home", f"c{unique}")
    b = LedgerBuilder(shard=settings.cluster, start_ms=int(time.time() * 1000))
    workload(b, 4)
    starts = [(n, r) for n, r in b.facts if n == "JobStarted"]
    views = Views()
    for name, record in b.facts:
        views.apply(name, record)
    path = tmp_path / "store.db"

    # 1. Published and committed, but the process dies before marking it done.
    store = RocksStore(path)
    notifier = _notifier(settings, store, views)
    notifier.start()
    for name, record in starts[:3]:
        notifier.on_fact(name, record, 0)
    deadline = time.monotonic() + 30
    while notifier.published < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    notifier.stop()
    store.close()  # never drained: no done markers, three pending records

    # 2. Pending but never published: the next one is recorded, and the process dies.
    store = RocksStore(path)
    notifier = _notifier(settings, store, views)
    assert notifier.pending == {}, "recovery found the three committed starts"
    assert all(notifier.is_done(f"start:{r['run_sluid']}") for _n, r in starts[:3])
    notifier.on_fact(*starts[3][:2], 0)
    store.close()

    # 3. Restart: the pending start is published once; the facts replayed change nothing.
    store = RocksStore(path)
    notifier = _notifier(settings, store, views)
    notifier.start()
    for name, record in starts:
        notifier.on_fact(name, record, 0)
    time.sleep(2.0)
    notifier.stop()
    store.close()

    user = SchemaOnlyConsumer(kafka_bootstrap, Topics(settings).job_starts)
    try:
        runs = [r["run_sluid"] for r, _h in user.read_all()]
    finally:
        user.close()
    assert sorted(runs) == sorted(r["run_sluid"] for _n, r in starts)


def test_jobcomp_json_records_carry_slurms_field_names(
    kafka_bootstrap: str, tmp_path: Path, unique: str
) -> None:
    settings = settings_for(kafka_bootstrap, tmp_path / "home", f"j{unique}")
    b = LedgerBuilder(shard=settings.cluster, start_ms=int(time.time() * 1000) - 60_000)
    runs = workload(b, 3)
    LedgerWriter(settings).write(b.facts)
    with running_projections(settings, env={"SLUICE_JOBCOMP": "1"}) as projections:
        projections.wait_applied(settings.cluster, b.seq[settings.cluster])
        time.sleep(1.5)
    topics = Topics(settings)

    starts = read_json(kafka_bootstrap, topics.jobcomp_start)
    finishes = read_json(kafka_bootstrap, topics.jobcomp_finish)

    assert sorted(s["sluid"] for s in starts) == sorted(runs)
    assert len(finishes) == len(runs)  # one per run, the failed one included
    for record in starts + finishes:
        assert set(record) <= SLURM_JOBCOMP_FIELDS | SLUICE_ADDITIONS, set(record) - (
            SLURM_JOBCOMP_FIELDS | SLUICE_ADDITIONS)
        assert {"jobid", "username", "partition", "nodes", "state", "@start"} <= set(record)
        assert len(record["@start"]) == 19 and "T" in record["@start"]
    assert {s["state"] for s in starts} == {"RUNNING"}
    assert {f["state"] for f in finishes} == {"COMPLETED", "NODE_FAIL"}
    failed = next(f for f in finishes if f["state"] == "NODE_FAIL")
    assert failed["exit_code"] == "0:0" and failed["elapsed"] == 2


def test_sluice_watch_starts_prints_one_line_per_start(
    kafka_bootstrap: str, tmp_path: Path, unique: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cli.watch import run as watch

    settings = settings_for(kafka_bootstrap, tmp_path / "home", f"w{unique}")
    b = LedgerBuilder(shard=settings.cluster, start_ms=int(time.time() * 1000) - 60_000)
    runs = workload(b, 3)
    LedgerWriter(settings).write(b.facts)
    with running_projections(settings) as projections:
        projections.wait_applied(settings.cluster, b.seq[settings.cluster])
        for key, value in settings.as_env().items():
            monkeypatch.setenv(key, value)
        lines, raw = io.StringIO(), io.StringIO()
        assert watch(["watch", "--starts", "--from-beginning", "--count", str(len(runs)),
                      "--timeout", "30"], lines) == 0
        assert watch(["watch", "--starts", "--json", "--from-beginning", "--count", "1",
                      "--timeout", "30"], raw) == 0

    printed = lines.getvalue().splitlines()
    assert len(printed) == len(runs)
    assert all(" started on n" in line and " in main for " in line for line in printed), printed
    assert json.loads(raw.getvalue())["run_sluid"] in runs


class CutOff:
    """A transactional producer as librdkafka#5301 leaves one: its commits are never
    confirmed. With ``commits``, the first commit does reach the broker (its answer is what
    is lost), as a commit sent just before a stall may."""

    def __init__(self, real: Any, commits: bool) -> None:
        self.real, self.commits = real, commits
        self.tries = 0

    def commit_transaction(self, timeout: float) -> None:
        from confluent_kafka import KafkaException

        self.tries += 1
        if self.commits and self.tries == 1:
            self.real.commit_transaction(timeout)
        raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "commit timed out",
                                        retriable=True))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


@pytest.mark.parametrize("commits", [False, True])
def test_a_producer_whose_commits_are_never_confirmed_is_replaced_without_a_double(
    kafka_bootstrap: str, tmp_path: Path, unique: str, commits: bool,
) -> None:
    """Before, the publisher retried the commit for ever: no start was published again until
    the views restarted. Now the producer is replaced (``projections.notifications``); a batch
    its last transaction did commit is not published twice, one it did not is published."""
    from agents.group_watch import GroupWatch
    from streams.clients import transactional_producer

    settings = settings_for(kafka_bootstrap, tmp_path / "home", f"r{unique}")
    b = LedgerBuilder(shard=settings.cluster, start_ms=int(time.time() * 1000))
    workload(b, 4)
    starts = [(n, r) for n, r in b.facts if n == "JobStarted"]
    views = Views()
    for name, record in b.facts:
        views.apply(name, record)
    made: list[Any] = []

    def factory(bootstrap: str, txn_id: str) -> Any:
        real = transactional_producer(bootstrap, txn_id)
        made.append(real)
        return real

    ticks = iter(range(0, 10_000, 30))
    watch = GroupWatch("notifications producer", kafka_bootstrap, 60, probe=lambda: True,
                       clock=lambda: float(next(ticks)), symptom="no commit confirmed")
    store = RocksStore(tmp_path / "store.db")
    notifier = Notifier(settings, store, views, producer_factory=factory, watch=watch)
    notifier.recover()
    cut_off = CutOff(made[0], commits)
    notifier._producer = cut_off  # cut off from here on
    notifier.start()
    name, record = starts[0]
    notifier.on_fact(name, record, 0)
    deadline = time.monotonic() + 60
    while len(made) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(made) == 2, "replaced"
    assert cut_off.tries == 3  # out at 0 s, 30 s, past the watch's 60 s at the third
    for name, record in starts[1:]:
        notifier.on_fact(name, record, 0)
    deadline = time.monotonic() + 30
    while notifier.pending and time.monotonic() < deadline:
        time.sleep(0.1)
        notifier.on_fact("Nothing", {}, 0)  # the listener drains what was committed
    notifier.stop()
    store.close()
    assert len(made) == 2, "replaced once"

    user = SchemaOnlyConsumer(kafka_bootstrap, Topics(settings).job_starts)
    try:
        runs = [r["run_sluid"] for r, _h in user.read_all()]
    finally:
        user.close()
    assert sorted(runs) == sorted(r["run_sluid"] for _n, r in starts), "each start once"
