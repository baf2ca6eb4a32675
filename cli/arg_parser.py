"""The ``ArgumentParser`` every ``sluice`` command parses its words with.

Python 3.11's argparse drops a ``--`` given as an option's own value (``-N=--``,
``--time=--``) and hands the option an empty list instead of a string: the commands then
failed on it with a traceback (``sluice run -N=-- -- true``: ``'<' not supported between
instances of 'list' and 'int'``). :class:`Parser` gives such an option the word ``--`` itself,
as Python 3.12 does, so it is converted and checked as any other value (``argument -N/--nodes:
invalid int value: '--'``).

Run as a Slurm command (a shim: :mod:`cli.slurm_program`), a usage error is said as Slurm's
getopt and its commands say it, with their exit status 1: ``squeue: unrecognized option
'--bogus'`` (``invalid option -- 'Z'`` for a short one), else ``squeue: error: MESSAGE``, then
``Try "squeue --help" for more information``; no usage lines.
"""

from __future__ import annotations

import argparse

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (issue 17)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Parser"]


class Parser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` with an option's ``--`` value kept (see the module)."""

    def _get_values(self, action: argparse.Action, arg_strings: list[str]) -> Any:
        if action.option_strings and action.nargs is None and arg_strings == ["--"]:
            value = self._get_value(action, "--")
            self._check_value(action, value)
            return value
        return super()._get_values(action, arg_strings)

    def error(self, message: str) -> Any:
        from cli.slurm_program import current

        program = current()
        if not program:
            super().error(message)
        words = message.removeprefix("unrecognized arguments: ").split()
        first = words[0] if words and message.startswith("unrecognized arguments: ") else ""
        if first.startswith("--"):
            said = f"{program}: unrecognized option '{first.partition('=')[0]}'"
        elif first.startswith("-") and len(first) > 1:
            said = f"{program}: invalid option -- '{first[1]}'"
        else:
            said = f"{program}: error: {message}"
        self.exit(1, f'{said}\nTry "{program} --help" for more information\n')
