"""The Kafka the tests run against, and the local broker of ``infra.kafka``.

- confluent-kafka: idempotent ``acks=all`` round trip; transactions (commit visible, abort not).
- faust: an agent writing a ``rocksdb://`` table and a sink, restarted to prove recovery.
- ``LocalKafka`` with 3 nodes (slow): SIGKILL one node, ``acks=all`` still succeeds, restart it,
  stop everything, and no JVM of ours is left. Also the CLI round trip.
- A few checks that need no Java (config rendering, missing tools, data-dir mismatch).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka import codec as aiokafka_codec
from aiokafka.partitioner import murmur2
from confluent_kafka import Consumer, KafkaError, Message, Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._metadata import PartitionMetadata
from confluent_kafka.cimpl import NewTopic

from infra.kafka import (
    DataDirMismatchError,
    LocalKafka,
    ToolMissingError,
    ensure_jars,
    running,
    stop,
)
from infra.kafka._config import plan_cluster, server_properties

REPO = Path(__file__).resolve().parents[2]


# --- helpers ------------------------------------------------------------------------------


def create_topic(bootstrap: str, name: str, partitions: int, replication: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, replication)])[name].result(30)


def partition_metadata(bootstrap: str, topic: str, partition: int) -> PartitionMetadata:
    """Metadata of one partition, once a leader is known (metadata propagates asynchronously)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + 30
    while True:
        topics = admin.list_topics(topic, timeout=10).topics
        found = topics.get(topic)
        if found is not None and found.error is None and partition in found.partitions:
            meta = found.partitions[partition]
            if meta.leader >= 0:
                return meta
        assert time.monotonic() < deadline, f"no leader for {topic}[{partition}]"
        time.sleep(0.2)


def producer(bootstrap: str, **extra: object) -> Producer:
    config: dict[str, object] = {
        "bootstrap.servers": bootstrap,
        "enable.idempotence": True,
        "acks": "all",
        "partitioner": "murmur2_random",
        "linger.ms": 5,
    }
    config.update(extra)
    return Producer(config)


def consume(
    bootstrap: str, topic: str, group: str, *, want: int, isolation: str = "read_committed",
    settle_s: float = 0.0, timeout_s: float = 45.0,
) -> list[Message]:
    """Read ``topic`` from the start until ``want`` messages came, then ``settle_s`` more."""
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "isolation.level": isolation,
    })
    consumer.subscribe([topic])
    got: list[Message] = []
    deadline = time.monotonic() + timeout_s
    settle_until: float | None = None
    try:
        while time.monotonic() < deadline:
            if settle_until is None and len(got) >= want:
                settle_until = time.monotonic() + settle_s
            if settle_until is not None and time.monotonic() >= settle_until:
                break
            message = consumer.poll(0.2)
            if message is None:
                continue
            error = message.error()
            if error is not None and error.code() != KafkaError._PARTITION_EOF:
                raise AssertionError(f"consumer error: {error}")
            if error is None:
                got.append(message)
        consumer.commit(asynchronous=False) if got else None
    finally:
        consumer.close()
    return got


def deliver(prod: Producer, topic: str, records: list[tuple[bytes, bytes]]) -> list[Message]:
    """Produce and flush; return the delivered messages (any delivery error fails the test)."""
    delivered: list[Message] = []
    errors: list[KafkaError] = []

    def on_delivery(error: KafkaError | None, message: Message) -> None:
        if error is not None:
            errors.append(error)
        else:
            delivered.append(message)

    for key, value in records:
        prod.produce(topic, key=key, value=value, on_delivery=on_delivery)
    assert prod.flush(60) == 0, "messages still queued after 60 s"
    assert errors == []
    return delivered


# --- confluent-kafka against the session broker ---------------------------------------------


@pytest.mark.kafka
def test_idempotent_acks_all_records_round_trip_through_a_consumer_group(
    kafka_bootstrap: str, unique: str
) -> None:
    topic = f"roundtrip-{unique}"
    create_topic(kafka_bootstrap, topic, partitions=3)
    records = [(f"job-{i}".encode(), f"payload-{i}".encode()) for i in range(200)]

    delivered = deliver(producer(kafka_bootstrap), topic, records)
    got = consume(kafka_bootstrap, topic, f"g-{unique}", want=len(records))

    assert sorted((m.key() or b"", m.value() or b"") for m in got) == sorted(records)
    # murmur2_random is the Java/aiokafka partitioner: the same key lands on the same partition
    assert all(m.partition() == (murmur2(m.key() or b"") & 0x7FFFFFFF) % 3 for m in delivered)


