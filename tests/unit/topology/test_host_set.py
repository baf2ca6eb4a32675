"""HostSet: membership in a host list without expanding it, exactly as its expansion.

A short ``-x`` text can name a million hosts (``zz[000000-999999]``): expanded into the node
filters' cache, one request held ~100 MB of the shard's memory (red team, 2026-12-07)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.jobs.node_filter import MAX_REQUIRED, NodeFilterError, node_filter
from scheduler.topology.host_set import EXPAND_LIMIT, HostSet
from scheduler.topology.hostlist import HostlistError, expand

_PREFIX = st.sampled_from(["n", "gpu", "a-", "rack1-n", ""])
_SUFFIX = st.sampled_from(["", "x", "-ib", ".b"])


@st.composite
def _ranges(draw: st.DrawFn) -> str:
    parts = []
    for _ in range(draw(st.integers(1, 3))):
        low = draw(st.integers(0, 3000))
        high = low + draw(st.integers(0, 400))
        pad = draw(st.sampled_from([0, 0, 2, 4]))
        parts.append(f"{low:0{pad}d}" + (f"-{high}" if high != low else ""))
    return ",".join(parts)


@st.composite
def _lists(draw: st.DrawFn) -> str:
    items = []
    for _ in range(draw(st.integers(1, 3))):
        item = draw(_PREFIX) + "[" + draw(_ranges()) + "]" + draw(_SUFFIX)
        if draw(st.booleans()):
            item += "[" + draw(_ranges()) + "]"  # a second group (after a literal or not)
        items.append(item)
    return ",".join(items)


@settings(max_examples=60, deadline=None)
@given(_lists(), st.lists(st.integers(0, 7000), min_size=20, max_size=20))
def test_a_name_is_in_the_set_exactly_when_the_expansion_lists_it(text: str,
                                                                    numbers: list[int]) -> None:
    try:
        names = set(expand(text))
    except HostlistError as error:  # too large to expand is what HostSet is for
        if "too large" not in str(error) and "more than" not in str(error):
            with pytest.raises(HostlistError):
                HostSet.parse(text)
        return
    try:
        hosts = HostSet.parse(text)
    except HostlistError as error:  # an item it would have to expand, too large: refused
        assert "cannot be matched unexpanded" in str(error)
        return
    assert hosts.count == len(expand(text))
    probes = set(list(names)[:50])
    for number in numbers:  # near misses: other numbers, other paddings, other prefixes
        for fmt in ("n{}", "n{:04d}", "gpu{}x", "a-{:02d}", "rack1-n{}.b", "{}", "n{}-ib"):
            probes.add(fmt.format(number))
    for name in probes:
        assert (name in hosts) == (name in names), name


def test_a_million_names_are_matched_not_held() -> None:
    hosts = HostSet.parse("zz[000000-999999],other")
    assert hosts.count == 1_000_001
    assert len(hosts._names) <= 1 and hosts._patterns  # the range a pattern, never expanded
    assert "zz000042" in hosts and "other" in hosts
    assert "zz42" not in hosts and "zz1000000" not in hosts and "zz" not in hosts


def test_a_small_list_is_a_set() -> None:
    hosts = HostSet.parse(f"n[1-{EXPAND_LIMIT}]")
    assert len(hosts._names) == EXPAND_LIMIT and not hosts._patterns


def test_an_exclude_list_of_a_million_names_is_kept_small_and_still_excludes() -> None:
    wanted = node_filter("", "", "zz[000000-999999]")
    assert wanted.allows("n1", ()) and not wanted.allows("zz123456", ())
    assert isinstance(wanted.excluded, HostSet) and not wanted.excluded._names


def test_a_node_list_longer_than_any_job_can_run_on_is_refused_unexpanded() -> None:
    with pytest.raises(NodeFilterError, match=f"more than {MAX_REQUIRED}"):
        node_filter("", "zz[000000-999999]", "")
    assert node_filter("", f"n[1-{MAX_REQUIRED}]", "").only is not None
