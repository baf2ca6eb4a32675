"""The health agent's judgement (agents.health_watch), on a clock the test turns."""

from __future__ import annotations

import pytest

from agents.health_watch import (
    DEFAULT_TIMEOUT_S,
    HealthWatch,
    Silent,
    heartbeat_interval_s,
    next_beat_in_s,
    node_timeout_s,
    store_due,
)

TIMEOUT = 10.0
START = 1_000.0


class Cluster:
    """``count`` nodes heartbeating into one watch; ``beat`` delivers chosen ones."""

    def __init__(self, count: int) -> None:
        self.watch = HealthWatch(TIMEOUT, started_s=START)
        self.seen: dict[str, tuple[str, float]] = {}
        self.names = [f"n{i}" for i in range(1, count + 1)]
        self.answered: list[str] = []

    def beat(self, now: float, *names: str) -> None:
        for name in names or self.names:
            node = f"sluid-{name}"
            previous = self.seen.get(node)
            if self.watch.heard(node, previous[1] if previous else None, now):
                self.answered.append(name)
            self.seen[node] = (name, now)

    def run(self, start: float, end: float, *alive: str, beat_every: float = 2.0) -> list[str]:
        """Tick every 0.5 s from ``start`` to ``end``; ``alive`` nodes beat; the reported names."""
        return [s.name for s in self.reports(start, end, *alive, beat_every=beat_every)]

    def reports(self, start: float, end: float, *alive: str,
                beat_every: float = 2.0) -> list[Silent]:
        """As :meth:`run`, the reports themselves."""
        reported: list[Silent] = []
        now, next_beat = start, start
        while now <= end:
            if now >= next_beat:
                self.beat(now, *alive) if alive else None
                next_beat = now + beat_every
            reported += self.watch.check(self.seen, now).report
            now += 0.5
        return reported


def test_a_node_silent_for_the_timeout_is_reported_with_the_silent_and_watched_counts() -> None:
    cluster = Cluster(4)
    cluster.run(START, START + 20, *cluster.names)
    reported = cluster.run(START + 20.5, START + 40, "n1", "n2", "n3")
    assert reported == ["n4"]
    result = cluster.watch.check(cluster.seen, START + 40.5)
    assert (result.silent, result.watched) == (1, 4)


def test_nobody_is_judged_before_one_timeout_after_the_start() -> None:
    cluster = Cluster(3)
    cluster.seen = {f"sluid-{n}": (n, START - 300) for n in cluster.names}  # an old table
    assert cluster.run(START, START + TIMEOUT - 1, *cluster.names) == []


def test_a_node_reported_again_only_every_report_interval() -> None:
    cluster = Cluster(3)
    cluster.run(START, START + 12, *cluster.names)
    reported = cluster.run(START + 12.5, START + 60, "n1", "n2")
    assert reported == ["n3", "n3"]  # once at the deadline, once 30 s later


def test_after_its_own_stall_the_watch_waits_a_full_timeout_of_fresh_heartbeats() -> None:
    cluster = Cluster(8)
    cluster.run(START, START + 20, *cluster.names)
    # the worker is SIGSTOPped for 25 s: no ticks, no heartbeats consumed
    resumed = START + 45
    assert cluster.watch.check(cluster.seen, resumed).stalled_s == pytest.approx(25, abs=0.6)
    # the backlog arrives a moment later; nobody was declared dead
    assert cluster.run(resumed + 0.5, resumed + 30, *cluster.names) == []


def test_a_real_death_during_the_grace_is_still_reported_one_timeout_after_it() -> None:
    cluster = Cluster(8)
    cluster.run(START, START + 20, *cluster.names)
    resumed = START + 45
    cluster.watch.check(cluster.seen, resumed)
    reported = cluster.run(resumed + 0.5, resumed + 30, *cluster.names[:-1])
    assert reported == ["n8"]


