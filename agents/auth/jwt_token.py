"""JWTs compatible with Slurm's auth/jwt: HS256 signed with the key file, ``sun``, ``exp``, ``iat``.

A node JWT carries one more claim, ``node`` (the node name it may act for). Keys are read from
the key file (``jwt_hs256.key`` in Slurm; ``SLUICE_JWT_KEY`` here), which must be readable only
by its owner. Checking is PyJWT's; signing is :mod:`agents.auth.jwt_sign`'s (the standard
library's HMAC, byte-equal to PyJWT's tokens: a client need not import PyJWT to sign).

Errors: :class:`TokenError` (``reason`` ``CredentialExpired`` or ``CredentialInvalid``).
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path

import jwt

from agents.auth.jwt_sign import ALGORITHM, issue, read_key

__all__ = ["Claims", "TokenError", "create_key", "issue", "read_key", "verify"]


class TokenError(ValueError):
    """A token that does not verify; ``reason`` is the named reason."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Claims:
    """What a valid token says."""

    user: str
    expires: int
    issued: int
    node: str = ""


def create_key(path: Path) -> bytes:
    """Write a new random HS256 key (64 bytes, mode 0600) unless one exists; return it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(secrets.token_bytes(64))
    return read_key(path)


def verify(key: bytes, token: str) -> Claims:
    """The claims of a valid token; :class:`TokenError` otherwise."""
    try:
        claims = jwt.decode(token, key, algorithms=[ALGORITHM],
                            options={"require": ["exp", "sun"]})
    except jwt.ExpiredSignatureError as exc:
        raise TokenError("CredentialExpired", f"the token expired: {exc}") from exc
    except jwt.InvalidTokenError as exc:
        raise TokenError("CredentialInvalid", f"the token does not verify: {exc}") from exc
    user, node = claims.get("sun"), claims.get("node", "")
    if not isinstance(user, str) or not user or not isinstance(node, str):
        raise TokenError("CredentialInvalid", "the token's sun (or node) claim is not a name")
    return Claims(user, int(claims["exp"]), int(claims.get("iat", 0)), node)
