"""The ``sluice`` command: one entry point, one sub-command per module.

| command | module |
|---|---|
| up, down | ``cli.system`` |
| worker, projections, node | ``cli.services`` |
| submit, hold, release | ``cli.submit`` |
| cancel, update | ``cli.job_control`` |
| run (srun: a job step; outside a job, its own allocation) | ``cli.run_step``, ``cli.run_alloc`` |
| alloc (salloc: an allocation held while a command runs) | ``cli.alloc_cmd`` |
| slurm-path, scontrol (Slurm's command names) | ``cli.slurm_cmds`` |
| drain, resume, requeue | ``cli.admin`` |
| queue, nodes, show, history | ``cli.views`` |
| status | ``cli.status`` |
| sdiag (scheduler statistics) | ``cli.sdiag_cmd`` |
| sprio (priority factors, answered by the shards) | ``cli.sprio_cmd`` |
| sshare (fair-share tree, answered by the shards) | ``cli.sshare_cmd`` |
| sacctmgr show (associations, accounts, users, QOS in force) | ``cli.sacctmgr_cmd`` |
| sreport (usage reports from the runs and the nodes' states) | ``cli.sreport_cmd`` |
| sluid | ``cli.sluid`` |
| kafka acls apply/show | ``cli.kafka_cmd`` |
| bridge, operator | ``cli.kube_cmd`` |
| simulate | ``cli.simulate`` |
| topology, replay, audit, verify, watch | their own modules, when present |
"""

from __future__ import annotations

import argparse
import gc
import gettext
import importlib
import os
import signal
import sys
from collections.abc import Sequence

from cli.arg_parser import Parser

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (issue 17)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["main", "prebuild", "prewarm"]

_MODULES = (
    "cli.system", "cli.services", "cli.submit", "cli.views", "cli.status", "cli.admin",
    "cli.sluid_cmd", "cli.token_cmd", "cli.kafka_cmd", "cli.encode_cmd", "cli.run_step",
    "cli.alloc_cmd", "cli.slurm_cmds", "cli.schemas_cmd", "cli.kube_cmd", "cli.job_control",
    "cli.sdiag_cmd", "cli.sprio_cmd", "cli.sshare_cmd",
)
# Commands that parse their own arguments: name → module with run(argv) -> int.
_PASSTHROUGH = {
    "simulate": "cli.simulate",
    "topology": "cli.topology",
    "replay": "cli.replay",
    "audit": "cli.audit",
    "verify": "cli.audit",
    "watch": "cli.watch",
    "sacctmgr": "cli.sacctmgr_cmd",
    "sreport": "cli.sreport_cmd",
}


# The commands a script calls in a loop: only their module is imported to parse them (the
# whole parser imports every command's module, confluent_kafka.admin among them: ~0.1 s).
_HOT = {"submit": "cli.submit", "cancel": "cli.job_control", "hold": "cli.submit",
        "release": "cli.submit", "update": "cli.job_control", "queue": "cli.views",
        "nodes": "cli.views", "show": "cli.views", "history": "cli.views",
        "scontrol": "cli.slurm_cmds", "node": "cli.services"}
"""Commands whose module alone is imported to parse them: the CLI's often-run calls, and the
node daemon (an idle daemon's memory is mostly what it imported, issue 17)."""


def _columns() -> int:
    """The terminal's width as ``shutil.get_terminal_size`` gives it: ``COLUMNS``, else the
    terminal of stdout, else 80."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


class _Formatter(argparse.HelpFormatter):
    """argparse's help formatter, its width found without ``shutil``: argparse builds one for
    every argument added, and its ``import shutil`` (with ``bz2``, ``lzma``, ``fnmatch``) was
    ~1.5 ms of a ``sluice submit`` that prints no help (issue 17)."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position,
                         _columns() - 2 if width is None else width)


