"""``sluice up --help`` says what each option does (found trying Sluice as a new user:
``--timeout TIMEOUT`` had no text, and its unit was anyone's guess)."""

from __future__ import annotations

import argparse

from cli.main import _parser


def test_every_option_of_up_has_a_help_text() -> None:
    sub = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    up = sub.choices["up"]
    silent = [a.option_strings for a in up._actions if a.option_strings and not a.help]
    assert silent == []
    timeout = next(a for a in up._actions if "--timeout" in a.option_strings)
    assert timeout.help is not None and "seconds" in timeout.help
