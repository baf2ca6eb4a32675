"""``fast_init`` builds the same records as the dataclasses' own ``__init__``
(scheduler/records/fast_init.py)."""

from __future__ import annotations

import dataclasses
import pickle
from typing import Any

import pytest

from scheduler.records import JobSpec, JobStarted
from scheduler.records.fast_init import _builder, fast_init, slot_replacer
from scheduler.records.wire import RECORD_TYPES, from_record
from scheduler.scheduling.backfill import Reservation
from scheduler.shard.model import Demand, Job, Node, Step
from schemas.catalog import CATALOG
from tests.unit.test_schema_compat import sample

MODEL_CLASSES = (Demand, Job, Node, Step)


def _by_the_dataclass(cls: type, kwargs: dict[str, Any]) -> Any:
    obj: Any = object.__new__(cls)
    init: Any = vars(cls)["__init__"]
    init.__wrapped__(obj, **kwargs)  # the dataclass's own __init__
    return obj


def _slots(obj: Any) -> list[Any]:
    return [getattr(obj, f.name) for f in dataclasses.fields(obj)]


def _same(a: Any, b: Any) -> None:
    assert a == b
    assert type(a) is type(b)
    assert all(x is y or x == y for x, y in zip(_slots(a), _slots(b), strict=True))