class _Parser(Parser):
    """An ``ArgumentParser`` whose help is formatted by :class:`_Formatter` (sub-commands'
    parsers too: ``add_subparsers`` makes them of this class)."""

    commands: Any = None
    """The sub-commands' action (``sluice``'s own parser only)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)


def _parser(command: str = "") -> _Parser:
    parser = _Parser(
        prog="sluice", description="Sluice: an event-sourced scheduler for AI/GPU clusters"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                parser_class=_Parser)
    parser.commands = sub
    if command in _HOT:
        importlib.import_module(_HOT[command]).add_parsers(sub)
        return parser
    for name in _MODULES:
        importlib.import_module(name).add_parsers(sub)
    for name in _PASSTHROUGH:
        sub.add_parser(name, help=f"see 'sluice {name} --help'", add_help=False)
    return parser


_PREBUILT: dict[str, _Parser] = {}
"""Parsers built before the call (by the command server, ``cli/command_server.py``, whose
children each parse one call): command → the parser :func:`_parser` would build for it."""


def prebuild(commands: Sequence[str]) -> None:
    """Build the parsers of ``commands`` now, for the calls to come (see :data:`_PREBUILT`)."""
    for command in commands:
        _PREBUILT[command] = _parser(command)


def prewarm(calls: Sequence[Sequence[str]]) -> None:
    """Parse ``calls`` once with the prebuilt parsers (their results dropped): argparse matches a
    call's arguments with regular expressions it compiles on first use (``re`` then caches
    them), so a warm process that forks a child per call compiles them once, here, not in
    every child. A call that does not parse is passed over."""
    for words in calls:
        parser = _PREBUILT.get(words[0]) if words else None
        if parser is not None:
            try:
                parser.parse_known_args(_dash_values(list(words)))
            except (SystemExit, ValueError):
                continue


_DASH_VALUES = {"queue": ("-S", "--sort")}
"""Options whose value may begin with ``-`` (squeue ``-S -p,i``: descending priority)."""


def _dash_values(words: list[str]) -> list[str]:
    """``words`` with such an option and its value joined (``--sort=-p,i``), which argparse
    would otherwise take for an option of its own."""
    options: tuple[str, ...] = _DASH_VALUES.get(words[0], ()) if words else ()
    joined: list[str] = []
    for word in words:
        if joined and joined[-1] in options and word.startswith("-"):
            joined[-1] = f"{options[-1]}={word}"  # the long name takes a value after "="
        else:
            joined.append(word)
    return joined


def _parse(parser: _Parser, words: list[str]) -> argparse.Namespace:
    """``parser.parse_args(words)``, but a word no parser knows is reported by the
    sub-command's parser, with its usage (``sluice submit: error: …``), not by ``sluice``'s.
    srun's and salloc's ``-I`` take their value only attached (``cli.run_step``)."""
    if words[:1] in (["run"], ["alloc"]) and parser.commands is not None:
        from cli.run_step import optional_values

        options = parser.commands.choices[words[0]]._option_string_actions
        words = [words[0], *optional_values(options, words[1:])]
    parsed, extra = parser.parse_known_args(_dash_values(words))
    if extra:
        choices = parser.commands.choices if parser.commands else {}
        owner = next((choices[w] for w in words if w in choices), parser)
        owner.error(f"unrecognized arguments: {' '.join(extra)}")
    return parsed


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``sluice`` command; returns its exit status.

    Run as the ``sluice`` program (``argv`` None), a :data:`_FAST_EXIT` command ends the
    process as soon as it has returned and its output is flushed (:func:`_exit_now`)."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    fast = argv is None and args_list[:1] and args_list[0] in _FAST_EXIT
    if fast:
        gc.disable()
        _argparse_untranslated()
    from cli.slurm_program import ENV, as_program, restore, version_line

    version = version_line(os.environ.get(ENV, ""), args_list)  # sbatch --version, sinfo -V
    slurm = as_program()  # run by a Slurm shim: its errors in Slurm's words (squeue: error: …)
    try:
        if version:
            print(version)
        status = 0 if version else _main(args_list)
        if fast:
            _exit_now(status)
    finally:
        if slurm:
            restore()
    return status


_FAST_EXIT = frozenset({"submit"})
"""Commands that skip the interpreter's teardown when run as the ``sluice`` program: freeing the
objects of the ~150 modules a call loads, one by one, was 8-20 ms of CPU of a ``sluice
submit`` (issue 17). Nothing they leave needs it: no thread of theirs is still working (a
producer of their own is flushed before they return), they make no temporary file and
register no exit handler, and their output is flushed first. They also run without the cyclic
garbage collector: a call makes few cycles and ends in milliseconds, and the collections the
~150 imports set off (each one walking every object made so far) were ~4 % of its CPU; a
``sluice submit`` that goes on running (``-W``, ``--from``) turns it back on."""


def _argparse_untranslated() -> None:
    """Let argparse's messages skip ``gettext`` when it could only return them unchanged.

    argparse passes each of its words (a parser's group titles, the help option's text…)
    through ``gettext.gettext``, which each time reads the locale's variables, imports
    ``locale`` to expand them and looks on disk for a ``<lang>/LC_MESSAGES/messages.mo``
    under the directory bound to the current domain: ~5 M instructions of a ``sluice
    submit``, 3 % (issue 17). When that directory does not exist (Python ships none: the
    default is ``sys.base_prefix/share/locale``) no catalog can be found and ``gettext``
    returns every message as it is given (``ngettext``: the singular for 1, else the
    plural), so argparse's names for them are set to functions that do just that."""
    if os.path.isdir(gettext.bindtextdomain(gettext.textdomain())):  # noqa: PTH112 -- no Path
        return
    argparse._ = str  # type: ignore[attr-defined]
    argparse.ngettext = _ngettext  # type: ignore[attr-defined]


