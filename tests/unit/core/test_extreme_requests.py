"""Properties (hypothesis): requests at the extremes of every field never make the core raise,
and every fact the core produces encodes with its Avro schema.

Requests are generated from the request schemas themselves, field by field: every ``int`` and
``long`` from its type's bounds (and 0, ±1, 3000000000, -t 99999999999999999 in seconds…),
every string from the empty one, unicode, NUL, numbers as text, 70,000 characters and the
SLUIDs and names the state knows, every array and map with such items, ``UpdateJob.changes``
with every JobSpec field. They are decided against a state with nodes, a pending and a running
job, folded, and a scheduling pass runs; then the same requests run as one ``run_cycle``, which
must report no failure (a failure is an ``InternalError`` refusal: a bug this test catches).
"""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from scheduler import (
    JobSpec,
    ShardState,
    SubmitJob,
    Timed,
    UpdateJob,
    as_record,
    decide,
    evolve,
    from_record,
    initial_state,
    node_commands,
    run_cycle,
    schedule,
)
from scheduler.cycle import InboxRange
from scheduler.records import JobRejected, JobTestAnswered, RequestDenied
from schemas import encode
from schemas.catalog import CATALOG
from tests.unit.core.gwt import CLUSTER, SHARD, T0, node_sluid, nodes, queued, restamp, sluid, spec

INT = (-(2**31), 2**31 - 1)
LONG = (-(2**63), 2**63 - 1)
J_PENDING, J_RUNNING = sluid(1), sluid(2)
KNOWN_TEXT = [J_PENDING, J_RUNNING, sluid(9), node_sluid("n1"), "n1", "n2", "alice", "main"]
EXTREME_TEXT = [
    "", "x", "ü€😀\u200b", "\x00", " ", "-1", "0", "3000000000", "99999999999999999",
    str(2**63), "[]", '["a"]', "{}", '{"A": "1"}', "yes", "no", "expedite", "1-2", "0-99999999",
    "afterok:1", "gpu:h100:2", "a" * 70_000, "é" * 5000,
]
SPEC_FIELDS = [f.name for f in fields(JobSpec)]
REQUESTS = ["SubmitJob", "CancelJob", "HoldJob", "ReleaseJob", "UpdateJob", "RegisterNode",
            "ReportJobExit", "ReportProlog", "ReportEpilog", "DrainNode", "ResumeNode",
            "RequeueJob", "ApplyConfig", "Tick", "NodeFailed", "TestSubmitJob"]


def _ints(low: int, high: int) -> st.SearchStrategy[int]:
    edges = [v for v in (low, high, 0, 1, -1, 2, 3_000_000_000, 99_999_999_999_999_999 * 60,
                         86_400, 2**31 - 1, 2**31, -(2**31)) if low <= v <= high]
    return st.one_of(st.sampled_from(edges), st.integers(low, high))


TEXT = st.one_of(st.sampled_from(EXTREME_TEXT + KNOWN_TEXT), st.text(max_size=8))


def _strategy(avro_type: Any, field_name: str = "") -> st.SearchStrategy[Any]:
    """Values for one Avro type (the schemas' types: primitives, arrays, maps, records)."""
    if isinstance(avro_type, list):
        return st.one_of(*[_strategy(t, field_name) for t in avro_type])
    if isinstance(avro_type, dict):
        kind = avro_type["type"]
        if kind == "array":
            return st.lists(_strategy(avro_type["items"]), max_size=4)
        if kind == "map":
            keys = st.sampled_from([*SPEC_FIELDS, "bogus"]) if field_name == "changes" else TEXT
            return st.dictionaries(keys, TEXT, max_size=4)
        if kind == "record":
            return st.fixed_dictionaries(
                {f["name"]: _strategy(f["type"], f["name"]) for f in avro_type["fields"]})
        return _strategy(kind, field_name)
    simple: dict[str, st.SearchStrategy[Any]] = {
        "int": _ints(*INT), "long": _ints(*LONG), "string": TEXT, "boolean": st.booleans(),
        "null": st.none(), "bytes": st.binary(max_size=8),
    }
    return simple[avro_type.removeprefix("sluice.")]


def _fields(name: str) -> dict[str, Any]:
    return {f["name"]: f["type"] for f in CATALOG.entry(name).parsed["fields"]}


