"""``fast_init``: the same ``__init__`` a frozen, slotted dataclass has, faster.

A frozen dataclass's ``__init__`` sets each field with
``__dataclass_builtins_object__.__setattr__(self, name, value)``: a global lookup, an
attribute lookup and the generic ``setattr`` (which looks the name up on the type again) per
field. The records are built once per fact and per request (a simulation builds about a
million), and ``JobSpec`` has 47 fields; setting each slot through its own descriptor's
``__set__``, bound once, does the same in about half the time.

The replacement takes the same keyword arguments with the same defaults (by identity; a
``default_factory`` is called per instance, as the dataclass does), sets ``init=False`` fields
that have a default, then calls ``__post_init__`` if the class has one; positional fields
stay positional. A class it cannot handle the same way (an ``InitVar``, a field without a
slot) keeps its dataclass ``__init__``. Frozenness is unchanged: ``setattr`` on an instance
still raises. ``tests/unit/core/test_fast_init.py`` checks the records against the
dataclasses' own ``__init__``.

A descriptor's ``__set__`` is still a call per field (a method-wrapper: an argument tuple, its
unpacking). Where the class allows it, the fields are stored instead as a plain class's
attributes are: the new instance is given, for the time of its ``__init__``, the class's
*builder* (:func:`_builder`: a class with the same bases and the same ``__slots__``, so the
same layout, and object's ``__setattr__``), which Python allows between classes of one layout,
then its class back (about 10 % fewer instructions over a simulation). ``slot_replacer``'s
copies are built the same way. An instance of a subclass, or a class whose builder Python
refuses, takes the descriptors' path.

It also replaces a slotted dataclass's ``__getstate__`` (how pickle reads it: the shard store
pickles every job row it writes) with one ``attrgetter`` over the fields, which returns the
same list as dataclasses' own (that one calls ``fields()`` on every object): the same pickles.
"""

from __future__ import annotations

import dataclasses
import operator
import types
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["fast_init", "slot_replacer"]

C = TypeVar("C")
_NO_DEFAULT = object()


def _setter(cls: type, name: str) -> Any:
    descriptor = getattr(cls, name, None)
    if not isinstance(descriptor, types.MemberDescriptorType):
        return None
    return descriptor.__set__


_BUILDERS: dict[type, type | None] = {}


def _builder(cls: type) -> type | None:
    """A class an instance of ``cls`` may take while its slots are set by plain stores: the
    same bases and ``__slots__`` as ``cls`` (so the same layout), with the generic
    ``__setattr__`` (a frozen base's is shadowed); None when Python refuses the change of
    class (checked once here, as Python checks it at every change)."""
    if cls in _BUILDERS:
        return _BUILDERS[cls]
    builder: type | None = None
    slots = vars(cls).get("__slots__")
    if isinstance(slots, tuple):
        # both of object's own: Python then gives the class the generic, C-level setattr
        # (a frozen base's ``__delattr__`` left in sight would make every store a call)
        generic = {"__setattr__": object.__setattr__, "__delattr__": object.__delattr__}
        twin = type(f"{cls.__name__}Builder", cls.__bases__,
                    {"__slots__": slots, "__module__": cls.__module__, **generic})
        try:
            probe: Any = object.__new__(twin)
            probe.__class__ = cls
            builder = twin
        except TypeError:
            pass
    _BUILDERS[cls] = builder
    return builder


def fast_init(cls: type[C]) -> type[C]:
    """Give the dataclass ``cls`` the faster ``__init__`` described above, written on its first
    instance (importing the records stays as cheap as before: the CLI imports them)."""
    original = cls.__init__

    def first_init(self: object, *args: Any, **kwargs: Any) -> None:
        init = _compiled(cls, original)
        setattr(cls, "__init__", init)  # noqa: B010 (mypy refuses assigning a method)
        init(self, *args, **kwargs)

    first_init.__qualname__ = f"{cls.__qualname__}.__init__"
    first_init.__doc__ = original.__doc__
    first_init.__wrapped__ = original  # type: ignore[attr-defined]
    setattr(cls, "__init__", first_init)  # noqa: B010 (as above)
    if _DATACLASS_GETSTATE is not None and vars(cls).get("__getstate__") is _DATACLASS_GETSTATE:
        setattr(cls, "__getstate__", _first_getstate(cls))  # noqa: B010 (as above)
    return cls


# A slotted dataclass pickles through ``__getstate__``: dataclasses' own calls ``fields()`` on
# every object (the shard store pickles every job it writes); this one reads the same slots
# in the same order with one ``attrgetter``, so the pickles are the same bytes.
_DATACLASS_GETSTATE = getattr(dataclasses, "_dataclass_getstate", None)


def _first_getstate(cls: type) -> Any:
    """``cls.__getstate__``, written on its first use: the list of the fields' values."""
    original = vars(cls)["__getstate__"]

    def first_getstate(self: object) -> list[Any]:
        getstate: Callable[[object], list[Any]] = _compiled_getstate(cls)
        setattr(cls, "__getstate__", getstate)  # noqa: B010 (as above)
        return getstate(self)

    first_getstate.__wrapped__ = original  # type: ignore[attr-defined]
    return first_getstate


