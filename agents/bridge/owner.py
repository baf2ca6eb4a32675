"""Whose job a gang becomes: its Namespace's ``sluice.dev/user``, else the bridge's
``--default-user``, else nobody's: the pods are refused ``NoSluiceUser``.

Before (review, 7 Dec 2026), a namespace without the annotation submitted as the bridge's own
user: with a bridge running as root (or the service user, as in the image), whoever could
create pods in any namespace had root's standing in Sluice (no limits, any account, first in
fair share, privileged views). Least privilege first: an unmapped namespace's pods wait, a
Warning Event saying why, until its administrator names a user; or the bridge's
administrator names an explicit default user, which is never root, the service user or the
bridge's own user (``check_default_user``: the bridge refuses to start with one).
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import pwd
from pathlib import Path

from agents.bridge.gang import USER_KEY, USER_NAME, GangError
from streams.settings import Settings

__all__ = ["NO_SLUICE_USER", "DefaultUserError", "check_default_user", "owner",
           "privileged_users"]

NO_SLUICE_USER = "NoSluiceUser"
"""The reason on the pods of a namespace that names no user while the bridge has no default."""


class DefaultUserError(ValueError):
    """The bridge's ``--default-user`` is refused (the message says why)."""


def owner(namespace: str, namespace_user: str, default_user: str) -> str:
    """The user a namespace's gang is submitted for: the namespace's ``sluice.dev/user``,
    else ``default_user``; GangError ``NoSluiceUser`` when both are empty."""
    user = namespace_user or default_user
    if not user:
        raise GangError(NO_SLUICE_USER, f"namespace {namespace} names no Sluice user and the "
                        "bridge has no --default-user: its pods are nobody's jobs. A cluster "
                        f"administrator names one: kubectl annotate namespace {namespace} "
                        f"{USER_KEY}=<user>")
    return user


def privileged_users(settings: Settings) -> dict[str, str]:
    """Users a default user may not be, each with why: root (every name of uid 0), the
    bridge's own user (its credential's: the JWT's ``sun``, else the process's user) and the
    service user as the bridge can tell it (the owner of ``SLUICE_HOME`` and of the JWT key,
    which only the service user and root may read)."""
    users = {"root": "root"}
    own = pwd.getpwuid(os.getuid()).pw_name if _uid_known(os.getuid()) else ""
    if own:
        users.setdefault(own, "the bridge's own user")
    token_user = _token_user(settings.jwt) if settings.jwt else ""
    if token_user:
        users.setdefault(token_user, "the bridge's own user (its JWT)")
    for path in (settings.home, Path(settings.jwt_key) if settings.jwt_key else None):
        name = _owner_name(path)
        if name:
            users.setdefault(name, f"the service user (owner of {path})")
    return users


def check_default_user(user: str, privileged: dict[str, str]) -> str:
    """``user`` if it may be the default user of unmapped namespaces; DefaultUserError if it
    is no user name, root (uid 0 under any name) or one of ``privileged``."""
    if not USER_NAME.fullmatch(user) or user.isdigit():  # "0": a uid, maybe root's
        raise DefaultUserError(f"{user!r} is not a user name")
    try:
        uid = pwd.getpwnam(user).pw_uid
    except KeyError:
        uid = -1
    if user in privileged or uid == 0:
        why = privileged.get(user, "uid 0")
        raise DefaultUserError(f"{user} is {why}: pods of namespaces nobody mapped would get "
                               "its standing in Sluice (no limits, any account). Name an "
                               "ordinary user, or none (such pods are refused NoSluiceUser)")
    return user


def _uid_known(uid: int) -> bool:
    try:
        pwd.getpwuid(uid)
    except KeyError:
        return False
    return True


def _owner_name(path: Path | None) -> str:
    if path is None:
        return ""
    try:
        uid = path.stat().st_uid
        return pwd.getpwuid(uid).pw_name
    except (OSError, KeyError):
        return ""


def _token_user(token: str) -> str:
    """The ``sun`` claim of a JWT, unverified (the bridge's own token: who it says it is)."""
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (IndexError, ValueError, binascii.Error):
        return ""
    user = claims.get("sun") if isinstance(claims, dict) else None
    return user if isinstance(user, str) else ""
