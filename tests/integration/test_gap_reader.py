"""The gap reader and the intake's progress on the real broker (issue 11).

Transaction markers take offsets that no consumer is given: a range whose last offsets are
markers must still end. The intake's progress lives in a consumer group of its own, which
the next owner of a partition reads back.
"""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from agents.gap_reader import GapUnreadableError, read_range
from agents.intake_progress import IntakeProgress
from streams.clients import consumer, producer, transactional_producer

pytestmark = [pytest.mark.kafka]


def make_topic(bootstrap: str, name: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, 1, 1)]).values():
        future.result(30)


def test_a_range_ending_in_commit_markers_is_read_whole_and_ends(
    kafka_bootstrap: str, unique: str,
) -> None:
    topic = unique("gap")
    make_topic(kafka_bootstrap, topic)
    writer = transactional_producer(kafka_bootstrap, unique("tx"))
    writer.init_transactions(30)
    for batch in range(2):  # offsets 0-2, marker 3, offsets 4-6, marker 7
        writer.begin_transaction()
        for i in range(3):
            writer.produce(topic, b"v%d-%d" % (batch, i), b"k")
        writer.commit_transaction(30)

    for isolation in ("read_uncommitted", "read_committed"):
        got = list(read_range(kafka_bootstrap, topic, 0, 1, 8, isolation=isolation))
        assert [r.offset for r in got] == [1, 2, 4, 5, 6]
        assert got[0].value == b"v0-1" and got[0].key == b"k"
    assert [r.offset for r in read_range(kafka_bootstrap, topic, 0, 4, 7)] == [4, 5, 6]


def test_a_range_past_the_end_of_the_partition_times_out_after_bounded_polls(
    kafka_bootstrap: str, unique: str,
) -> None:
    topic = unique("gap")
    make_topic(kafka_bootstrap, topic)
    out = producer(kafka_bootstrap)
    out.produce(topic, b"only", b"k")
    assert out.flush(30) == 0
    with pytest.raises(GapUnreadableError, match=r"offsets 1\.\.4 not readable after 3 polls"):
        list(read_range(kafka_bootstrap, topic, 0, 0, 5, poll_s=0.2, max_failures=3))


def test_progress_is_read_back_by_the_next_owner_and_falls_back_to_the_worker_group(
    kafka_bootstrap: str, unique: str,
) -> None:
    topic = unique("requests")
    make_topic(kafka_bootstrap, topic)
    out = producer(kafka_bootstrap)
    for i in range(10):
        out.produce(topic, b"r%d" % i, b"k")
    assert out.flush(30) == 0
    group, worker_group = unique("progress"), unique("worker")

    fresh = IntakeProgress(kafka_bootstrap, topic, unique("other-progress"), worker_group)
    assert fresh.expected(0) == 0  # no progress, no worker offset: the partition's first offset
    fresh.close()

    def commit_worker_group(offset: int) -> None:
        faust_like = consumer(kafka_bootstrap, worker_group)
        faust_like.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
        faust_like.close()

    commit_worker_group(4)
    first = IntakeProgress(kafka_bootstrap, topic, group, worker_group)
    assert first.expected(0) == 4  # the worker group's offset, until the intake has its own
    first.close()

    commit_worker_group(6)  # faust committed over 4 and 5 without the intake seeing them
    second = IntakeProgress(kafka_bootstrap, topic, group, worker_group)
    assert second.expected(0) == 4  # the start the first owner recorded, not faust's 6
    second.done({0: 7})
    assert second.expected(0) == 7
    second.close()

    third = IntakeProgress(kafka_bootstrap, topic, group, worker_group)
    assert third.expected(0) == 7  # read back by the next owner
    third.done({0: 9})
    third.forget({0})
    assert third.expected(0) == 9  # read again from the group after the partition moved
    third.close()


def test_a_progress_committer_cut_off_is_replaced_by_one_that_commits(
    kafka_bootstrap: str, unique: str,
) -> None:
    """The committer first made can reach no broker (as librdkafka#5301 leaves one): its
    commits fail (after its 10 s session timeout, not librdkafka's 45 s), and once they have
    failed for the watch's limit while the real broker answers a new client it is replaced
    by one that commits (``agents.intake_progress``)."""
    import time

    from agents.group_watch import GroupWatch

    topic, group, worker_group = unique("requests"), unique("progress"), unique("worker")
    make_topic(kafka_bootstrap, topic)
    made: list[str] = []

    def make(name: str) -> object:
        made.append(name)
        where = "127.0.0.1:1" if len(made) <= 2 else kafka_bootstrap
        return consumer(where, name, {"enable.partition.eof": False,
                                      "session.timeout.ms": 10_000})

    watch = GroupWatch("progress", kafka_bootstrap, 1.0, symptom="its commits failing")
    tracker = IntakeProgress(kafka_bootstrap, topic, group, worker_group, make=make,
                             watch=watch)
    started = time.monotonic()
    for _ in range(2):
        with pytest.raises(KafkaException):
            tracker.done({0: 3})
    assert 15 < time.monotonic() - started < 40  # two failed commits of ~10 s
    assert made == [group, worker_group, group, worker_group]  # replaced at the second
    tracker.done({0: 4})
    tracker.close()
    assert IntakeProgress(kafka_bootstrap, topic, group, worker_group).expected(0) == 4