def _compiled_getstate(cls: type) -> Callable[[object], list[Any]]:
    names = [f.name for f in dataclasses.fields(cls)]
    if len(names) == 1:
        name = names[0]

        def getstate_one(self: object) -> list[Any]:
            return [getattr(self, name)]

        return getstate_one
    getter = operator.attrgetter(*names)

    def getstate(self: object) -> list[Any]:
        return list(getter(self))

    getstate.__qualname__ = f"{cls.__qualname__}.__getstate__"
    return getstate


def _compiled(cls: type, original: Any) -> Any:
    """The faster ``__init__`` of ``cls``, or ``original`` when the class is not one it handles."""
    fields = dataclasses.fields(cls)
    if len(fields) != len(cls.__dataclass_fields__):  # type: ignore[attr-defined]
        return original  # an InitVar (or ClassVar): not a case written here
    builder = _builder(cls)
    space: dict[str, Any] = {"_NO_DEFAULT": _NO_DEFAULT, "_cls": cls, "_builder": builder,
                             "_set": object.__setattr__}
    params: list[str] = []  # the keyword-only ones
    positional: list[str] = []
    body: list[str] = []
    stores: list[tuple[str, str, str]] = []  # (setter, field, value) in field order
    for index, f in enumerate(fields):
        setter = _setter(cls, f.name)
        if setter is None:
            return original
        named = params if f.kw_only else positional
        space[f"_s{index}"] = setter
        if f.default is not dataclasses.MISSING:
            space[f"_d{index}"] = f.default
            value = f.name if f.init else f"_d{index}"
            if f.init:
                named.append(f"{f.name}=_d{index}")
        elif f.default_factory is not dataclasses.MISSING:
            space[f"_f{index}"] = f.default_factory
            if f.init:
                named.append(f"{f.name}=_NO_DEFAULT")
                body.append(f"    if {f.name} is _NO_DEFAULT:\n        {f.name} = _f{index}()\n")
                value = f.name
            else:
                value = f"_f{index}()"
        elif f.init:
            named.append(f.name)
            value = f.name
        else:
            continue  # set by __post_init__, as in the dataclass's own __init__
        stores.append((f"_s{index}", f.name, value))
    set_all = "".join(f"    {s}(self, {v})\n" for s, _, v in stores)
    if builder is not None and stores:
        # this class's own instances: plain stores under the builder's class (see above)
        stored = "".join(f"            self.{n} = {v}\n" for _, n, v in stores)
        body.append(
            "    if type(self) is _cls:\n"
            "        _set(self, '__class__', _builder)\n"
            f"        try:\n{stored}"
            "        finally:\n"
            "            self.__class__ = _cls\n"
            "    else:\n"
            + "".join("    " + line + "\n" for line in set_all.splitlines())
        )
    else:
        body.append(set_all)
    if hasattr(cls, "__post_init__"):
        body.append("    self.__post_init__()\n")
    signature = ", ".join(["self", *positional, *(["*", *params] if params else [])])
    source = f"def __init__({signature}):\n{''.join(body) or '    pass'}\n"
    exec(source, space)  # our own field names, as dataclasses writes __init__
    init = space["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__doc__ = original.__doc__
    init.__wrapped__ = original  # inspect.signature shows the dataclass's own signature
    return init


def slot_replacer(cls: type[C], changed: tuple[str, ...]) -> Any:
    """A function ``(obj, *values) -> obj``: a copy of ``obj`` with the fields ``changed`` set
    to ``values`` (in that order), each slot set once, under the class's builder when it has
    one, else through its descriptor (no ``__init__``, no ``__post_init__``):
    ``dataclasses.replace`` without its introspection. Raises
    TypeError for a name that is not a field."""
    names = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
    unknown = [name for name in changed if name not in names]
    if unknown:
        raise TypeError(f"{cls.__name__} has no field {unknown[0]!r}")
    builder = _builder(cls)
    space: dict[str, Any] = {"_new": object.__new__, "_cls": cls, "_builder": builder}
    values = {name: f"v{i}" for i, name in enumerate(changed)}
    lines = [f"def replace(obj{''.join(', ' + v for v in values.values())}):\n",
             f"    new = _new({'_cls' if builder is None else '_builder'})\n"]
    for index, name in enumerate(names):
        setter = _setter(cls, name)
        if setter is None:
            raise TypeError(f"{cls.__name__}.{name} is not a slot")
        space[f"_s{index}"] = setter
        value = values.get(name, "obj." + name)
        lines.append(f"    _s{index}(new, {value})\n" if builder is None
                     else f"    new.{name} = {value}\n")
    if builder is not None:
        lines.append("    new.__class__ = _cls\n")
    lines.append("    return new\n")
    exec("".join(lines), space)  # our own field names
    return space["replace"]