@pytest.mark.parametrize("name", sorted(CATALOG.names))
@pytest.mark.parametrize("full", [True, False], ids=["all-fields", "required-only"])
def test_every_record_is_built_as_the_dataclass_builds_it(name: str, full: bool) -> None:
    built = from_record(name, sample(CATALOG.entry(name).parsed, {}, full))
    cls = type(built)
    given = {f.name: getattr(built, f.name) for f in dataclasses.fields(built) if f.init}
    if not full:  # only the required fields: every default comes from the class
        given = {f.name: given[f.name] for f in dataclasses.fields(built)
                 if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
    _same(cls(**given), _by_the_dataclass(cls, given))


def test_defaults_are_the_very_objects_the_dataclass_uses() -> None:
    fast = JobSpec(user="u")
    slow = _by_the_dataclass(JobSpec, {"user": "u"})
    for f in dataclasses.fields(JobSpec):
        if f.default_factory is dataclasses.MISSING:
            assert getattr(fast, f.name) is getattr(slow, f.name), f.name
        else:  # a new value per instance, as the dataclass makes it
            assert getattr(fast, f.name) == getattr(slow, f.name), f.name
            assert getattr(fast, f.name) is not getattr(JobSpec(user="u"), f.name), f.name


def test_model_classes_run_their_post_init_and_keep_their_defaults() -> None:
    demand = Demand(nodes_min=2, nodes_max=3, cpus=4, mem_mb=5, gpus=1, gpu_type="a100",
                    exclusive=False)
    assert demand.shape == (4, 5, 1, "a100", False)
    _same(demand, _by_the_dataclass(Demand, {"nodes_min": 2, "nodes_max": 3, "cpus": 4,
                                             "mem_mb": 5, "gpus": 1, "gpu_type": "a100",
                                             "exclusive": False}))
    given: dict[str, Any] = {
        "job_sluid": "j", "job_id": 1, "spec": JobSpec(user="u"), "submit_ms": 5,
        "partition": "p", "qos": "", "account": "", "time_limit_s": 60, "demand": demand,
    }
    _same(Job(**given), _by_the_dataclass(Job, given))
    for cls in MODEL_CLASSES:
        init: Any = vars(cls)["__init__"]
        assert init.__wrapped__ is not None


def test_the_records_stay_frozen_and_refuse_what_the_dataclass_refuses() -> None:
    spec = JobSpec(user="u")
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.user = "v"  # type: ignore[misc]
    with pytest.raises(TypeError):
        JobSpec()  # type: ignore[call-arg]  # user is required
    with pytest.raises(TypeError):
        JobSpec(user="u", colour="red")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        JobSpec("u")  # type: ignore[call-arg]
    assert RECORD_TYPES["JobStarted"] is JobStarted
    assert dataclasses.replace(spec, user="v") == JobSpec(user="v")


def test_positional_fields_stay_positional() -> None:
    reservation = Reservation(5, 9, ("n1",))
    _same(reservation, _by_the_dataclass(Reservation, {"start_ms": 5, "end_ms": 9,
                                                       "nodes": ("n1",)}))
    assert Reservation(start_ms=5, end_ms=9, nodes=("n1",)) == reservation
    with pytest.raises(TypeError):
        Reservation(5)  # type: ignore[call-arg]


def test_the_records_pickle_to_the_bytes_the_dataclass_getstate_gives() -> None:
    """The shard store pickles jobs: ``fast_init``'s ``__getstate__`` must write what the
    dataclass's own did (a store written before reads the same), and read back equal."""
    demand = Demand(nodes_min=2, nodes_max=3, cpus=4, mem_mb=5, gpus=1, gpu_type="a100",
                    exclusive=False)
    job = Job(job_sluid="j", job_id=1, spec=JobSpec(user="u", command=("a", "b")),
              submit_ms=5, partition="p", qos="", account="", time_limit_s=60, demand=demand)
    for obj in (demand, job, job.spec, Reservation(5, 9, ("n1",))):
        cls: Any = type(obj)
        state = obj.__getstate__()  # type: ignore[attr-defined]
        assert state == dataclasses._dataclass_getstate(obj)  # type: ignore[attr-defined]
        assert type(state) is list
        assert vars(cls)["__getstate__"] is not dataclasses._dataclass_getstate  # type: ignore
        again = pickle.loads(pickle.dumps(obj, pickle.HIGHEST_PROTOCOL))
        _same(again, obj)
    slow = pickle.dumps(dataclasses._dataclass_getstate(job))  # type: ignore[attr-defined]
    assert pickle.dumps(job.__getstate__()) == slow  # type: ignore[attr-defined]


@fast_init
@dataclasses.dataclass(frozen=True, slots=True)
class _Pair:
    left: int
    right: tuple[int, ...] = dataclasses.field(default_factory=tuple)
    tag: str = "t"


@fast_init
@dataclasses.dataclass(frozen=True, slots=True)
class _Triple(_Pair):  # a record on a record (as the facts on FactBase)
    third: int = 3


class _LeftOnly(_Pair):
    """A plain subclass (its own ``__dict__``): built through the descriptors."""


def test_records_are_built_under_their_builder_and_end_with_their_own_class() -> None:
    for cls in (JobSpec, JobStarted, Job, Demand, Node, Step, Reservation, _Pair):
        assert _builder(cls) is not None, cls
    pair = _Pair(1, (2,))
    _same(pair, _by_the_dataclass(_Pair, {"left": 1, "right": (2,)}))
    with pytest.raises(dataclasses.FrozenInstanceError):
        pair.left = 2  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(pair)) == pair


def test_a_record_on_a_record_and_a_plain_subclass_are_built_as_the_dataclass_builds() -> None:
    assert _builder(_Triple) is not None  # its base's fields set through the builder too
    _same(_Triple(1, third=4), _by_the_dataclass(_Triple, {"left": 1, "third": 4}))
    left = _LeftOnly(7)  # the builder path would have changed its class to _Pair
    assert type(left) is _LeftOnly
    assert (left.left, left.right, left.tag) == (7, (), "t")
    with pytest.raises(dataclasses.FrozenInstanceError):
        left.tag = "u"  # type: ignore[misc]


def test_a_copy_by_slot_replacer_is_of_the_class_and_frozen() -> None:
    copy = slot_replacer(_Pair, ("tag", "left"))
    pair = _Pair(1, (2,))
    changed = copy(pair, "u", 5)
    _same(changed, dataclasses.replace(pair, tag="u", left=5))
    assert changed.right is pair.right
    with pytest.raises(dataclasses.FrozenInstanceError):
        changed.tag = "v"
    with pytest.raises(TypeError):
        slot_replacer(_Pair, ("colour",))