def test_no_heartbeat_from_anyone_is_a_blind_observer_not_a_dead_cluster() -> None:
    cluster = Cluster(8)
    cluster.run(START, START + 20, *cluster.names)
    # broker down 30 s: the timer runs, nothing arrives
    assert cluster.run(START + 20.5, START + 50) == []
    assert cluster.watch.check(cluster.seen, START + 50.5).blind
    # it comes back: the judgement counts from the first fresh heartbeat
    assert cluster.run(START + 51, START + 80, *cluster.names) == []


def test_after_a_blind_spell_a_node_that_stays_silent_is_reported_a_timeout_later() -> None:
    cluster = Cluster(8)
    cluster.run(START, START + 20, *cluster.names)
    cluster.run(START + 20.5, START + 50)
    reported = cluster.run(START + 51, START + 80, *cluster.names[:-1])
    assert reported == ["n8"]


def test_with_its_probe_coming_back_every_node_silent_is_judged_not_blindness() -> None:
    cluster = Cluster(4)
    cluster.watch.probe_heard(START)
    cluster.run(START, START + 20, *cluster.names)
    reported: list[str] = []
    now = START + 20.5
    while now <= START + 40:  # every node dies; the probe still comes back
        cluster.watch.probe_heard(now)
        result = cluster.watch.check(cluster.seen, now)
        assert not result.blind
        reported += [s.name for s in result.report]
        now += 0.5
    assert sorted(reported) == cluster.names
    assert (result.silent, result.watched) == (4, 4)


def test_without_its_probe_and_heartbeats_the_watch_is_blind_even_for_one_node() -> None:
    cluster = Cluster(1)
    cluster.watch.probe_heard(START)
    cluster.run(START, START + 20, "n1")
    assert cluster.run(START + 20.5, START + 40) == []  # broker down: nothing comes through
    assert cluster.watch.check(cluster.seen, START + 40.5).blind


def test_a_single_watched_node_that_dies_is_reported_not_mistaken_for_blindness() -> None:
    cluster = Cluster(1)
    cluster.run(START, START + 20, "n1")
    assert cluster.run(START + 20.5, START + 40) == ["n1"]


def test_a_mass_silence_is_reported_with_its_counts_for_the_core_to_weigh() -> None:
    cluster = Cluster(8)
    cluster.run(START, START + 20, *cluster.names)
    cluster.run(START + 20.5, START + 31, "n1", "n2", "n3")
    result = cluster.watch.check(cluster.seen, START + 31.5)
    assert (result.silent, result.watched) == (5, 8)


def test_nodes_falling_silent_a_moment_apart_count_as_silent_at_once() -> None:
    cluster = Cluster(4)
    cluster.run(START, START + 20, *cluster.names)
    cluster.run(START + 20.5, START + 22.5, "n2", "n3", "n4")  # n1 dies first
    cluster.run(START + 23, START + 29.5, "n4")  # n2 and n3 two seconds later
    result = cluster.watch.check(cluster.seen, START + 30)
    assert [s.name for s in result.report] == ["n1"]
    assert (result.silent, result.watched) == (3, 4)


def test_nodes_dead_long_before_are_not_part_of_a_later_death() -> None:
    """Four nodes died a quarter of an hour ago (or are old incarnations of nodes whose
    daemons started again under new SLUIDs); one of the four live ones dies now. It fell
    silent alone, of the four nodes alive then: a failure, not a partition."""
    cluster = Cluster(8)
    cluster.run(START, START + 20, *cluster.names)
    cluster.run(START + 20.5, START + 900, "n1", "n2", "n3", "n4")  # n5-n8 gone for good
    reports = [s for s in cluster.reports(START + 900.5, START + 915, "n1", "n2", "n3")
               if s.name == "n4"]
    assert [(s.silent_nodes, s.watched_nodes) for s in reports] == [(1, 4)]


