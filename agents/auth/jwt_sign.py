"""Signing a Slurm-style JWT (HS256) with the standard library: what a client runs per call.

A client that can read ``SLUICE_JWT_KEY`` signs a short token of its own for every ``sluice``
call (``agents.auth.signer``). PyJWT would do it too, but importing it loads its JWKS client
(``urllib.request``, ``http.client``, ``ssl``, ``email``) and cryptography's X.509: ~25 ms of a
call, and more again at its exit (issue 17). An HS256 JWT is three base64url parts, the last an
HMAC-SHA256 of the first two (RFC 7519, RFC 7515 appendix A.1): that is all this module does,
with the header and claims serialized as PyJWT serializes them, so the tokens are byte-equal to
``jwt.encode``'s (held by the tests). Checking tokens stays PyJWT's (``agents.auth.jwt_token``).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import stat
from pathlib import Path

__all__ = ["ALGORITHM", "issue", "read_key"]

ALGORITHM = "HS256"
_HEADER = json.dumps({"alg": ALGORITHM, "typ": "JWT"}, separators=(",", ":"), sort_keys=True)


def _b64url(data: bytes) -> bytes:
    return base64.urlsafe_b64encode(data).rstrip(b"=")


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
    """A token for ``user`` valid ``lifespan_s`` seconds from ``now_s`` (and, for a node
    daemon, naming its ``node``)."""
    claims: dict[str, object] = {"sun": user, "iat": now_s, "exp": now_s + lifespan_s}
    if node:
        claims["node"] = node
    signing_input = (_b64url(_HEADER.encode()) + b"."
                     + _b64url(json.dumps(claims, separators=(",", ":")).encode()))
    signature = hmac.digest(key, signing_input, hashlib.sha256)
    return (signing_input + b"." + _b64url(signature)).decode("ascii")
