"""One pass of the node daemon's loop (``NodeDaemon._pass``): commands in order, their reports
flushed once, and only then the offset file moved past them. The commands come through a real
``CommandFeed`` from a fake consumer; the producer is a fake that records what it was asked."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from agents.auth import jwt_token
from agents.auth.command_replays import ReplayCache
from agents.auth.command_signature import CommandSigner
from agents.auth.node_keys import ensure_keys, load_command_private
from agents.auth.signer import RequestSigner
from agents.node.command_feed import CommandFeed
from agents.node.daemon import NodeDaemon, NodeResources
from agents.node.offset_file import WIDTH
from agents.node.outbox import Outbox
from schemas.reader import decode
from schemas.writer import encode
from streams.settings import Settings
from tests.unit.node.test_command_feed import FakeConsumer


class FakeProducer:
    """Records produce and flush calls; at each flush, what the offset file said then."""

    def __init__(self, offset_file: Path) -> None:
        self.offset_file = offset_file
        self.produced: list[tuple[str, bytes]] = []
        self.flushes: list[tuple[int, str | None]] = []  # (records produced so far, offset file)
        self.callbacks: list[Any] = []  # the on_delivery of each produced record (or None)
        self.values: list[bytes] = []

    def produce(self, topic: str, value: bytes, key: bytes, headers: Any = None,
                on_delivery: Any = None) -> None:
        self.produced.append((topic, key))
        self.values.append(value)
        self.callbacks.append(on_delivery)

    def poll(self, timeout: float = 0) -> int:
        return 0

    def flush(self, timeout: float = -1) -> int:
        text = self.offset_file.read_text() if self.offset_file.exists() else None
        self.flushes.append((len(self.produced), text))
        return 0


class FakeMessage:
    def __init__(self, key: str, value: bytes, offset: int) -> None:
        self._key, self._value, self._offset = key, value, offset

    def error(self) -> None:
        return None

    def key(self) -> bytes:
        return self._key.encode()

    def value(self) -> bytes:
        return self._value

    def headers(self) -> list[tuple[str, bytes]]:
        return []  # unsigned: the daemon refuses the command and reports the refusal

    def offset(self) -> int:
        return self._offset


@pytest.fixture
def daemon(tmp_path: Path) -> NodeDaemon:
    settings = Settings.from_env({"SLUICE_HOME": str(tmp_path), "SLUICE_TOPIC_PREFIX": "dmnu",
                                  "KAFKA_BOOTSTRAP": "127.0.0.1:1"})
    node = NodeDaemon(settings, "n01", NodeResources(1, 512), state_dir=tmp_path / "n01",
                      proctrack="pgid")
    node._producer = FakeProducer(node._offset_file.path)  # type: ignore[assignment]
    node._outbox = Outbox(node._producer, RequestSigner(settings, node="n01"), node.topics, "n01")
    node._next_beat = time.monotonic() + 3600
    return node


def _kill(node: NodeDaemon) -> bytes:
    return encode("KillRun", {"job_sluid": "sJOB", "run_sluid": "sRUN", "node_sluid":
                              node.node_sluid, "node_name": node.name, "reason": "TERMINATE",
                              "issued_ms": 0})


def _stored(node: NodeDaemon) -> int:
    """The position in the node's offset file (in place, padded: agents.node.offset_file)."""
    text = node._offset_file.path.read_text()
    assert len(text) == WIDTH + 1 and text.endswith("\n")
    return int(text)


def _pass(node: NodeDaemon, messages: list[FakeMessage]) -> None:
    reader = FakeConsumer(list(messages), batch=len(messages) or 1)
    feed = CommandFeed(reader, keep=node._ours)
    feed.start()
    try:
        assert reader.idle.wait(10)
        node._pass(feed)
    finally:
        feed.stop()


