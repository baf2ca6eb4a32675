"""JWTs compatible with Slurm's auth/jwt: HS256 signed with the key file, ``sun``, ``exp``, ``iat``.

A node JWT carries one more claim, ``node`` (the node name it may act for). Keys are read from
the key file (``jwt_hs256.key`` in Slurm; ``SLUICE_JWT_KEY`` here), which must be readable only
by its owner. Signing and checking are PyJWT's; no cryptography is done here.

Errors: :class:`TokenError` (``reason`` ``CredentialExpired`` or ``CredentialInvalid``).
"""

from __future__ import annotations

import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

import jwt

__all__ = ["Claims", "TokenError", "create_key", "issue", "read_key", "verify"]

ALGORITHM = "HS256"


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


def read_key(path: Path) -> bytes:
    """The key in ``path``; refuses a key file others may read (like Slurm)."""
    mode = path.stat().st_mode
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise PermissionError(f"{path} is readable by others (mode {oct(mode & 0o777)}); "
                              "chmod 600 it")
    key = path.read_bytes()
    if len(key) < 32:
        raise ValueError(f"{path}: a JWT key needs at least 32 bytes")
    return key


def issue(key: bytes, user: str, lifespan_s: int, now_s: int, node: str = "") -> str:
    """A token for ``user`` valid ``lifespan_s`` seconds from ``now_s``."""
    claims: dict[str, object] = {"sun": user, "iat": now_s, "exp": now_s + lifespan_s}
    if node:
        claims["node"] = node
    return jwt.encode(claims, key, algorithm=ALGORITHM)


def verify(key: bytes, token: str) -> Claims:
    """The claims of a valid token; :class:`TokenError` otherwise.

    Only ``exp`` bounds a token, as in Slurm's auth/jwt: an ``iat`` in the future is not
    refused (PyJWT's default would). Whoever holds the key chooses both claims, so checking
    ``iat`` protects nothing; it only refused every request of a node daemon that signs its own
    tokens on a host whose clock runs ahead, and with them the report that lets the shard drain
    that node (``scheduler.nodes.refused_launches``)."""
    try:
        claims = jwt.decode(token, key, algorithms=[ALGORITHM],
                            options={"require": ["exp", "sun"], "verify_iat": False})
    except jwt.ExpiredSignatureError as exc:
        raise TokenError("CredentialExpired", f"the token expired: {exc}") from exc
    except jwt.InvalidTokenError as exc:
        raise TokenError("CredentialInvalid", f"the token does not verify: {exc}") from exc
    user, node = claims.get("sun"), claims.get("node", "")
    if not isinstance(user, str) or not user or not isinstance(node, str):
        raise TokenError("CredentialInvalid", "the token's sun (or node) claim is not a name")
    return Claims(user, int(claims["exp"]), int(claims.get("iat", 0)), node)
