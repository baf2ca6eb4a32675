"""``sluice schemas register [--url URL] [--json]``: publish every record type to a registry.

Each current ``.avsc`` is registered, self-contained, under its RecordNameStrategy subject
(the full record name, ``sluice.SubmitJob``) of the schema registry at ``--url`` (default
``SLUICE_SCHEMA_REGISTRY_URL``); the ids it answers are printed. Running it again registers
nothing new and prints the same ids. See docs/wire-format.md, "Confluent framing".
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from streams.settings import Settings

__all__ = ["add_parsers"]


def add_parsers(sub: Any) -> None:
    """Register ``schemas``."""
    p = sub.add_parser("schemas", help="publish Sluice's schemas to a schema registry")
    verbs = p.add_subparsers(dest="verb", required=True)
    reg = verbs.add_parser("register", help="register every record type; print subjects and ids")
    reg.add_argument("--url", default="", help="registry URL (default: "
                     "SLUICE_SCHEMA_REGISTRY_URL)")
    reg.add_argument("--timeout", type=float, default=10.0, help="seconds per request")
    reg.add_argument("--json", action="store_true", help="print {subject: id} as JSON")
    reg.set_defaults(run=_register)


def _register(args: argparse.Namespace, settings: Settings) -> int:
    from streams.schema_registry import RegistryError, SchemaRegistry

    url = args.url or settings.schema_registry_url
    if not url:
        print("sluice schemas register: no registry: pass --url or set "
              "SLUICE_SCHEMA_REGISTRY_URL", file=sys.stderr)
        return 2
    try:
        registered = SchemaRegistry(url, timeout_s=args.timeout).register_all()
    except (RegistryError, ValueError) as exc:
        print(f"sluice schemas register: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps({r.subject: r.schema_id for r in registered}, sort_keys=True))
    else:
        width = max(len(r.subject) for r in registered)
        for r in registered:
            print(f"{r.subject:<{width}}  {r.schema_id}")
    return 0