def _ngettext(singular: str, plural: str, n: int) -> str:
    return singular if n == 1 else plural


def _exit_now(status: int) -> None:
    """End the process with ``status`` once stdout and stderr are flushed; if they cannot be
    (a closed pipe), return and let the interpreter's exit report it as usual."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    os._exit(status)


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush of what the closed pipe did
    not take raises nothing more (Python's documented way out of a SIGPIPE)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _main(args_list: list[str]) -> int:
    from cli.client import ApiError  # imported here, after main() has set the collector
    from streams.settings import ClientConfError, Settings

    try:
        if args_list and args_list[0] in _PASSTHROUGH:
            module = importlib.import_module(_PASSTHROUGH[args_list[0]])
            return int(module.run(args_list))
        command = args_list[0] if args_list else ""
        args = _parse(_PREBUILT.get(command) or _parser(command), args_list)
        args.argv = args_list  # the words as given (submit re-reads them after #SBATCH lines)
        return int(args.run(args, Settings.from_env()))
    except (ApiError, ClientConfError) as exc:
        print(f"sluice {args_list[0]}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"sluice {args_list[0] if args_list else ''}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader left (squeue | head): quietly, as a C program dies
        _quiet_stdout()
        return 128 + signal.SIGPIPE
    except (OSError, ValueError, TimeoutError) as exc:  # a missing file, a bad value, no answer
        if _kafka_security_error(exc):  # a bad SLUICE_KAFKA_* setting or password file
            print(f"sluice: {exc}", file=sys.stderr)
            return 2
        if os.environ.get("SLUICE_DEBUG"):
            raise
        print(f"sluice {args_list[0] if args_list else ''}: {_one_line(exc)}", file=sys.stderr)
        return 1
    except Exception as exc:
        if not _kafka_error(exc) or os.environ.get("SLUICE_DEBUG"):
            raise
        print(f"sluice {args_list[0] if args_list else ''}: Kafka at "
              f"{os.environ.get('KAFKA_BOOTSTRAP') or 'the configured brokers'}: "
              f"{_kafka_text(exc)}", file=sys.stderr)
        return 1


def _kafka_error(exc: BaseException) -> bool:
    """Whether ``exc`` is confluent-kafka's ``KafkaException`` (the broker cannot be reached,
    a topic is missing, access is denied…): a command that met one has loaded the module, or
    only its C extension (:mod:`streams.kafka_native`: a producer that could not be made, e.g.
    an unreadable ``KafkaCA``, was a traceback)."""
    for name in ("confluent_kafka", "streams.kafka_native"):
        kind = getattr(sys.modules.get(name), "KafkaException", None)
        if isinstance(kind, type) and isinstance(exc, kind):
            return True
    return False


def _kafka_text(exc: BaseException) -> str:
    """The Kafka error's own sentence (``Failed to get metadata: Local: Broker transport
    failure``), not the library's repr."""
    error = exc.args[0] if exc.args else None
    text = error.str() if error is not None and hasattr(error, "str") else str(exc)
    return " ".join(str(text).split()) or type(exc).__name__


def _kafka_security_error(exc: BaseException) -> bool:
    """Whether ``exc`` is a ``streams.security.KafkaSecurityError``. Only a command that loaded
    ``streams.security`` can raise one, so this looks for the module rather than import it
    (``sluice submit`` through the relay never does: its import was ~1 ms, issue 17)."""
    security = sys.modules.get("streams.security")
    return security is not None and isinstance(exc, security.KafkaSecurityError)


def _one_line(exc: BaseException) -> str:
    """What went wrong, in one line (set SLUICE_DEBUG=1 for the traceback)."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, OSError) and exc.filename and str(exc.filename) not in text:
        text = f"{exc.filename}: {text}"
    return text


if __name__ == "__main__":
    sys.exit(main())