@pytest.mark.kafka
def test_read_committed_consumer_sees_committed_transactions_and_never_aborted_ones(
    kafka_bootstrap: str, unique: str
) -> None:
    topic = f"tx-{unique}"
    create_topic(kafka_bootstrap, topic, partitions=1)
    prod = producer(kafka_bootstrap, **{"transactional.id": f"tx-{unique}"})
    prod.init_transactions(30)

    prod.begin_transaction()
    for value in (b"c1", b"c2", b"c3"):
        prod.produce(topic, key=b"k", value=value)
    prod.commit_transaction(30)
    prod.begin_transaction()
    for value in (b"aborted-1", b"aborted-2"):
        prod.produce(topic, key=b"k", value=value)
    prod.flush(30)  # the aborted records really reach the log
    prod.abort_transaction(30)
    prod.begin_transaction()
    prod.produce(topic, key=b"k", value=b"c4")
    prod.commit_transaction(30)

    committed = consume(kafka_bootstrap, topic, f"rc-{unique}", want=4, settle_s=2.0)
    everything = consume(
        kafka_bootstrap, topic, f"ru-{unique}", want=6, isolation="read_uncommitted", settle_s=1.0
    )

    assert [m.value() for m in committed] == [b"c1", b"c2", b"c3", b"c4"]
    assert sorted(m.value() or b"" for m in everything) == sorted(
        [b"c1", b"c2", b"c3", b"aborted-1", b"aborted-2", b"c4"]
    )


# --- aiokafka (faust's client) against the session broker -----------------------------------


async def aio_read(consumer: AIOKafkaConsumer, want: int, timeout_s: float = 30.0) -> list[bytes]:
    values: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    while len(values) < want and time.monotonic() < deadline:
        for records in (await consumer.getmany(timeout_ms=500)).values():
            values.extend(r.value or b"" for r in records)
    return values


@pytest.mark.kafka
async def test_aiokafka_producer_and_consumer_group_commit_offsets(
    kafka_bootstrap: str, unique: str
) -> None:
    topic = f"aio-{unique}"
    create_topic(kafka_bootstrap, topic, partitions=3)
    prod = AIOKafkaProducer(bootstrap_servers=kafka_bootstrap, acks="all", enable_idempotence=True)
    await prod.start()
    try:
        for i in range(50):
            await prod.send(topic, key=f"k{i}".encode(), value=f"v{i}".encode())
        await prod.flush()
    finally:
        await prod.stop()
    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=kafka_bootstrap, group_id=f"aio-{unique}",
        auto_offset_reset="earliest", enable_auto_commit=False,
    )
    await consumer.start()
    try:
        values = await aio_read(consumer, 50)
        await consumer.commit()
        committed = [await consumer.committed(tp) or 0 for tp in consumer.assignment()]
    finally:
        await consumer.stop()

    assert sorted(values) == sorted(f"v{i}".encode() for i in range(50))
    assert sum(committed) == 50


@pytest.mark.kafka
async def test_aiokafka_transactions_hide_aborted_records_from_read_committed(
    kafka_bootstrap: str, unique: str
) -> None:
    topic = f"aiotx-{unique}"
    create_topic(kafka_bootstrap, topic, partitions=1)
    prod = AIOKafkaProducer(bootstrap_servers=kafka_bootstrap, transactional_id=f"aio-{unique}")
    await prod.start()
    try:
        async with prod.transaction():
            await prod.send(topic, b"c1")
        await prod.begin_transaction()
        await prod.send_and_wait(topic, b"aborted")
        await prod.abort_transaction()
        async with prod.transaction():
            await prod.send(topic, b"c2")
    finally:
        await prod.stop()
    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=kafka_bootstrap, auto_offset_reset="earliest",
        isolation_level="read_committed",
    )
    await consumer.start()
    try:
        values = await aio_read(consumer, 2)
        values += await aio_read(consumer, 1, timeout_s=1.0)  # nothing more may arrive
    finally:
        await consumer.stop()

    assert values == [b"c1", b"c2"]


@pytest.mark.kafka
@pytest.mark.parametrize("codec", ["gzip", "lz4", "zstd", "snappy"])
async def test_aiokafka_reads_batches_that_confluent_kafka_compressed(
    kafka_bootstrap: str, unique: str, codec: str
) -> None:
    if codec != "gzip" and not aiokafka_codec.has_lz4():
        pytest.skip(f"aiokafka decodes {codec} only with cramjam (pip extra aiokafka[lz4])")
    topic = f"codec-{codec}-{unique}"
    create_topic(kafka_bootstrap, topic, partitions=1)
    records = [(f"k{i}".encode(), b"payload " * 20) for i in range(20)]
    deliver(producer(kafka_bootstrap, **{"compression.type": codec}), topic, records)
    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=kafka_bootstrap, auto_offset_reset="earliest"
    )
    await consumer.start()
    try:
        values = await aio_read(consumer, len(records))
    finally:
        await consumer.stop()

    assert values == [value for _, value in records]


