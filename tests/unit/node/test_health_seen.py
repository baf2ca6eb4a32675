"""The health agent's memory of its table (agents/health_seen.py)."""

from __future__ import annotations

from agents.health_seen import MISSING, SeenNodes


def _entry(name: str, seen_ms: int, partition: int = 0) -> dict[str, object]:
    return {"name": name, "seen_ms": seen_ms, "partition": partition}


def test_a_node_not_read_yet_is_missing_until_its_table_entry_is_recorded() -> None:
    seen = SeenNodes(reload_every=5)
    assert seen.stored("n1") is MISSING
    seen.wrote("n1", None)  # read from the table: it has none
    assert seen.stored("n1") is None
    assert seen.heard("n1", 1_000) is None  # no stored entry: a first sight
    seen.wrote("n1", _entry("a", 1_000))
    assert seen.stored("n1") == _entry("a", 1_000)


def test_previous_time_is_the_newest_of_stored_and_heard() -> None:
    seen = SeenNodes(reload_every=5)
    seen.wrote("n1", _entry("a", 1_000))
    assert seen.heard("n1", 2_000) == 1_000
    assert seen.heard("n1", 3_000) == 2_000  # the heard one, newer than the stored
    assert seen.heard("n1", 2_500) == 3_000  # an older heartbeat does not move it back
    entries, partitions = seen.entries()
    assert entries == {"n1": ("a", 3.0)}
    assert partitions == {"n1": 0}


def test_entries_hold_only_nodes_with_a_stored_entry_and_say_unknown_partitions() -> None:
    seen = SeenNodes(reload_every=5)
    seen.wrote("n1", None)
    seen.heard("n1", 5_000)
    seen.wrote("n2", {"name": "b", "seen_ms": 4_000})  # an entry of an older worker
    entries, partitions = seen.entries()
    assert entries == {"n2": ("b", 4.0)}
    assert partitions == {"n2": -1}


def test_the_whole_table_is_read_at_the_first_check_then_every_nth() -> None:
    seen = SeenNodes(reload_every=3)
    assert [seen.reload_due() for _ in range(7)] == [True, False, False, True, False, False,
                                                      True]


def test_a_rebalance_forgets_the_stored_entries_and_reads_the_table_at_the_next_check() -> None:
    seen = SeenNodes(reload_every=10)
    assert seen.reload_due()
    seen.reload([("n1", _entry("a", 1_000, 3)), ("gone", None)])
    assert seen.stored("gone") is MISSING  # a None row is no entry
    seen.heard("n1", 2_000)
    assert not seen.reload_due()
    seen.forget()
    assert seen.stored("n1") is MISSING  # its partition may have moved: read again
    assert seen.entries() == ({}, {})
    assert seen.reload_due()
    seen.reload([("n1", _entry("a", 1_500, 3))])  # what the new owner's table says
    assert seen.entries() == ({"n1": ("a", 2.0)}, {"n1": 3})  # heard times of this process stay


def test_a_name_is_watched_under_its_newest_incarnation_only() -> None:
    """A daemon that lost its state registers again under a new SLUID with the same name:
    the old SLUID's last heartbeat stays in the compacted topic, and must not be watched."""
    seen = SeenNodes(reload_every=5)
    seen.reload([("old-a", _entry("a", 1_000, 2)), ("b", _entry("b", 50_000, 1)),
                 ("new-a", _entry("a", 40_000, 4))])
    entries, partitions = seen.entries()
    assert entries == {"new-a": ("a", 40.0), "b": ("b", 50.0)}
    assert partitions == {"new-a": 4, "b": 1}
    seen.heard("old-a", 60_000)  # the old incarnation beats again (two daemons, one name)
    assert set(seen.entries()[0]) == {"old-a", "b"}  # the one heard last is the node
