"""What the shell depends on: fact meta, replay, records on the wire, persisted state."""

from __future__ import annotations

import pickle

from scheduler import (
    RECORD_TYPES,
    CloseCycle,
    JobSpec,
    LaunchRun,
    RegisterNode,
    ReportJobExit,
    ShardState,
    SubmitJob,
    as_record,
    decide,
    evolve,
    from_record,
    initial_state,
    node_commands,
    record_fields,
    restore_state,
    schedule,
    state_meta,
)
from scheduler.records import Fact, JobStarted
from schemas.sluid import decode, parse_sluid
from tests.unit.core.gwt import T0, node_sluid, sluid, spec


def _drive(state: ShardState) -> tuple[ShardState, list[Fact]]:
    """A small busy history: 3 nodes, 4 jobs, a pass, an exit, a cycle."""
    log: list[Fact] = []

    def apply(facts: list[Fact]) -> None:
        nonlocal state
        for fact in facts:
            state = evolve(state, fact)
            log.append(fact)

    for i in range(3):
        apply(
            decide(
                state,
                RegisterNode(node_sluid=node_sluid(f"n{i}"), name=f"n{i}", cpus=2, mem_mb=100),
                T0,
            )
        )
    for j in range(4):
        apply(
            decide(
                state,
                SubmitJob(job_sluid=sluid(j + 1), spec=spec(nodes_min=1 + j % 2, time_limit_s=60)),
                T0 + j,
            )
        )
    apply(schedule(state, T0 + 10))
    first = next(f for f in log if isinstance(f, JobStarted))
    apply(
        decide(
            state,
            ReportJobExit(
                job_sluid=first.job_sluid,
                run_sluid=first.run_sluid,
                node_sluid=first.node_sluids[0],
                node_name=first.nodes[0],
                exit_code=0,
            ),
            T0 + 20,
        )
    )
    apply(schedule(state, T0 + 30))
    apply(decide(state, CloseCycle(inbox_partition=0, inbox_from=0, inbox_to=9), T0 + 31))
    return state, log


def _fingerprint(state: ShardState) -> tuple[object, ...]:
    index = state.index
    return (
        state_meta(state),
        dict(state.jobs),
        dict(state.nodes),
        index.names,
        index.free_cpus.tolist(),
        index.njobs.tolist(),
    )


def test_facts_carry_gap_free_sequence_numbers_from_one_and_increasing_sluids() -> None:
    _, log = _drive(initial_state("s0", 9))
    assert [f.shard_seq for f in log] == list(range(1, len(log) + 1))
    sluids = [parse_sluid(f.event_sluid) for f in log]
    assert sluids == sorted(sluids) and len(set(sluids)) == len(sluids)
    assert {decode(s).cluster_id for s in sluids} == {9}
    assert all(f.shard == "s0" for f in log)


def test_time_never_goes_backwards_in_facts() -> None:
    state, _ = _drive(initial_state("s0", 9))
    facts = decide(state, SubmitJob(job_sluid=sluid(50), spec=spec()), T0 - 5_000)
    assert facts[0].time_ms == state.now_ms


def test_replaying_the_ledger_rebuilds_the_same_state() -> None:
    state, log = _drive(initial_state("s0", 9))
    replayed = initial_state("s0", 9)
    for fact in log:
        replayed = evolve(replayed, fact)
    assert _fingerprint(replayed) == _fingerprint(state)


def test_re_deciding_the_same_inputs_gives_identical_facts() -> None:
    _, first = _drive(initial_state("s0", 9))
    _, second = _drive(initial_state("s0", 9))
    assert [as_record(f) for f in first] == [as_record(f) for f in second]


def test_restored_state_equals_the_live_state_and_decides_the_same() -> None:
    state, _ = _drive(initial_state("s0", 9))
    meta = pickle.loads(pickle.dumps(state_meta(state)))
    restored = restore_state(meta, pickle.loads(pickle.dumps(dict(state.jobs))), dict(state.nodes))
    assert _fingerprint(restored) == _fingerprint(state)
    request = SubmitJob(job_sluid=sluid(77), spec=spec(nodes_min=2))
    assert decide(restored, request, T0 + 40) == decide(state, request, T0 + 40)
    assert schedule(restored, T0 + 90_000) == schedule(state, T0 + 90_000)


def test_every_record_round_trips_through_its_wire_dict() -> None:
    _, log = _drive(initial_state("s0", 9))
    state = initial_state("s0", 9)
    for fact in log:
        state = evolve(state, fact)
        name, record = as_record(fact)
        assert name == type(fact).__name__
        assert from_record(name, record) == fact
        assert from_record("sluice." + name, record) == fact
        for command in node_commands(state, fact):
            cname, crecord = as_record(command)
            assert from_record(cname, crecord) == command
    full = JobSpec(user="u", command=("a", "b"), env={"K": "V"})
    name, record = as_record(SubmitJob(job_sluid=sluid(1), spec=full))
    assert record["spec"]["command"] == ["a", "b"] and record["spec"]["env"] == {"K": "V"}
    assert from_record(name, record).spec == full


def test_from_record_fills_defaults_for_missing_fields() -> None:
    request = from_record("SubmitJob", {"job_sluid": sluid(1), "spec": {"user": "u"}})
    assert request.spec == JobSpec(user="u")


def test_record_types_cover_every_schema_and_close_cycle() -> None:
    from schemas.catalog import CATALOG

    assert set(RECORD_TYPES) == set(CATALOG.names) | {"CloseCycle"}


def test_launch_commands_put_the_batch_host_first() -> None:
    state, log = _drive(initial_state("s0", 9))
    two_node = next(f for f in log if isinstance(f, JobStarted) and len(f.nodes) == 2)
    commands = [c for c in node_commands(state, two_node) if isinstance(c, LaunchRun)]
    assert [c.node_name for c in commands] == list(two_node.nodes)
    assert [c.batch_host for c in commands] == [True, False]
    assert all(c.command == ("true",) for c in commands)


def test_every_dataclass_has_its_avro_schemas_fields_in_order() -> None:
    import json
    from pathlib import Path

    schemas = Path(__file__).resolve().parents[3] / "schemas"
    checked = 0
    for name, cls in RECORD_TYPES.items():
        path = schemas / f"{name}.avsc"
        if name == "CloseCycle":  # never on the wire
            assert not path.exists()
            continue
        wire = [f["name"] for f in json.loads(path.read_text())["fields"]]
        assert list(record_fields(cls)) == wire, name
        checked += 1
    assert checked == len(RECORD_TYPES) - 1


def test_every_fact_and_command_encodes_with_the_wire_codec() -> None:
    from schemas.codec import decode, encode

    state, log = _drive(initial_state("s0", 9))
    replay = initial_state("s0", 9)
    for fact in log:
        replay = evolve(replay, fact)
        for obj in (fact, *node_commands(replay, fact)):
            name, record = as_record(obj)
            decoded_name, decoded = decode(encode(name, record))
            assert decoded_name.removeprefix("sluice.") == name
            assert from_record(decoded_name, decoded) == obj
    del state