# --- faust (aiokafka) against the session broker --------------------------------------------

FAUST_APP = textwrap.dedent('''
    import os
    import faust

    app = faust.App(
        os.environ["SMOKE_APP_ID"],
        broker="kafka://" + os.environ["SMOKE_BOOTSTRAP"],
        store="rocksdb://",
        datadir=os.environ["SMOKE_DATADIR"],
        topic_partitions=2,
        topic_replication_factor=1,
        consumer_auto_offset_reset="earliest",
        broker_session_timeout=6,
        broker_heartbeat_interval=1,
        topic_disable_leader=True,
        web_enabled=False,
        processing_guarantee=os.environ["SMOKE_GUARANTEE"],
    )
    source = app.topic(os.environ["SMOKE_SOURCE"], key_type=str, value_type=str, partitions=2)
    sink = app.topic(os.environ["SMOKE_SINK"], key_type=str, value_type=str, partitions=2)
    counts = app.Table("counts", default=int, partitions=2,
                       options={"block_cache_size": 8 * 2**20, "write_buffer_size": 4 * 2**20})

    @app.agent(source, sink=[sink])
    async def count(stream):
        async for key, value in stream.items():
            counts[key] += 1
            yield f"{key}={counts[key]}:{value}"

    if __name__ == "__main__":
        app.main()
''')


@pytest.fixture(params=["at_least_once", "exactly_once"])
def faust_worker(
    request: pytest.FixtureRequest, kafka_bootstrap: str, unique: str, tmp_path: Path
) -> Iterator[tuple[dict[str, str], Path]]:
    """Environment and script of a faust app, once per processing guarantee; topics created."""
    env = dict(
        os.environ,
        SMOKE_GUARANTEE=str(request.param),
        SMOKE_APP_ID=f"smoke-{unique}",
        SMOKE_BOOTSTRAP=kafka_bootstrap,
        SMOKE_DATADIR=str(tmp_path / "faust-data"),
        SMOKE_SOURCE=f"smoke-src-{unique}",
        SMOKE_SINK=f"smoke-sink-{unique}",
    )
    for topic in (env["SMOKE_SOURCE"], env["SMOKE_SINK"]):
        create_topic(kafka_bootstrap, topic, partitions=2)
    script = tmp_path / "smoke_app.py"
    script.write_text(FAUST_APP, encoding="utf-8")
    yield env, script