def test_a_partition_that_lasts_is_reported_again_as_the_same_partition() -> None:
    """Five of eight nodes fall silent together and stay silent: every report, the first and
    those every 30 s after, says five of eight, so the core keeps suspecting a partition."""
    cluster = Cluster(8)
    cluster.run(START, START + 20, *cluster.names)
    reports = cluster.reports(START + 20.5, START + 200, "n1", "n2", "n3")
    assert sorted({s.name for s in reports}) == ["n4", "n5", "n6", "n7", "n8"]
    assert len(reports) == 5 * 6  # at the deadline, then every 30 s until 200 s
    assert {(s.silent_nodes, s.watched_nodes) for s in reports} == {(5, 8)}


def test_a_failover_judges_inherited_entries_only_a_timeout_after_taking_them() -> None:
    cluster = Cluster(4)
    cluster.run(START, START + 20, "n1", "n2")
    # partitions of a dead worker arrive with their old heartbeat times
    inherited = {"sluid-n3": ("n3", START - 100), "sluid-n4": ("n4", START - 100)}
    cluster.seen.update(inherited)
    first = cluster.watch.check(cluster.seen, START + 20.5)
    assert first.report == ()
    assert cluster.run(START + 21, START + 40, *cluster.names) == []


def test_a_heartbeat_after_a_report_or_a_long_gap_asks_for_node_responding() -> None:
    cluster = Cluster(3)
    cluster.run(START, START + 12, *cluster.names)
    cluster.run(START + 12.5, START + 30, "n1", "n2")  # n3 reported
    cluster.answered.clear()
    cluster.beat(START + 30.5, "n3")
    assert cluster.answered == ["n3"]
    cluster.answered.clear()
    cluster.beat(START + 31, "n1")  # a normal beat
    assert cluster.answered == []


def _backlog_in_bursts(*, use_horizon: bool) -> list[str]:
    """Every 4 s the consumer gets 4 s of backlog at once, records 20-24 s old."""
    watch = HealthWatch(TIMEOUT, started_s=START)
    names = ["n1", "n2", "n3"]
    seen: dict[str, tuple[str, float]] = {}
    partitions = {f"sluid-{n}": 0 for n in names} if use_horizon else None
    reported: list[str] = []
    now = START
    while now <= START + 120:
        if int(now * 2) % 8 == 0:
            for sent in range(int(now) - 23, int(now) - 19):
                watch.probe_heard(now, 0, sent)
                for n in names:
                    previous = seen.get(f"sluid-{n}")
                    watch.heard(f"sluid-{n}", previous[1] if previous else None, now, sent)
                    seen[f"sluid-{n}"] = (n, sent)
        reported += [s.name for s in watch.check(seen, now, partitions).report]
        now += 0.5
    return reported


def test_a_lagging_consumer_reading_a_backlog_in_bursts_sees_no_false_silence() -> None:
    assert _backlog_in_bursts(use_horizon=True) == []
    assert _backlog_in_bursts(use_horizon=False)  # judged by "now" the lag looks like silence


def test_a_timeout_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        HealthWatch(0, started_s=START)


