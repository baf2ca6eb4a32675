"""An option given ``--`` as its own value (``-N=--``) is that word, checked as any value: Python
3.11's argparse handed such options an empty list, and ``sluice run -N=-- -- true`` ended in a
traceback (found by feeding the CLI malformed arguments)."""

from __future__ import annotations

import pytest

import cli.main
from cli.arg_parser import Parser


@pytest.mark.parametrize("words", [
    ["run", "-N=--", "--", "true"],
    ["run", "--nodes=--", "--time=UNLIMITED", "--", "true"],
    ["alloc", "-N=--", "true"],
    ["submit", "--cpus-per-task=--", "--", "true"],
])
def test_a_number_option_given_dashes_is_a_usage_error_not_a_traceback(
        words: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as ended:
        cli.main.main(words)
    assert ended.value.code == 2
    err = capsys.readouterr().err
    assert "invalid" in err and "'--'" in err
    assert "Traceback" not in err


def test_a_text_option_given_dashes_takes_them_as_its_value() -> None:
    parsed = cli.main._parser("submit").parse_args(["submit", "--job-name=--", "--", "true"])
    assert parsed.job_name == "--"


def test_choices_still_apply_to_dashes() -> None:
    parser = Parser(prog="t")
    parser.add_argument("--mode", choices=["a", "b"], default="a")
    with pytest.raises(SystemExit):
        parser.parse_args(["--mode=--"])
    assert parser.parse_args(["--mode=b"]).mode == "b"


def test_dashes_still_end_the_options() -> None:
    parser = Parser(prog="t")
    parser.add_argument("--name", default="")
    parser.add_argument("rest", nargs="*")
    parsed = parser.parse_args(["--name=x", "--", "--name=y"])
    assert (parsed.name, parsed.rest) == ("x", ["--name=y"])