def test_a_pass_flushes_its_commands_reports_once_before_the_offset_file_moves(
    daemon: NodeDaemon,
) -> None:
    producer: FakeProducer = daemon._producer  # type: ignore[assignment]
    ours = _kill(daemon)
    _pass(daemon, [FakeMessage(daemon.node_sluid, ours, 40),
                   FakeMessage("sOTHERNODE", ours, 41),
                   FakeMessage(daemon.node_sluid, ours, 42),
                   FakeMessage("sOTHERNODE", ours, 43)])

    refusals = [t for t, _ in producer.produced if t == daemon.topics.requests]
    assert len(refusals) == 2  # two unsigned commands of ours, each reported refused
    assert producer.flushes == [(2, None)]  # one flush, with both reports, before the offset
    assert _stored(daemon) == 44  # past the other node's last one too


def test_a_pass_without_commands_neither_flushes_nor_moves_the_offset(
    daemon: NodeDaemon,
) -> None:
    producer: FakeProducer = daemon._producer  # type: ignore[assignment]
    daemon._next_beat = time.monotonic()
    _pass(daemon, [])

    assert producer.flushes == []
    assert not daemon._offset_file.path.exists()
    assert [t for t, _ in producer.produced] == [daemon.topics.heartbeats]


def test_a_pass_takes_commands_of_other_nodes_past_without_a_report_nor_a_flush(
    daemon: NodeDaemon,
) -> None:
    producer: FakeProducer = daemon._producer  # type: ignore[assignment]
    _pass(daemon, [FakeMessage("sOTHERNODE", _kill(daemon), 7),
                   FakeMessage("sOTHERNODE", _kill(daemon), 8)])

    assert producer.produced == []
    assert producer.flushes == []  # nothing of ours: nothing to deliver first
    assert _stored(daemon) == 9


def test_a_report_the_broker_did_not_take_is_sent_again_on_the_next_pass(
    daemon: NodeDaemon,
) -> None:
    producer: FakeProducer = daemon._producer  # type: ignore[assignment]
    _pass(daemon, [FakeMessage(daemon.node_sluid, _kill(daemon), 5)])
    [(topic, _key)] = producer.produced
    assert topic == daemon.topics.requests  # the refusal report
    callback = producer.callbacks[0]
    assert callback is not None
    callback("KafkaError{code=_MSG_TIMED_OUT}", None)  # librdkafka gave up on it
    _pass(daemon, [])
    assert [t for t, _ in producer.produced] == [daemon.topics.requests] * 2
    assert producer.values[1] == producer.values[0]  # the same report, signed anew
    producer.callbacks[1](None, None)  # delivered: nothing more
    _pass(daemon, [])
    assert len(producer.produced) == 2


def _names(producer: FakeProducer) -> list[str]:
    return [decode(value)[0] for value in producer.values]


def test_a_registration_the_broker_did_not_take_is_sent_again(daemon: NodeDaemon) -> None:
    """Seen under load: a registration librdkafka gave up on left the daemon heartbeating for
    ever with its node never in service (``sluice up`` waited for it). A later pass sends it
    again, signed anew; once one is delivered nothing more is sent."""
    producer: FakeProducer = daemon._producer  # type: ignore[assignment]
    daemon._register()
    assert _names(producer) == ["RegisterNode"]
    producer.callbacks[0]("KafkaError{code=_MSG_TIMED_OUT}", None)  # librdkafka gave up on it
    _pass(daemon, [])
    assert _names(producer) == ["RegisterNode", "RegisterNode"]
    assert [t for t, _ in producer.produced] == [daemon.topics.requests] * 2
    producer.callbacks[1](None, None)  # delivered
    _pass(daemon, [])
    assert _names(producer) == ["RegisterNode", "RegisterNode"]