def test_the_node_timeout_comes_from_the_environment_and_a_bad_one_is_named(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.delenv("SLUICE_NODE_TIMEOUT", raising=False)
    assert node_timeout_s() == DEFAULT_TIMEOUT_S == 10.0
    monkeypatch.setenv("SLUICE_NODE_TIMEOUT", "60")
    assert node_timeout_s() == 60.0
    assert heartbeat_interval_s(node_timeout_s()) == 20.0  # slurmctld's SlurmdTimeout / 3
    for bad in ("-1", "0", "inf", "ten"):
        monkeypatch.setenv("SLUICE_NODE_TIMEOUT", bad)
        assert node_timeout_s() == DEFAULT_TIMEOUT_S
    assert "SLUICE_NODE_TIMEOUT='ten' is not a positive number" in caplog.text


def test_a_heartbeat_is_stored_when_new_changed_or_half_a_timeout_newer() -> None:
    stored = {"name": "n1", "seen_ms": 10_000, "partition": 3}
    assert store_due(None, "n1", 3, 10_000, 5_000)
    assert not store_due(stored, "n1", 3, 14_999, 5_000)
    assert store_due(stored, "n1", 3, 15_000, 5_000)
    assert store_due(stored, "n1-renamed", 3, 11_000, 5_000)
    assert store_due(stored, "n1", 4, 11_000, 5_000)


def test_a_backlog_of_heartbeats_alone_moves_the_horizon_as_probes_would() -> None:
    """The lagging consumer of the burst test, with no probe at all: each heartbeat read from
    partition 0 says everything sent there before it has been read."""
    watch = HealthWatch(TIMEOUT, started_s=START)
    seen: dict[str, tuple[str, float]] = {}
    partitions = {"sluid-n1": 0, "sluid-n2": 0}
    reported: list[str] = []
    now = START
    while now <= START + 120:
        if int(now * 2) % 8 == 0:
            for sent in range(int(now) - 23, int(now) - 19):
                for n in ("n1", "n2"):
                    previous = seen.get(f"sluid-{n}")
                    watch.heard(f"sluid-{n}", previous[1] if previous else None, now, sent, 0)
                    seen[f"sluid-{n}"] = (n, sent)
        reported += [s.name for s in watch.check(seen, now, partitions).report]
        now += 0.5
    assert reported == []
    assert watch.horizon[0] == START + 120 - 20  # the newest heartbeat read, sent 20 s ago


def test_a_dead_node_is_still_found_when_only_its_neighbours_heartbeat() -> None:
    """n2 dies at START + 20; n1 on the same partition goes on: the partition's horizon moves
    with n1's heartbeats, and n2 is reported one timeout after its last one."""
    watch = HealthWatch(TIMEOUT, started_s=START)
    seen: dict[str, tuple[str, float]] = {}
    partitions = {"sluid-n1": 0, "sluid-n2": 0}
    reported: list[tuple[str, float]] = []
    now = START
    while now <= START + 45:
        for n in ("n1",) if now > START + 20 else ("n1", "n2"):
            previous = seen.get(f"sluid-{n}")
            watch.heard(f"sluid-{n}", previous[1] if previous else None, now, now, 0)
            seen[f"sluid-{n}"] = (n, now)
        reported += [(s.name, now) for s in watch.check(seen, now, partitions).report]
        now += 2.0
    assert reported == [("n2", START + 20 + TIMEOUT)]


def test_only_quiet_partitions_with_watched_nodes_are_probed_and_one_when_all_is_quiet() -> None:
    watch = HealthWatch(TIMEOUT, started_s=START)
    owned, watched = [5, 0, 1, 2], [0, 1, 1, 2]
    assert watch.probe_partitions(owned, watched, START) == [0, 1, 2]  # 5 holds no watched node
    watch.heard("sluid-a", None, START + 1, START + 1, 1)
    assert watch.probe_partitions(owned, watched, START + 1) == [0, 2]  # 1 brought a heartbeat
    assert watch.probe_partitions(owned, watched, START + 1) == [0, 1, 2]  # ...once: quiet again
    for p in (0, 1, 2):
        watch.heard(f"sluid-{p}", None, START + 2, START + 2, p)
    assert watch.probe_partitions(owned, watched, START + 2) == []  # all heard just now
    quarter = watch.blind_s / 2
    assert watch.probe_partitions([], watched, START + 2 + quarter) == []
    # nothing came through for half of blind_s: one probe, the lowest, each check until one does
    assert watch.probe_partitions(owned, [], START + 2 + quarter - 0.01) == []
    assert watch.probe_partitions(owned, [], START + 2 + quarter) == [0]
    assert watch.probe_partitions(owned, [], START + 2 + quarter + 1) == [0]
    watch.probe_heard(START + 2 + quarter + 1.2, 0, START + 2 + quarter + 1)
    assert watch.probe_partitions(owned, [], START + 2 + quarter + 2) == []


def test_nodes_heartbeat_together_on_the_interval_s_boundaries_never_later() -> None:
    interval = 10.0 / 3
    for start in (1_800_000_000.0, 1_800_000_001.7, 1_800_000_003.3333):
        for node_lag in (0.0, 0.004, 1.9):  # nodes started at different moments
            beat = start + node_lag
            gaps = []
            for latency in (0.001, 0.003, 0.0005, 0.002, 0.001):  # the loop wakes a bit late
                wait = next_beat_in_s(beat, interval)
                assert 0 < wait <= interval  # never longer than the interval
                due = beat + wait
                assert abs(due / interval - round(due / interval)) < 1e-6  # on a boundary
                gaps.append(due + latency - beat)
                beat = due + latency
            assert all(gap <= interval + 0.003 for gap in gaps)  # as before: the interval
            assert all(gap >= interval - 0.003 for gap in gaps[1:])  # and no sooner after
    assert next_beat_in_s(5.0, 0.0) == 0.0


def test_heartbeats_in_rounds_need_no_probe_but_a_silent_node_is_judged_as_soon_as_before() -> None:
    """Six nodes on three partitions heartbeat together every third of a timeout; the agent
    checks every second, probes what ``quiet_partitions`` names, and its probes come back at
    once. While all live, at most one probe a round; node n4 (partition 1, with n1) dies after
    its beat at ``START + 20``: its partition is probed from half a timeout on (when no
    heartbeat of n1 came through it since the last check), and n4 is reported within a check of
    the timeout."""
    watch = HealthWatch(TIMEOUT, started_s=START)
    interval = heartbeat_interval_s(TIMEOUT)
    names = [f"n{i}" for i in range(6)]
    partitions = {f"sluid-{n}": i % 3 for i, n in enumerate(names)}
    seen: dict[str, tuple[str, float]] = {}
    probes: list[tuple[float, list[int]]] = []
    reported: list[tuple[str, float]] = []
    next_beat, now = START, START
    while now <= START + 40:
        if now >= next_beat:
            for n in names if now <= START + 20 else [n for n in names if n != "n4"]:
                node = f"sluid-{n}"
                previous = seen.get(node)
                watch.heard(node, previous[1] if previous else None, now, now, partitions[node])
                seen[node] = (n, now)
            next_beat = now + next_beat_in_s(now, interval)
        result = watch.check(seen, now, partitions)
        assert not result.blind  # the round's heartbeats, or a probe, always came in time
        reported += [(s.name, now) for s in result.report]
        sent = watch.probe_partitions([0, 1, 2], watch.quiet_partitions(seen, now, partitions),
                                      now)
        for p in sent:
            watch.probe_heard(now, p, now)
        probes.append((now, sent))
        now = round(now + 0.25, 2)
    alive = [sent for at, sent in probes if at < START + 20 + TIMEOUT / 2]
    assert all(sent in ([0], []) for sent in alive)
    rounds = (20 + TIMEOUT / 2) / interval
    assert 0 < sum(sent == [0] for sent in alive) <= rounds + 1  # at most one a round
    assert any(sent == [1] for at, sent in probes if at > START + 20 + TIMEOUT / 2)
    died = seen["sluid-n4"][1]
    assert [name for name, _at in reported] == ["n4"]
    assert died + TIMEOUT <= reported[0][1] <= died + TIMEOUT + 1.0


def test_a_quiet_partition_is_one_whose_watched_node_was_not_heard_for_half_a_timeout() -> None:
    watch = HealthWatch(TIMEOUT, started_s=START)
    seen = {"a": ("a", START), "b": ("b", START + 4), "c": ("c", START + 1)}
    partitions = {"a": 2, "b": 0, "c": 2}
    assert watch.quiet_partitions(seen, START + 4.9, partitions) == []
    assert watch.quiet_partitions(seen, START + 5.0, partitions) == [2]
    assert watch.quiet_partitions(seen, START + 9.0, partitions) == [0, 2]
    assert watch.quiet_partitions(seen, START + 9.0, {"a": 1}) == [1]  # no partition: skipped
