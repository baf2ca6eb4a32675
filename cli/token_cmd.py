"""``sluice token [--user U] [--lifespan S] [--node N]``: issue a JWT (like ``scontrol token``).

Administrators only: a token is signed with the cluster's JWT key (``SLUICE_JWT_KEY``), a file
only its owner (the Sluice service user, or the user who ran ``sluice up``) and root can read;
anyone else is refused. Prints ``SLUICE_JWT=<token>``, to export for ``sluice`` or to pass as
the ``sluice-auth: jwt <token>`` header (docs/security.md).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from agents.auth import jwt_token
from cli.submit import real_user
from streams.settings import Settings

__all__ = ["add_parsers"]

MAX_LIFESPAN_S = 365 * 86_400


def add_parsers(sub: Any) -> None:
    """Register ``token``."""
    t = sub.add_parser("token", help="issue a JWT for a user (administrators only)")
    t.add_argument("--user", default="", help="whose token (default: yourself)")
    t.add_argument("--lifespan", type=int, default=1800, help="seconds it is valid (1800)")
    t.add_argument("--node", default="", help="a node JWT: the node it may act for")
    t.set_defaults(run=_token)


def _token(args: argparse.Namespace, settings: Settings) -> int:
    if not 1 <= args.lifespan <= MAX_LIFESPAN_S:
        print(f"sluice token: --lifespan must be 1..{MAX_LIFESPAN_S} s", file=sys.stderr)
        return 2
    if not settings.jwt_key:
        print("sluice token: no JWT key is configured (SLUICE_JWT_KEY)", file=sys.stderr)
        return 1
    try:
        key = jwt_token.read_key(Path(settings.jwt_key))
    except PermissionError as exc:
        print(f"sluice token: only an administrator may issue tokens ({exc})", file=sys.stderr)
        return 1
    except (OSError, ValueError) as exc:
        print(f"sluice token: {exc}", file=sys.stderr)
        return 1
    user = args.user or real_user()
    print(f"SLUICE_JWT={jwt_token.issue(key, user, args.lifespan, int(time.time()), args.node)}")
    return 0
