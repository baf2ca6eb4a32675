"""``sluice sluid new`` and ``sluice sluid decode SLUID [--json]``."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from schemas import InvalidSluidError, SluidGenerator, decode_sluid
from streams.settings import Settings

__all__ = ["add_parsers"]


def add_parsers(sub: Any) -> None:
    """Register ``sluid``."""
    p = sub.add_parser("sluid", help="mint or decode SLUIDs")
    verbs = p.add_subparsers(dest="verb", required=True)
    new = verbs.add_parser("new", help="mint a SLUID for this cluster")
    new.add_argument("-n", "--count", type=int, default=1)
    new.set_defaults(run=_new)
    dec = verbs.add_parser("decode", help="print a SLUID's cluster id, time and sequence")
    dec.add_argument("sluid")
    dec.add_argument("--json", action="store_true")
    dec.set_defaults(run=_decode)


def _new(args: argparse.Namespace, settings: Settings) -> int:
    generator = SluidGenerator(settings.cluster_id)
    for _ in range(args.count):
        print(generator.new())
    return 0


def _decode(args: argparse.Namespace, settings: Settings) -> int:
    try:
        fields = decode_sluid(args.sluid)
    except InvalidSluidError as exc:
        print(f"sluice sluid decode: {exc}", file=sys.stderr)
        return 2
    data = fields.as_json()
    if args.json:
        print(json.dumps(data))
    else:
        for key, value in data.items():
            print(f"{key}: {value}")
    return 0