def test_a_lost_registration_is_not_sent_again_once_the_node_runs_jobs(
        daemon: NodeDaemon, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run means the shard took a registration of this daemon (a delivery report of
    failure can come for one the broker did write); registering again would end the node's
    runs as a reboot."""
    producer: FakeProducer = daemon._producer  # type: ignore[assignment]
    daemon._register()
    producer.callbacks[0]("KafkaError{code=_MSG_TIMED_OUT}", None)
    monkeypatch.setattr(daemon._runs, "running", lambda: ["sRUN"])
    _pass(daemon, [])
    assert _names(producer) == ["RegisterNode"]
    monkeypatch.setattr(daemon._runs, "running", list)
    _pass(daemon, [])  # the loss was handled once: an idle node later is not registered again
    assert _names(producer) == ["RegisterNode"]


class SignedMessage(FakeMessage):
    def __init__(self, key: str, value: bytes, offset: int, header: tuple[str, bytes]) -> None:
        super().__init__(key, value, offset)
        self._header = header

    def headers(self) -> list[tuple[str, bytes]]:
        return [self._header]


def test_a_pass_runs_its_commands_only_once_their_replay_entries_are_on_disk(
    daemon: NodeDaemon, monkeypatch: pytest.MonkeyPatch,
) -> None:
    ensure_keys(daemon.settings)
    signer = CommandSigner(load_command_private(daemon.settings), daemon.settings.cluster, 300)
    events: list[str] = []
    write = ReplayCache._write

    def recorded_write(cache: ReplayCache) -> None:
        events.append(f"{len(cache._pending)} written")
        write(cache)

    monkeypatch.setattr(ReplayCache, "_write", recorded_write)
    monkeypatch.setattr(daemon, "_register", lambda: events.append("ran"))
    messages: list[FakeMessage] = []
    for offset, reason in ((5, "config changed"), (6, "a node went down")):
        value = encode("RequestRegistration", {"node_sluid": daemon.node_sluid,
                                               "reason": reason, "issued_ms": 0})
        header = signer.header(daemon.node_sluid, "", value, int(time.time() * 1000))
        messages.append(SignedMessage(daemon.node_sluid, value, offset, header))
    _pass(daemon, messages)

    assert events == ["2 written", "ran", "ran"]  # one write (one fsync), then both run
    assert _stored(daemon) == 7


def _signed(daemon: NodeDaemon, name: str, record: dict[str, Any], offset: int,
            ) -> SignedMessage:
    signer = CommandSigner(load_command_private(daemon.settings), daemon.settings.cluster, 300)
    value = encode(name, record)
    header = signer.header(daemon.node_sluid, str(record.get("run_sluid", "")), value,
                           int(time.time() * 1000))
    return SignedMessage(daemon.node_sluid, value, offset, header)


def test_a_daemon_whose_sluid_another_node_holds_stops_and_forgets_its_identity(
    daemon: NodeDaemon, monkeypatch: pytest.MonkeyPatch,
) -> None:
    ensure_keys(daemon.settings)
    registered: list[str] = []
    monkeypatch.setattr(daemon, "_register", lambda: registered.append("again"))
    ask = {"node_sluid": daemon.node_sluid, "reason": "in use", "issued_ms": 0}
    _pass(daemon, [_signed(daemon, "RequestRegistration", {**ask, "holder": "n01"}, 3)])
    assert not daemon._stopping and registered == []  # the holder does nothing

    _pass(daemon, [_signed(daemon, "RequestRegistration", {**ask, "holder": "n07"}, 4)])
    assert daemon._stopping and daemon._renew and registered == []  # run() returns True
    sluid = daemon.node_sluid
    daemon._forget_identity()  # what run() does then
    assert not (daemon.state_dir / "node.sluid").exists()
    assert not daemon._offset_file.path.exists()
    renewed = NodeDaemon(daemon.settings, "n01", NodeResources(1, 512),
                         state_dir=daemon.state_dir, proctrack="pgid")
    assert renewed.node_sluid != sluid


def test_a_stop_asked_for_is_no_restart(daemon: NodeDaemon) -> None:
    daemon._renew = True
    daemon.stop()  # SIGTERM, SIGINT
    assert daemon._stopping and not daemon._renew


def test_a_command_naming_another_node_under_this_sluid_runs_nothing(
    daemon: NodeDaemon, monkeypatch: pytest.MonkeyPatch,
) -> None:
    ensure_keys(daemon.settings)
    ran: list[str] = []
    monkeypatch.setattr(daemon, "_run_command", lambda name, record: ran.append(name))
    kill = {"job_sluid": "sJOB", "run_sluid": "sRUN", "node_sluid": daemon.node_sluid,
            "reason": "TERMINATE", "issued_ms": 0}
    _pass(daemon, [_signed(daemon, "KillRun", {**kill, "node_name": "n04"}, 8),
                   _signed(daemon, "KillRun", {**kill, "node_name": "n01"}, 9)])
    assert ran == ["KillRun"]  # only the one naming this node
    assert _stored(daemon) == 10  # both passed


class _Watermarks:
    """A reader that knows only the command partition's watermarks."""

    def get_watermark_offsets(self, _tp: Any, timeout: float = 0) -> tuple[int, int]:
        return 3, 42


@pytest.mark.parametrize("garbage", [b"\xe5\x8f\xff\x00garbage", b"not a number\n", b"-7\n", b""])
def test_an_unreadable_offset_file_starts_at_the_partitions_end_instead_of_crashing(
        daemon: NodeDaemon, garbage: bytes) -> None:
    """Found by filling a stopped node's ``commands.offset`` with garbage: the daemon died at
    every start (``'utf-8' codec can't decode``), a crash loop. It starts as a new daemon would,
    at the end of its partition: re-reading from the start could run again a command whose
    replay-cache entry was lost with it; a command it skips is healed as for any restart (the
    registration ends the runs the shard held there, the heartbeats' reconciliation kills
    strays)."""
    daemon._offset_file.path.parent.mkdir(parents=True, exist_ok=True)
    daemon._offset_file.path.write_bytes(garbage)
    assert daemon._start_offset(_Watermarks()) == 42


def test_a_readable_offset_file_is_where_the_daemon_resumes(daemon: NodeDaemon) -> None:
    daemon._offset_file.path.write_text("17\n")
    assert daemon._start_offset(_Watermarks()) == 17


class _StaleCache:
    """A reader whose metadata cache kept a new topic's leaderless state (librdkafka answers
    ``_UNKNOWN_PARTITION`` from it at once, for as long as the client lives)."""

    def __init__(self) -> None:
        self.closed = False

    def get_watermark_offsets(self, _tp: Any, timeout: float = 0) -> tuple[int, int]:
        raise KafkaException(KafkaError(KafkaError._UNKNOWN_PARTITION))

    def close(self) -> None:
        self.closed = True


class _Fresh(_Watermarks):
    """A new client: it asks the broker, which by now knows the topic's leader."""

    def __init__(self) -> None:
        self.closed = False

    def close(self) -> None:
        self.closed = True


def test_a_new_topic_read_while_leaderless_is_asked_for_again_not_given_up(
        daemon: NodeDaemon, monkeypatch: pytest.MonkeyPatch) -> None:
    """Seen under ``sluice up --nodes 64``: four daemons read their new command topic before it
    had a leader, librdkafka's cache answered "Unknown partition" to all 30 attempts, and the
    daemons ended (``sluice up`` failed). Between attempts a new client asks the broker; the
    reader itself is kept (the daemon assigns it next) and each probe is closed. Not
    ``list_topics`` (these readers have none): its answer is built by ``confluent_kafka.admin``,
    whose package start-up (asyncio, ssl) added 6 MiB to every daemon that once waited."""
    monkeypatch.setattr("agents.node.daemon.time.sleep", lambda _s: None)
    probes: list[_StaleCache | _Fresh] = [_StaleCache(), _Fresh()]
    handed = list(probes)
    monkeypatch.setattr(daemon, "_new_reader", lambda: handed.pop(0))
    reader = _StaleCache()
    assert daemon._start_offset(reader) == 42
    assert not reader.closed
    assert [probe.closed for probe in probes] == [True, True]


def test_a_flush_waiting_on_the_broker_feeds_the_supervisors_the_lease_deliveries_renew(
        daemon: NodeDaemon, monkeypatch: pytest.MonkeyPatch) -> None:
    """A broker slow to take the pass's reports, but still taking the heartbeats, must not
    fence the runs: the flush waits in one-second slices and feeds the lifelines the lease the
    deliveries renewed between; with nothing delivered nothing is fed (the lease runs down:
    agents.node.fence)."""
    left = iter([3, 2, 1, 0])
    waits: list[float] = []

    def flush(timeout: float = -1) -> int:
        waits.append(timeout)
        daemon._lease.delivered(time.monotonic())  # a heartbeat's report came meanwhile
        return next(left)

    fed: list[tuple[str, float | None]] = []
    monkeypatch.setattr(daemon._producer, "flush", flush)
    monkeypatch.setattr(daemon._runs, "feed", lambda lease=None: fed.append(("runs", lease)))
    monkeypatch.setattr(daemon._steps, "feed", lambda lease=None: fed.append(("steps", lease)))
    daemon._flush(10)
    assert len(waits) == 4 and all(0 < w <= 1.0 for w in waits)
    assert [who for who, _lease in fed] == ["runs", "steps"] * 3
    assert all(lease is not None and 0 < lease <= daemon.fence_s for _who, lease in fed)
    daemon._keep_lease()  # what the last slice's delivery renewed
    fed.clear()
    monkeypatch.setattr(daemon._producer, "flush", lambda timeout=-1: 1)  # never delivered
    began = time.monotonic()
    daemon._flush(0.05)
    assert time.monotonic() - began < 1.0  # the deadline holds
    assert fed == []


def _launch(daemon: NodeDaemon, run_sluid: str) -> dict[str, Any]:
    return {"job_sluid": "sJOB", "job_id": 7, "run_sluid": run_sluid,
            "node_sluid": daemon.node_sluid, "node_name": daemon.name, "batch_host": True,
            "nodes": [daemon.name], "restart_count": 0, "user": "root", "partition": "",
            "name": "j", "command": ["true"], "workdir": "/", "env": {}, "output": "",
            "error": "", "time_limit_s": 0, "issued_ms": 0}


def test_a_launch_refused_as_expired_is_reported_with_its_signed_expiry_unless_it_ran_here(
    daemon: NodeDaemon, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The shard tells a clock ahead from a stale copy by that expiry (scheduler.nodes.
    refused_launches); a copy of a launch this daemon ran proves nothing about its clock."""
    ensure_keys(daemon.settings)
    producer: FakeProducer = daemon._producer  # type: ignore[assignment]
    monkeypatch.setattr(daemon, "_run_command", lambda name, record: None)
    signer = CommandSigner(load_command_private(daemon.settings), daemon.settings.cluster, 300)
    signed_ms = int(time.time() * 1000) - 400_000  # expired 100 s ago on this node's clock

    def expired(run_sluid: str, offset: int) -> SignedMessage:
        value = encode("LaunchRun", _launch(daemon, run_sluid))
        return SignedMessage(daemon.node_sluid, value, offset,
                             signer.header(daemon.node_sluid, run_sluid, value, signed_ms))

    daemon._runs._remember("sRANHERE")  # a run this daemon started before
    _pass(daemon, [expired("sNEVERRAN", 1), expired("sRANHERE", 2)])
    reports = [decode(v)[1] for v in producer.values]
    assert [(r["run_sluid"], r["reason"], r["expiry_ms"]) for r in reports] == [
        ("sNEVERRAN", "CommandExpired", signed_ms + 300_000),
        ("sRANHERE", "CommandExpired", 0),
    ]


def test_a_lease_lapsed_while_the_daemon_itself_did_not_run_says_so(
        daemon: NodeDaemon, caplog: pytest.LogCaptureFixture) -> None:
    """After a SIGSTOP (or a starved host) the lapse is the daemon's own, not the broker's: the
    log said 'the broker is out of reach' (found 2026-12-07)."""
    daemon._lease = type(daemon._lease)(daemon.fence_s, time.monotonic() - 3 * daemon.fence_s)
    daemon._kept_at = time.monotonic() - 2 * daemon.fence_s  # the loop did not run meanwhile
    with caplog.at_level("ERROR"):
        daemon._keep_lease()
    assert "did not run for" in caplog.text and "out of reach" not in caplog.text
    caplog.clear()
    daemon._lease = type(daemon._lease)(daemon.fence_s, time.monotonic() - 3 * daemon.fence_s)
    with caplog.at_level("ERROR"):
        daemon._keep_lease()  # called just before: the loop ran, the heartbeats did not go
    assert "the broker is out of reach" in caplog.text


def _jwt_daemon(tmp_path: Path, exp_s: int) -> NodeDaemon:
    from agents.auth import jwt_token

    token = jwt_token.issue(b"k" * 32, "root", exp_s - 1_000, 1_000, node="n01")
    settings = Settings.from_env({"SLUICE_HOME": str(tmp_path), "SLUICE_TOPIC_PREFIX": "dmnu",
                                  "KAFKA_BOOTSTRAP": "127.0.0.1:1", "SLUICE_AUTH": "jwt",
                                  "SLUICE_JWT": token})
    node = NodeDaemon(settings, "n01", NodeResources(1, 512), state_dir=tmp_path / "n01",
                      proctrack="pgid")
    node._producer = FakeProducer(node._offset_file.path)  # type: ignore[assignment]
    node._outbox = Outbox(node._producer, RequestSigner(settings, node="n01"), node.topics, "n01")
    return node


def test_a_daemon_whose_token_expired_stops_heartbeating(tmp_path: Path) -> None:
    """Fault round 2026-12-07: node04's daemon ran on a node JWT (SLUICE_JWT) that expired;
    its heartbeats (no credential) kept it in service while each end report was refused
    (CredentialExpired): job 105 completed there, ended NODE_FAIL and was requeued to run
    again, and the node kept taking jobs. Silent, the node goes DOWN instead."""
    expired = _jwt_daemon(tmp_path / "a", int(time.time()) - 5)
    expired._heartbeat()
    expired._heartbeat()
    assert expired._producer.produced == []  # type: ignore[attr-defined]
    valid = _jwt_daemon(tmp_path / "b", int(time.time()) + 3600)
    valid._heartbeat()
    assert [topic for topic, _ in valid._producer.produced] == [  # type: ignore[attr-defined]
        valid.topics.heartbeats]


def test_a_daemon_refused_under_its_sluid_by_its_own_credential_starts_again_under_a_new_one(
    daemon: NodeDaemon, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Seen live: node01's daemon, its state directory older than node.credential, restarted
    # with a node JWT kept its munge SLUID; the shard refused the registration
    # (NodeIdentityChanged) while the heartbeats under that SLUID kept the node in service:
    # wedged for good. The shard now answers such a refusal with a RequestRegistration naming
    # the refused identity; the daemon whose credential it is mints a new SLUID.
    ensure_keys(daemon.settings)
    token = jwt_token.issue(b"k" * 32, "root", 600, int(time.time()), node="n01")
    daemon.settings = daemon.settings.with_(auth="jwt", jwt=token)  # jwt node n01
    registered: list[str] = []
    monkeypatch.setattr(daemon, "_register", lambda: registered.append("again"))
    ask = {"node_sluid": daemon.node_sluid, "reason": "refused", "issued_ms": 0,
           "holder": "n01"}
    _pass(daemon, [_signed(daemon, "RequestRegistration",
                           {**ask, "refused": "jwt node n05"}, 3)])
    assert not daemon._stopping and registered == []  # another identity's: a forged one
    _pass(daemon, [_signed(daemon, "RequestRegistration",
                           {**ask, "refused": "munge root@10.0.0.3"}, 4)])
    assert not daemon._stopping  # the registered (munge) daemon does nothing

    _pass(daemon, [_signed(daemon, "RequestRegistration", {**ask, "refused": "jwt node n01"},
                           5)])
    assert daemon._stopping and daemon._renew and registered == []  # run() returns True
    sluid = daemon.node_sluid
    daemon._forget_identity()
    renewed = NodeDaemon(daemon.settings, "n01", NodeResources(1, 512),
                         state_dir=daemon.state_dir, proctrack="pgid")
    assert renewed.node_sluid != sluid
    assert (daemon.state_dir / "node.credential").read_text() == "jwt node n01\n"


def test_a_refusal_does_not_renew_a_daemon_that_runs_jobs(
    daemon: NodeDaemon, monkeypatch: pytest.MonkeyPatch,
) -> None:
    ensure_keys(daemon.settings)
    monkeypatch.setattr(daemon._runs, "running", lambda: True)
    mine = {"node_sluid": daemon.node_sluid, "reason": "refused", "issued_ms": 0,
            "holder": "n01", "refused": "none"}  # this daemon's credential (auth none)
    _pass(daemon, [_signed(daemon, "RequestRegistration", mine, 3)])
    assert not daemon._stopping  # a node running jobs was registered: not for it
