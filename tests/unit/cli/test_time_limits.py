"""``-t`` as Slurm writes it (``cli.timefmt.parse_time_limit``): its forms, to the second, and
one named error for anything else."""

from __future__ import annotations

import pytest

from cli.timefmt import parse_time_limit


@pytest.mark.parametrize(("text", "seconds"), [
    ("10", 600), ("0:30", 30), ("1:02:03", 3723), ("2-0", 172800), ("1-2:3", 93780),
    ("1-2:3:4", 93784), (" 7 ", 420), ("UNLIMITED", 0), ("infinite", 0), ("0", 0),
])
def test_slurm_s_forms(text: str, seconds: int) -> None:
    assert parse_time_limit(text) == seconds


@pytest.mark.parametrize("text", ["", "5:-3", "-5", "1_0", "\u0663", "\u00b2", "1-\u0663",
                                  "1:2:3:4", "a", "1.5", "9" * 30])
def test_anything_else_is_one_error_naming_the_forms(text: str) -> None:
    with pytest.raises(ValueError, match=r"invalid time limit .*: use minutes, MM:SS"):
        parse_time_limit(text)