def run_worker_until_ready(env: dict[str, str], script: Path, log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        worker = subprocess.Popen(
            [sys.executable, str(script), "worker", "-l", "info"],
            env=env, cwd=script.parent, stdout=out, stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + 90
    while "Worker ready" not in log.read_text(errors="replace"):
        if worker.poll() is not None or time.monotonic() > deadline:
            worker.kill()
            pytest.fail(f"faust worker not ready:\n{log.read_text(errors='replace')[-3000:]}")
        time.sleep(0.3)
    return worker


def stop_worker(worker: subprocess.Popen[bytes], log: Path) -> None:
    worker.send_signal(signal.SIGTERM)
    try:
        assert worker.wait(60) == 0, log.read_text(errors="replace")[-3000:]
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()


@pytest.mark.kafka
@pytest.mark.slow
def test_faust_agent_keeps_a_rocksdb_table_and_recovers_it_after_a_restart(
    kafka_bootstrap: str, unique: str, faust_worker: tuple[dict[str, str], Path]
) -> None:
    env, script = faust_worker
    sink_values: list[str] = []
    for run in (1, 2):
        log = script.parent / f"worker-{run}.log"
        worker = run_worker_until_ready(env, script, log)
        try:
            records = [(f"k{i % 4}".encode(), json.dumps(f"v{i}").encode()) for i in range(20)]
            deliver(producer(kafka_bootstrap), env["SMOKE_SOURCE"], records)
            got = consume(kafka_bootstrap, env["SMOKE_SINK"], f"sink-{run}-{unique}", want=20 * run)
            sink_values = [json.loads(m.value() or b"null") for m in got]
        finally:
            stop_worker(worker, log)
        assert "ERROR" not in log.read_text(errors="replace")
        # each key was seen 5 times per run; run 2 continues from the recovered table
        finals = sorted(v.split(":")[0] for v in sink_values if v.startswith("k") and
                        v.split(":")[0].endswith(f"={5 * run}"))
        assert finals == [f"k{k}={5 * run}" for k in range(4)], sink_values
    tables = Path(env["SMOKE_DATADIR"]).rglob("counts-*.db")
    assert sorted(p.name for p in tables) == ["counts-0.db", "counts-1.db"]


# --- the local broker itself ----------------------------------------------------------------


def our_jvms(data_dir: Path) -> list[int]:
    """PIDs of live processes whose command line mentions ``data_dir`` (read-only scan)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
            state = (proc / "stat").read_text().rsplit(")", 1)[-1].split()[0]
        except OSError:
            continue
        if str(data_dir).encode() in cmdline and state != "Z":
            found.append(int(proc.name))
    return found


needs_java = pytest.mark.skipif(
    shutil.which("java") is None or shutil.which("mvn") is None,
    reason="the local broker needs java and mvn",
)


@pytest.mark.kafka
@pytest.mark.slow
@needs_java
def test_three_node_cluster_survives_a_killed_node_and_stops_without_leftovers(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "kafka3"
    cluster = LocalKafka.start(data_dir, nodes=3, tie_to_parent=True)
    try:
        assert len(cluster.bootstrap.split(",")) == 3
        assert LocalKafka.start(data_dir, nodes=3).was_running
        create_topic(cluster.bootstrap, "replicated", partitions=3, replication=3)
        partition0 = partition_metadata(cluster.bootstrap, "replicated", 0)
        assert sorted(partition0.replicas) == [1, 2, 3]

        victim = partition0.leader
        cluster.kill_node(victim)
        assert cluster.pid(victim) is None
        records = [(f"key-{i}".encode(), b"x") for i in range(100)]
        assert len(deliver(producer(cluster.bootstrap), "replicated", records)) == 100

        cluster.restart_node(victim)
        cluster.wait_in_sync(60)
        assert len(deliver(producer(cluster.bootstrap), "replicated", records)) == 100
        pids = [s.pid for s in cluster.status()]
        assert all(pids)
    finally:
        cluster.stop()
    assert [s.pid for s in cluster.status()] == [None, None, None]
    assert running(data_dir) is None
    assert our_jvms(data_dir) == []


@pytest.mark.kafka
@pytest.mark.slow
@needs_java
def test_cli_start_is_idempotent_and_stop_leaves_nothing_running(tmp_path: Path) -> None:
    data_dir = tmp_path / "kafka-cli"

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "infra.kafka", *args, "--dir", str(data_dir)],
            cwd=REPO, capture_output=True, text=True, timeout=180, check=False,
        )

    first = cli("start")
    try:
        assert first.returncode == 0, first.stderr
        bootstrap = first.stdout.strip()
        again = cli("start")
        assert (again.returncode, again.stdout.strip()) == (0, bootstrap)
        assert "already running" in again.stderr
        status = cli("status")
        assert (status.returncode, status.stdout.strip()) == (0, bootstrap)
    finally:
        stopped = cli("stop")
    assert stopped.returncode == 0
    assert cli("status").returncode == 1
    assert our_jvms(data_dir) == []


# --- no Java needed ------------------------------------------------------------------------


def test_three_node_config_replicates_internal_topics_three_ways_with_min_isr_two() -> None:
    spec = plan_cluster(3, None, "4.4.0")
    text = server_properties(spec, spec.nodes[0], Path("/data"))
    settings = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)

    assert settings["default.replication.factor"] == "3"
    assert settings["min.insync.replicas"] == "2"
    assert settings["transaction.state.log.replication.factor"] == "3"
    assert settings["transaction.state.log.min.isr"] == "2"
    assert settings["controller.quorum.voters"].count("@127.0.0.1:") == 3
    assert settings["auto.create.topics.enable"] == "false"
    ports = [n.port for n in spec.nodes] + [n.controller_port for n in spec.nodes]
    assert len(set(ports)) == 6


def test_single_node_config_keeps_transactions_possible_with_one_replica() -> None:
    spec = plan_cluster(1, 29092, "4.4.0")
    text = server_properties(spec, spec.nodes[0], Path("/data"))

    assert spec.bootstrap == "127.0.0.1:29092"
    assert "transaction.state.log.replication.factor=1\n" in text
    assert "transaction.state.log.min.isr=1\n" in text
    assert "offsets.topic.num.partitions=1\n" in text
    assert "group.initial.rebalance.delay.ms=0\n" in text


def test_ensure_jars_names_the_missing_tool(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SLUICE_KAFKA_LIBS", str(tmp_path / "libs"))
    monkeypatch.setenv("PATH", str(tmp_path))  # neither java nor mvn

    with pytest.raises(ToolMissingError, match="java"):
        ensure_jars()


def test_a_one_node_data_dir_refuses_to_start_as_three_nodes(tmp_path: Path) -> None:
    from infra.kafka._config import save_spec

    save_spec(tmp_path, plan_cluster(1, None, "4.4.0"))

    with pytest.raises(DataDirMismatchError, match="1-node"):
        LocalKafka.start(tmp_path, nodes=3)
    assert stop(tmp_path) is False