def _overrides(types: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """One to three fields of a record set to extreme values of their types (a single field
    half of the time, so the others stay valid and the value reaches the scheduling pass)."""
    field = st.sampled_from(sorted(types))
    names = st.one_of(field.map(lambda n: [n]),
                      st.lists(field, min_size=1, max_size=3, unique=True))
    return names.flatmap(lambda chosen: st.fixed_dictionaries(
        {n: _strategy(types[n], n) for n in chosen}))


def _request(name: str, base: dict[str, Any]) -> st.SearchStrategy[Any]:
    """A valid request with a few fields at their extremes (so it gets past the first check)."""
    types = _fields(name)
    if name in ("SubmitJob", "TestSubmitJob"):
        inner = {f["name"]: f["type"] for f in types["spec"]["fields"]}
        records = st.tuples(_overrides(inner), st.sampled_from([sluid(5), sluid(6), J_PENDING]))
        return records.map(lambda pair: from_record(name, {
            "job_sluid": pair[1], "spec": {"user": "alice", "command": ["true"], **pair[0]}}))
    return _overrides(types).map(lambda changes: from_record(name, {**base, **changes}))


def _bases() -> dict[str, dict[str, Any]]:
    job = {"job_sluid": J_PENDING, "user": "alice"}
    run = _state().jobs[J_RUNNING]
    report = {"job_sluid": J_RUNNING, "run_sluid": run.run_sluid,
              "node_sluid": run.node_sluids[0], "node_name": run.nodes[0]}
    node = {"node_sluid": node_sluid("n1"), "name": "n1"}
    return {
        "SubmitJob": {}, "TestSubmitJob": {}, "CancelJob": job, "HoldJob": job, "ReleaseJob": job,
        "UpdateJob": {**job, "changes": {"name": "renamed"}},
        "RegisterNode": {**node, "cpus": 2, "mem_mb": 0},
        "ReportJobExit": {**report, "exit_code": 0}, "ReportProlog": {**report, "ok": False},
        "ReportEpilog": {**report, "ok": True},
        "DrainNode": {"name": "n1", "reason": "r"}, "ResumeNode": {"name": "n1"},
        "RequeueJob": {"job_sluid": J_RUNNING, "user": "alice"},
        "ApplyConfig": {"config_sluid": sluid(7), "kind": "cluster", "text": "name: c\n"},
        "Tick": {"shard": SHARD, "time_ms": T0}, "NodeFailed": {**node, "reason": "x",
                                                               "time_ms": T0},
    }


def _state() -> ShardState:
    """Two nodes, a pending job and a running job."""
    state = initial_state(SHARD, CLUSTER)
    for fact in [*nodes("n", 2, cpus=2), queued(J_PENDING, spec(nodes_min=3)),
                 queued(J_RUNNING, spec())]:
        state = evolve(state, restamp(state, fact))
    for fact in schedule(state, T0):
        state = evolve(state, fact)
    return state


def _requests() -> st.SearchStrategy[list[Any]]:
    bases = _bases()
    one = st.one_of(*[_request(name, bases[name]) for name in REQUESTS])
    return st.lists(one, min_size=1, max_size=6)


def _written(obj: Any) -> None:
    encode(*as_record(obj))  # raises EncodeError when the record breaks its schema


SETTINGS = settings(max_examples=300, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _submit(**fields: Any) -> SubmitJob:
    return SubmitJob(job_sluid=sluid(5), spec=spec(**fields))


SEEN = [  # issue #11, as seen: each must stay a named rejection
    [_submit(time_limit_s=99_999_999_999_999_999 * 60)],
    [UpdateJob(job_sluid=J_PENDING, changes={"nodes_min": "3000000000"})],
    [UpdateJob(job_sluid=J_PENDING, changes={"time_limit_s": "99999999999999999999"})],
    [_submit(cpus_per_task=0)],
    [_submit(begin_time_ms=2**63 - 1)],
    [_submit(mem_per_node_mb=2**63 - 1, nodes_min=1)],
    [_submit(nice=-(2**31))],
    [_submit(switches=2**31 - 1, switches_max_wait_s=2**63 - 1)],
    [_submit(name="a" * 70_000)],
]


def _with_seen(test: Any) -> Any:
    for batch in SEEN:
        test = example(batch)(test)
    return test


@SETTINGS
@_with_seen
@given(_requests())
def test_extreme_requests_never_raise_and_every_fact_and_command_encodes(batch: list[Any]) -> None:
    state = _state()
    now = T0 + 1000
    for request in batch:
        for fact in decide(state, request, now):
            _written(fact)
            state = evolve(state, fact)
            for command in node_commands(state, fact):
                _written(command)
    for later in (now, now + 86_400_000):
        for fact in schedule(state, later):
            _written(fact)
            state = evolve(state, fact)
            for command in node_commands(state, fact):
                _written(command)


@SETTINGS
@_with_seen
@given(_requests())
def test_a_cycle_of_extreme_requests_has_no_failure(batch: list[Any]) -> None:
    timed = [Timed(i, T0 + 1000, request) for i, request in enumerate(batch)]
    out = run_cycle(_state(), timed, InboxRange(0, 0, len(batch) - 1), T0 + 1000,
                    encode=lambda obj: encode(*as_record(obj)), reload=_state)
    assert not out.failures, [(f.request, f.stage, repr(f.error)) for f in out.failures]
    assert out.closed and len(out.encoded_facts) == len(out.facts)


@SETTINGS
@given(_request("SubmitJob", {}))
def test_a_test_is_refused_for_what_its_submission_would_be(submission: SubmitJob) -> None:
    """sbatch --test-only: for any spec, the test's answer is refused with the reason the
    submission is (under a fresh SLUID: a test never collides), accepted when it is queued."""
    state = _state()
    fresh = replace(submission, job_sluid=sluid(8))
    decided = decide(state, fresh, T0 + 1000)
    [answer] = decide(state, from_record("TestSubmitJob", as_record(fresh)[1]), T0 + 1000)
    if isinstance(answer, RequestDenied):  # not authorized (a user's negative nice): alike
        [denied] = decided
        assert isinstance(denied, RequestDenied)
        assert (answer.reason, answer.detail) == (denied.reason, denied.detail)
        return
    assert isinstance(answer, JobTestAnswered)
    refusals = [f for f in decided if isinstance(f, JobRejected)]
    if refusals:
        assert (answer.reason, answer.detail) == (refusals[0].reason, refusals[0].detail)
    else:
        assert answer.reason in ("", "NeverRuns"), answer
