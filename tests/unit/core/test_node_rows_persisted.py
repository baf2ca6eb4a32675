"""A name registered under a new node SLUID: the older node's row is persisted as superseded,
and a store where it was not (an earlier version) is healed when the shard restores it."""

from __future__ import annotations

from dataclasses import replace

from scheduler import (
    NodeStateChanged,
    RegisterNode,
    as_record,
    node_rows_changed,
    restore_state,
    state_meta,
)
from tests.unit.core.gwt import M, given, node_sluid, registered, sluid


def _reregistered() -> tuple[str, object]:
    new = sluid(700)
    outcome = given(registered("n1"), registered("n2")).when(
        RegisterNode(node_sluid=new, name="n1", cpus=1, mem_mb=0)
    )
    return new, outcome


def test_the_rows_of_a_batch_include_the_older_node_of_a_name_registered_again() -> None:
    new, outcome = _reregistered()
    state = outcome.evolved()  # type: ignore[attr-defined]
    facts = [as_record(f) for f in outcome.facts]  # type: ignore[attr-defined]
    rows = node_rows_changed(state, facts)
    assert node_sluid("n1") in rows and new in rows
    assert node_sluid("n2") not in rows  # not named, not of that name
    assert state.nodes[node_sluid("n1")].superseded


def test_rows_of_node_facts_without_a_registration_are_the_named_ones() -> None:
    state = given(registered("n1"), registered("n2")).state
    down = NodeStateChanged(**M, node_sluid=node_sluid("n2"), name="n2", state="DOWN")
    assert node_rows_changed(state, [as_record(down)]) == [node_sluid("n2")]


def test_a_store_with_two_live_nodes_of_one_name_restores_with_the_newest_registration() -> None:
    new, outcome = _reregistered()
    state = outcome.evolved()  # type: ignore[attr-defined]
    old = node_sluid("n1")
    # what an earlier version persisted: the older row without its superseded flag
    rows = dict(state.nodes)
    rows[old] = replace(rows[old], superseded=False, registered_ms=1)
    rows[new] = replace(rows[new], registered_ms=2)
    restored = restore_state(state_meta(state), dict(state.jobs), rows)
    assert restored.nodes[old].superseded and not restored.nodes[new].superseded
    assert restored.node_sluid_by_name("n1") == new
    assert sorted(restored.index.names) == ["n1", "n2"]  # a pass can index them again
    assert not rows[old].superseded  # the caller's rows are not changed
