"""Request credential headers: the client side, light (no import of the core).

| header | value |
|---|---|
| ``sluice-request-id`` | a SLUID per request (with the value's digest, the replay key) |
| ``sluice-auth`` | ``munge <credential>`` or ``jwt <token>`` |

The checks are :mod:`agents.auth.credentials` (the intake's side).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

__all__ = ["AUTH_HEADER", "REQUEST_ID_HEADER", "Headers", "binding", "client_headers", "header",
           "sha256_hex"]

AUTH_HEADER = "sluice-auth"
REQUEST_ID_HEADER = "sluice-request-id"
Headers = Sequence[tuple[str, bytes | None]]


def binding(request_id: str, value: bytes) -> bytes:
    """The MUNGE payload that ties a credential to one request."""
    return f"sluice/1 {request_id} {sha256_hex(value)}".encode()


def sha256_hex(value: bytes) -> str:
    """SHA-256 of ``value`` in hex: by ``cryptography`` when the process has loaded it, else by
    the standard library's own SHA-256 (``_sha256``, which ``hashlib`` uses when it has no
    OpenSSL). The same digest either way; importing ``hashlib`` loads OpenSSL's libcrypto
    (besides the copy in ``cryptography``'s own core), ~11 M instructions, 6 % of a
    ``sluice submit`` (issue 17), for one digest of a few kilobytes."""
    hashes = sys.modules.get("cryptography.hazmat.primitives.hashes")
    if hashes is not None:
        digest = hashes.Hash(hashes.SHA256())
        digest.update(value)
        return str(digest.finalize().hex())
    try:
        from _sha256 import sha256  # noqa: PLC0415 - see above (Python 3.11)
    except ImportError:  # another Python: hashlib's
        from hashlib import sha256  # noqa: PLC0415

    return str(sha256(value).hexdigest())


def header(headers: Headers | None, name: str) -> bytes | None:
    """The last value of header ``name`` (None when absent)."""
    found = None
    for key, value in headers or ():
        if key == name:
            found = value
    return found


def client_headers(value: bytes, request_id: str, kind: str, munge_socket: str = "",
                   token: str = "") -> list[tuple[str, bytes]]:
    """The headers a client sends with ``value``: ``kind`` is munge, jwt or none."""
    headers = [(REQUEST_ID_HEADER, request_id.encode())]
    if kind == "munge":
        from agents.auth import munge  # noqa: PLC0415 -- ctypes and libmunge: munge only

        credential = munge.encode(binding(request_id, value), munge_socket)
        headers.append((AUTH_HEADER, b"munge " + credential.encode()))
    elif kind == "jwt":
        headers.append((AUTH_HEADER, b"jwt " + token.encode()))
    return headers
