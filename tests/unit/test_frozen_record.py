"""The frozen records of the CLI's path behave as the frozen dataclasses they replaced.

Each record is checked against a dataclass made from its own ``__init__`` signature (names,
annotations, defaults) with the parameters it had (``frozen=True``, ``slots=True`` unless it
keeps a ``__dict__``): the same values give the same ``repr``, equality, hash, refusals to
assign or delete, ``__match_args__``, and the same pickled state, which loads either way.
"""

from __future__ import annotations

import dataclasses
import inspect
import pickle
from pathlib import Path
from typing import Any

import pytest

from agents.auth.munge import MungeCredential
from cli.batch_script import BatchScript
from cli.client import Decision
from schemas.frozen_record import FrozenRecord, FrozenSlotsRecord
from schemas.schema_walk import Builders
from schemas.sluid import DecodedSluid, InvalidSluidError, SluidClock
from streams.settings import Settings


def _fn(x: Any) -> Any:
    return x


SAMPLES: dict[type, list[tuple[Any, ...]]] = {
    SluidClock: [(2,), (2, 5), (2, 5, 7), (4094, 1 << 41, 1023)],
    DecodedSluid: [(2, 10, 3), (4095, 0, 0)],
    BatchScript: [("a.sh", "#!/bin/sh\n", ("-N", "2")), ("", "", ())],
    MungeCredential: [(0, 0, b"", 1, 300), (1000, 100, b"x", 2, 60, "10.0.0.1")],
    Builders: [("w", {"int": 1}, _fn, _fn, _fn, _fn)],
    Decision: [("s1", "PENDING"), ("s1", "PENDING", 3, "r", "d", 2, {"job_id": 3})],
    Settings: [(), ("b:1", "p", "c", 3, 2, 1, "", 0, Path("/tmp/h")),
               (), ("b:1", "p", "c", 3, 2, 1, "", 0, Path("/tmp/h"), "h:1", 5, "munge")],
}


def _reference(cls: type) -> type:
    """The dataclass ``cls`` would be: its ``__init__``'s fields, frozen, slotted as it is."""
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    assert tuple(p.name for p in params) == cls.__match_args__
    hints = dict(cls.__annotations__)
    fields = [(p.name, hints[p.name]) if p.default is p.empty
              else (p.name, hints[p.name], dataclasses.field(default=p.default))
              for p in params]
    slots = "__dict__" not in dir(cls)
    made = dataclasses.make_dataclass(cls.__name__, fields, frozen=True, slots=slots)
    made.__qualname__ = cls.__qualname__
    return made


def _values(cls: type, args: tuple[Any, ...]) -> tuple[Any, ...]:
    """``args`` completed with the record's defaults (so that both get the same values: a
    default that is None stands for a value made per instance)."""
    made = cls(*args)
    return tuple(getattr(made, name) for name in cls.__match_args__)


@pytest.mark.parametrize("cls", list(SAMPLES), ids=lambda c: c.__name__)
def test_a_record_is_its_dataclass(cls: type) -> None:
    reference = _reference(cls)
    assert cls.__match_args__ == reference.__match_args__
    assert issubclass(cls, FrozenRecord)
    assert issubclass(cls, FrozenSlotsRecord) == ("__dict__" not in dir(cls))
    made = [cls(*_values(cls, args)) for args in SAMPLES[cls]]
    refs = [reference(*_values(cls, args)) for args in SAMPLES[cls]]
    for ours, theirs in zip(made, refs, strict=True):
        assert repr(ours) == repr(theirs)
        assert ours == cls(*_values(cls, tuple(getattr(ours, n) for n in cls.__match_args__)))
        assert ours != theirs  # another class: never equal, as between two dataclasses
        assert (ours == 1) is False and (ours != "x") is True
        try:
            expected: Any = hash(theirs)
        except TypeError as exc:  # a dict field
            with pytest.raises(TypeError, match=str(exc).split(":")[0]):
                hash(ours)
        else:
            assert hash(ours) == expected
        for name in (*cls.__match_args__, "other"):
            with pytest.raises(dataclasses.FrozenInstanceError, match=f"assign to field '{name}'"):
                setattr(ours, name, 1)
            with pytest.raises(dataclasses.FrozenInstanceError, match=f"delete field '{name}'"):
                delattr(ours, name)
        if cls is not Builders:  # functions of a test module do pickle, but the point is rows
            assert pickle.loads(pickle.dumps(ours)) == ours
        if hasattr(reference, "__getstate__") and "__dict__" not in dir(cls):
            state = theirs.__getstate__()
            assert ours.__getstate__() == state
            loaded = cls.__new__(cls)
            loaded.__setstate__(state)
            assert loaded == ours
    for i, a in enumerate(made):  # equality as the dataclasses have it
        for j, b in enumerate(made):
            assert (a == b) == (refs[i] == refs[j])


def test_defaults_made_per_instance() -> None:
    assert Settings().home == Path.home() / ".local" / "state" / "sluice"
    first, second = Decision("s", "PENDING"), Decision("s", "PENDING")
    assert first.row == {} and first.row is not second.row


def test_settings_with_changes_fields_and_refuses_unknown_ones() -> None:
    base = Settings(api="a:1", shards=2)
    changed = base.with_(api="b:2")
    assert changed == Settings(api="b:2", shards=2, home=base.home)
    assert base.api == "a:1"
    with pytest.raises(TypeError):
        base.with_(nope=1)


def test_sluid_clock_checks_its_cluster_id() -> None:
    with pytest.raises(InvalidSluidError, match="outside"):
        SluidClock(1)
    with pytest.raises(InvalidSluidError, match="outside"):
        SluidClock(4095, 3)
