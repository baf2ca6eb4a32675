"""``sluice encode NAME [FILE] [-o OUT]``: a record as Sluice sends it, for tools such as kcat.

Reads the record as JSON (from FILE, or standard input), fills the schema's defaults and writes
the Avro single-object bytes (``C3 01``, fingerprint, body) to OUT or standard output.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from schemas import EncodeError, encode
from streams.settings import Settings

__all__ = ["add_parsers"]


def add_parsers(sub: Any) -> None:
    """Register ``encode``."""
    p = sub.add_parser("encode", help="write a record's single-object Avro bytes (for kcat)")
    p.add_argument("name", help="record name, e.g. SubmitJob")
    p.add_argument("file", nargs="?", default="-", help="the record as JSON ('-': stdin)")
    p.add_argument("-o", "--output", default="-", help="where the bytes go ('-': stdout)")
    p.set_defaults(run=_encode)


def _encode(args: argparse.Namespace, settings: Settings) -> int:
    try:
        text = sys.stdin.read() if args.file == "-" else Path(args.file).read_text()
        record = json.loads(text)
        if not isinstance(record, dict):
            return _fail(f"{args.file}: expected a JSON object, not {type(record).__name__}")
        value = encode(args.name, record)
    except OSError as exc:
        return _fail(f"{args.file}: {exc.strerror or exc}")
    except json.JSONDecodeError as exc:
        return _fail(f"{args.file}: not JSON: {exc}")
    except EncodeError as exc:
        return _fail(str(exc))
    if args.output == "-":
        if sys.stdout.isatty():
            return _fail("will not write binary to a terminal; give -o FILE or redirect")
        sys.stdout.buffer.write(value)
        sys.stdout.buffer.flush()
        return 0
    try:
        Path(args.output).write_bytes(value)
    except OSError as exc:
        return _fail(f"{args.output}: {exc.strerror or exc}")
    return 0


def _fail(message: str) -> int:
    print(f"sluice encode: {message}", file=sys.stderr)
    return 1
