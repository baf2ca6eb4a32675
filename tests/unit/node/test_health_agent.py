"""The health agent off faust: its table (agents.health_store), its steps (agents.health's
HealthAgent, on a clock the test turns) and where its loop reads a partition from
(agents.health_loop)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agents.health import PROBE_NAME, HealthAgent
from agents.health_loop import OFFSET_BEGINNING, HealthLoop
from agents.health_store import HealthStore
from schemas import decode
from streams.kafka_native import TopicPartition
from streams.settings import Settings
from streams.topics import Topics

TIMEOUT = 10.0
START_MS = 1_000_000


def beat(node: str, time_ms: int, runs: list[str] | None = None) -> dict[str, Any]:
    return {"node_sluid": node, "name": f"name-{node}", "time_ms": time_ms, "runs": runs or []}


class Sent:
    def __init__(self) -> None:
        self.records: list[tuple[str, str, dict[str, Any]]] = []
        self.probes: list[int] = []

    def send(self, kind: str, name: str, record: dict[str, Any]) -> None:
        self.records.append((kind, name, record))

    def probe(self, partition: int, value: bytes) -> None:
        assert decode(value)[1]["name"] == PROBE_NAME
        self.probes.append(partition)

    def kinds(self) -> list[tuple[str, str]]:
        return [(kind, record["node_sluid"]) for kind, _, record in self.records]


agent_sent: dict[int, Sent] = {}


def agent_on(table: HealthStore, start_ms: int = START_MS) -> tuple[HealthAgent, Sent]:
    sent = Sent()
    agent = HealthAgent(table, TIMEOUT, start_ms / 1000, sent.send, sent.probe)
    agent.assigned([0, 1])
    agent_sent[id(agent)] = sent
    return agent, sent


def run(agent: HealthAgent, start_ms: int, end_ms: int, nodes: dict[str, int],
        skew_ms: dict[str, int] | None = None) -> None:
    """Heartbeats every 3 s from ``nodes`` (node → partition; a node's clock off by its
    ``skew_ms``) and a check every second; each check's probes come back through the topic
    100 ms later."""
    sent = agent_sent[id(agent)]
    skews = skew_ms or {}
    for now in range(start_ms, end_ms, 1000):
        if (now - start_ms) % 3000 == 0:
            for node, partition in nodes.items():
                agent.heard(beat(node, now + skews.get(node, 0)), partition, now)
        agent.check(now)
        for partition in sent.probes:
            probe = {"node_sluid": "", "name": PROBE_NAME, "time_ms": now, "runs": []}
            agent.heard(probe, partition, now + 100)
        sent.probes.clear()


def test_the_table_survives_a_reopen_with_its_positions_and_filters_by_partition(
    tmp_path: Path,
) -> None:
    table = HealthStore(tmp_path / "health.db")
    table.put("a", {"name": "n1", "seen_ms": 5, "partition": 0})
    table.put("b", {"name": "n2", "seen_ms": 6, "partition": 1})
    table.advance(0, 12)
    table.advance(0, 7)  # never backwards
    table.close()
    again = HealthStore(tmp_path / "health.db")
    assert again.get("a") == {"name": "n1", "seen_ms": 5, "partition": 0}
    assert [node for node, _ in again.items([1])] == ["b"]
    assert again.position(0) == 12
    assert again.position(1) is None
    held = HealthStore(tmp_path / "health.db")  # another process holds it: memory only
    assert held.get("a") is None
    held.put("c", {"name": "n3", "seen_ms": 1, "partition": 0})
    held.close()
    again.close()


def test_a_silent_node_is_reported_after_the_timeout_and_a_live_one_never(
    tmp_path: Path,
) -> None:
    agent, sent = agent_on(HealthStore(tmp_path / "h.db"))
    run(agent, START_MS, START_MS + 30_000, {"a": 0, "b": 1})
    assert sent.records == []
    last = START_MS + 27_000  # b's last heartbeat
    run(agent, START_MS + 30_000, START_MS + 50_000, {"a": 0})
    failed = [(when, r) for when, (kind, _, r) in enumerate(sent.records) if kind == "NodeFailed"]
    assert [r["node_sluid"] for _, r in failed] == ["b"]
    reported_ms = failed[0][1]["time_ms"]
    assert last + TIMEOUT * 1000 <= reported_ms <= last + TIMEOUT * 1000 + 2000
    # b comes back: NodeResponding with answers
    agent.heard(beat("b", START_MS + 50_000), 1, START_MS + 50_000)
    kind, _, record = sent.records[-1]
    assert (kind, record["node_sluid"], record["answers"]) == ("NodeResponding", "b", True)


def test_a_node_whose_clock_runs_behind_by_more_than_the_timeout_is_never_reported(
    tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    # its heartbeats all say they were sent 30 s ago; it went DOWN and came back every check
    agent, sent = agent_on(HealthStore(tmp_path / "h.db"))
    run(agent, START_MS, START_MS + 120_000, {"a": 0, "b": 1}, {"b": -30_000})
    assert sent.kinds() == []
    late = [r.getMessage() for r in caplog.records if "before it was read" in r.getMessage()]
    assert len(late) == 2  # once a minute, naming the node
    assert all("name-b (b): sent 30.0 s before" in line for line in late)


def test_a_node_whose_clock_runs_behind_is_still_reported_about_a_timeout_after_it_dies(
    tmp_path: Path,
) -> None:
    agent, sent = agent_on(HealthStore(tmp_path / "h.db"))
    run(agent, START_MS, START_MS + 30_000, {"a": 0, "b": 1}, {"b": -30_000})
    run(agent, START_MS + 30_000, START_MS + 50_000, {"a": 0})
    failed = [r for kind, _, r in sent.records if kind == "NodeFailed"]
    assert [r["node_sluid"] for r in failed] == ["b"]
    arrived = START_MS + 27_000  # b's last heartbeat came then
    assert arrived + TIMEOUT * 1000 - 1000 <= failed[0]["time_ms"] <= arrived + TIMEOUT * 1000


def test_a_restarted_agent_judges_nobody_before_a_full_timeout_of_its_own_sight(
    tmp_path: Path,
) -> None:
    table = HealthStore(tmp_path / "h.db")
    agent, _ = agent_on(table)
    run(agent, START_MS, START_MS + 12_000, {"a": 0, "b": 1})
    table.close()
    # the worker is away 60 s; b died meanwhile; a new agent on the same table starts
    restart_ms = START_MS + 72_000
    agent, sent = agent_on(HealthStore(tmp_path / "h.db"), restart_ms)
    run(agent, restart_ms, restart_ms + 9_000, {"a": 0})
    assert [k for k, _ in sent.kinds() if k == "NodeFailed"] == []
    run(agent, restart_ms + 9_000, restart_ms + 14_000, {"a": 0})
    assert ("NodeFailed", "b") in sent.kinds()
    assert ("NodeFailed", "a") not in sent.kinds()


def test_a_folded_heartbeat_only_fills_the_table(tmp_path: Path) -> None:
    table = HealthStore(tmp_path / "h.db")
    agent, sent = agent_on(table)
    agent.fold(beat("a", START_MS), 0, START_MS + 100)
    agent.fold(beat("a", START_MS + 60_000), 0, START_MS + 100)  # sent "later": capped
    assert table.get("a") == {"name": "name-a", "seen_ms": START_MS, "partition": 0}
    assert sent.records == []
    # a heartbeat a timeout after the stored one answers again (health_watch rule 4)
    agent.heard(beat("a", START_MS + 20_000), 0, START_MS + 20_000)
    assert sent.kinds() == [("NodeResponding", "a")]


class FakeReader:
    def __init__(self, committed: dict[int, int]) -> None:
        self._committed = committed
        self.assigned: list[TopicPartition] = []

    def committed(self, tps: list[TopicPartition], timeout: float) -> list[TopicPartition]:
        return [TopicPartition(tp.topic, tp.partition, self._committed.get(tp.partition, -1001))
                for tp in tps]

    def close(self) -> None:
        pass

    def incremental_assign(self, tps: list[TopicPartition]) -> None:
        self.assigned.extend(tps)


def test_a_partition_is_read_from_the_tables_position_and_folded_up_to_what_was_handled(
    tmp_path: Path,
) -> None:
    settings = Settings.from_env()
    topic = Topics(settings).heartbeats
    table = HealthStore(tmp_path / "h.db")
    table.advance(0, 40)
    table.advance(1, 70)
    loop = HealthLoop(settings, timeout_s=TIMEOUT, make_consumer=lambda: None,  # type: ignore
                      make_producer=lambda: None, make_table=lambda: table)  # type: ignore
    loop.agent, _ = agent_on(table)
    loop.agent.revoked([0, 1])
    loop._make_legacy = lambda: FakeReader({2: 30, 3: 35})  # type: ignore
    # 0: handled up to 55 by another owner; 1: handled up to 60 (behind the table);
    # 2: handled up to 30 by faust's group (before the loop existed); 3: never handled
    reader = FakeReader({0: 55, 1: 60})
    loop._on_assign(reader, [TopicPartition(topic, p) for p in (0, 1, 2, 4)])  # type: ignore
    assert [(tp.partition, tp.offset) for tp in reader.assigned] == [
        (0, 40), (1, 70), (2, OFFSET_BEGINNING), (4, OFFSET_BEGINNING)]
    assert loop._fold_until == {0: 55, 1: 60, 2: 30, 4: -1}
    assert loop.agent.owned == {0, 1, 2, 4}


def test_a_node_that_pauses_or_resumes_taking_commands_is_forwarded_once_each_way(
        tmp_path: Path) -> None:
    """A heartbeat's ``paused`` (its daemon's state directory is full or read-only) is
    forwarded to the node's shard when it changes, not with every heartbeat."""
    table = HealthStore(tmp_path / "health")
    agent, sent = agent_on(table)
    now = START_MS
    agent.heard(beat("sN", now), 0, now)
    first = len(sent.records)
    for _ in range(3):  # paused for three heartbeats: forwarded once
        now += 3000
        agent.heard({**beat("sN", now), "paused": "no space left on device"}, 0, now)
    pauses = [r for kind, _, r in sent.records[first:] if kind == "NodeResponding"]
    assert [r["paused"] for r in pauses] == ["no space left on device"]
    now += 3000
    agent.heard(beat("sN", now), 0, now)  # an older daemon's heartbeat has no field: ""
    ends = [r for kind, _, r in sent.records[first:] if kind == "NodeResponding"]
    assert [r["paused"] for r in ends] == ["no space left on device", ""]
    table.close()


