"""Host lists: expand, compress, natural order."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler.topology.hostlist import (
    HostlistError,
    compress,
    expand,
    natural_key,
    natural_sorted,
)


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("", ()),
        ("n1", ("n1",)),
        ("n[1-3,7]", ("n1", "n2", "n3", "n7")),
        ("n[001-003]", ("n001", "n002", "n003")),
        ("n[08-10]", ("n08", "n09", "n10")),
        ("n[9-10]", ("n9", "n10")),
        ("a[01-02]b[1-2]", ("a01b1", "a01b2", "a02b1", "a02b2")),
        ("n[1-2],login1", ("n1", "n2", "login1")),
        ("gpu[1-2]-ib", ("gpu1-ib", "gpu2-ib")),
        (" n[1-2] ", ("n1", "n2")),
    ],
)
def test_expand_writes_every_name_in_order(text: str, names: tuple[str, ...]) -> None:
    assert expand(text) == names


def test_expand_of_n001_072_gives_72_padded_names() -> None:
    names = expand("n[001-072]")
    assert len(names) == 72
    assert names[0] == "n001"
    assert names[-1] == "n072"


@pytest.mark.parametrize(
    "text", ["n[1-3", "n1-3]", "n[3-1]", "n[a-b]", "n[]", "n[1-2]]", "a,,b", "n[[1]]"]
)
def test_expand_rejects_malformed_lists(text: str) -> None:
    with pytest.raises(HostlistError):
        expand(text)


@pytest.mark.parametrize(
    ("names", "text"),
    [
        (["n1", "n2", "n3", "n7"], "n[1-3,7]"),
        (["n003", "n001", "n002"], "n[001-003]"),
        (["n9", "n10", "n11"], "n[9-11]"),
        (["login", "n1"], "login,n1"),
        (["n5"], "n5"),
        (["a01b1", "a01b2"], "a01b[1-2]"),
        (["n1", "n1", "n2"], "n[1-2]"),
        (["n10", "n010"], "n[10,010]"),
    ],
)
def test_compress_groups_runs_of_the_last_number(names: list[str], text: str) -> None:
    assert compress(names) == text


def test_compress_without_sort_keeps_the_given_order() -> None:
    assert compress(["b3", "b1", "b2"], sort=False) == "b[3,1-2]"
    assert expand("b[3,1-2]") == ("b3", "b1", "b2")


def test_compress_refuses_names_that_cannot_be_written() -> None:
    with pytest.raises(HostlistError):
        compress(["n[1]"])


def test_natural_order_compares_numbers_as_numbers() -> None:
    assert natural_sorted(["n10", "n9", "n010", "m1", "n1a"]) == ["m1", "n1a", "n9", "n10", "n010"]
    assert natural_key("n2") < natural_key("n10")


_names = st.lists(
    st.builds(
        lambda prefix, number, width: f"{prefix}{number:0{width}d}",
        st.sampled_from(["n", "gpu", "a1b"]),
        st.integers(0, 300),
        st.integers(0, 4),
    ),
    max_size=40,
)


@given(_names)
def test_compress_then_expand_gives_the_sorted_unique_names(names: list[str]) -> None:
    assert list(expand(compress(names))) == natural_sorted(set(names))
