"""``sluice kafka acls apply [--dry-run]`` and ``sluice kafka acls show``.

Run as a Kafka super-user: ``SLUICE_KAFKA_SECURITY=SASL_SSL SLUICE_KAFKA_USER=admin
SLUICE_KAFKA_PASSWORD_FILE=... SLUICE_KAFKA_CA=...`` (or ``sluice up --secure``'s files).
The table is ``streams.acls.acl_table`` for this system's topic prefix; ``--principal
ROLE=NAME`` maps a role (worker, views, node, user) to another SCRAM user name.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from streams.acls import PRINCIPALS, acl_table
from streams.kafka_admin import KafkaAdminError, acl_fields, apply_acls, current_acls
from streams.security import KafkaSecurityError
from streams.settings import Settings

__all__ = ["add_parsers"]


def add_parsers(sub: Any) -> None:
    """Register ``kafka``."""
    p = sub.add_parser("kafka", help="Kafka security: ACLs of this system")
    nouns = p.add_subparsers(dest="noun", required=True)
    acls = nouns.add_parser("acls", help="the ACL table (docs/security.md)")
    verbs = acls.add_subparsers(dest="verb", required=True)
    apply = verbs.add_parser("apply", help="create the missing ACLs (idempotent)")
    apply.add_argument("--dry-run", action="store_true", help="print what would be created")
    apply.add_argument("--principal", action="append", default=[], metavar="ROLE=NAME",
                       help=f"user name of a role ({', '.join(PRINCIPALS)})")
    apply.set_defaults(run=_apply)
    show = verbs.add_parser("show", help="print the cluster's ACLs and what the table lacks")
    show.add_argument("--principal", action="append", default=[], metavar="ROLE=NAME")
    show.set_defaults(run=_show)


def _names(pairs: list[str]) -> dict[str, str]:
    names = {}
    for pair in pairs:
        role, sep, name = pair.partition("=")
        if not sep or role not in PRINCIPALS or not name:
            raise ValueError(f"--principal takes ROLE=NAME with ROLE one of "
                             f"{', '.join(PRINCIPALS)}, not {pair!r}")
        names[role] = name
    return names


def _apply(args: argparse.Namespace, settings: Settings) -> int:
    try:
        missing = apply_acls(settings, dry_run=args.dry_run, names=_names(args.principal))
    except (KafkaAdminError, KafkaSecurityError, ValueError) as exc:
        print(f"sluice kafka acls apply: {exc}", file=sys.stderr)
        return 2
    verb = "would create" if args.dry_run else "created"
    for row in missing:
        print(f"{verb}: User:{row.principal} {row.operation} {row.kind} {row.pattern} "
              f"{row.name}")
    print(f"{len(missing)} missing" + (f" ({verb})" if missing else ""))
    return 0


def _show(args: argparse.Namespace, settings: Settings) -> int:
    try:
        found = current_acls(settings)
        table = acl_table(settings, _names(args.principal))
    except (KafkaAdminError, KafkaSecurityError, ValueError) as exc:
        print(f"sluice kafka acls show: {exc}", file=sys.stderr)
        return 2
    have = set()
    for fields in sorted(acl_fields(b) for b in found):
        have.add(fields[:5])
        print(" ".join(fields))
    lacking = [r for r in table
               if (f"User:{r.principal}", r.operation, r.kind, r.pattern, r.name) not in have]
    for row in lacking:
        print(f"missing: User:{row.principal} {row.operation} {row.kind} {row.pattern} "
              f"{row.name}")
    print(f"{len(found)} ACLs on the cluster, {len(lacking)} of the table missing")
    return 0