def test_an_older_incarnation_of_a_name_is_judged_once_after_a_new_one_beats(
    tmp_path: Path,
) -> None:
    """A daemon restarted with another credential mints a new SLUID (agents/node/identity.py)
    and the shard refuses its registration while the old SLUID's node is in service
    (NodeIdentityChanged). The agent watched the name under the new SLUID only, so the old
    one, silent, was never reported: node01 stayed in service for good in a fault round. It is
    reported once, a timeout after its last heartbeat, then forgotten."""
    agent, sent = agent_on(HealthStore(tmp_path / "h.db"))

    def beats(start_ms: int, end_ms: int, nodes: dict[str, int]) -> None:
        for now in range(start_ms, end_ms, 1000):
            if (now - start_ms) % 3000 == 0:
                for node, partition in nodes.items():
                    name = "n1" if node in ("old", "new") else node
                    agent.heard({**beat(node, now), "name": name}, partition, now)
            agent.check(now)
            for partition in sent.probes:
                probe = {"node_sluid": "", "name": PROBE_NAME, "time_ms": now, "runs": []}
                agent.heard(probe, partition, now + 100)
            sent.probes.clear()

    beats(START_MS, START_MS + 30_000, {"old": 0, "b": 1})
    last = START_MS + 27_000
    beats(START_MS + 30_000, START_MS + 150_000, {"new": 0, "b": 1})
    failed = [r for kind, _, r in sent.records if kind == "NodeFailed"]
    assert [r["node_sluid"] for r in failed] == ["old"]
    assert last + TIMEOUT * 1000 <= failed[0]["time_ms"] <= last + TIMEOUT * 1000 + 2000
    assert failed[0]["silent_nodes"] == 1
