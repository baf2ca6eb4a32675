"""Sealing ``--export`` values on the client, light: what ``sluice submit`` runs (issue 17).

The construction is :mod:`agents.auth.sealed_env`'s (which opens the blob on the nodes, and
whose ``seal_env`` is this module's :func:`seal_raw`); only where the pieces come from differs,
because a ``sluice submit`` with the default ``--export ALL`` seals on every call:

- X25519 and ChaCha20-Poly1305 are cryptography's compiled classes, taken from
  ``cryptography.hazmat.bindings._rust.openssl``: the very objects the public classes of
  ``cryptography.hazmat.primitives`` return, without the ~50 Python modules that import with
  those (serialization, X.509, the OpenSSL backend): ~12 ms of a call, and more again at its
  exit. cryptography is pinned (``pyproject.toml``); if a release no longer has those names,
  the public classes are used (:func:`_primitives`);
- HKDF-SHA256 (RFC 5869: extract, then one block of expand for the 32-byte key) is two HMACs
  of the standard library, held byte-equal to cryptography's ``HKDF`` by the tests;
- the nodes' public key is read without ``cryptography``: an inline setting is base64 of its
  32 raw bytes, and an X25519 ``SubjectPublicKeyInfo`` PEM (RFC 8410) is a fixed 12-byte DER
  prefix and those bytes; any other file goes to :mod:`agents.auth.node_keys`' loader.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
from typing import Any

from agents.auth.key_files import KeyFileError, env_key_paths, inline_public_key
from streams.settings import Settings

__all__ = ["KeyFileError", "aad", "env_public_raw", "hkdf_sha256", "seal_raw"]

MAGIC = b"SLX1"
INFO = b"sluice-env/v1"
_X25519_SPKI = bytes.fromhex("302a300506032b656e032100")
"""DER of an X25519 SubjectPublicKeyInfo up to its 32 key bytes (RFC 8410, section 10.1)."""
_PEM_PUBLIC = ("-----BEGIN PUBLIC KEY-----", "-----END PUBLIC KEY-----")


def hkdf_sha256(secret: bytes, salt: bytes, info: bytes, length: int = 32) -> bytes:
    """HKDF-SHA256 (RFC 5869) of ``secret``: ``length`` bytes, at most 255 blocks of 32."""
    if not 0 < length <= 255 * 32:
        raise ValueError(f"HKDF-SHA256 cannot derive {length} bytes")
    prk = hmac.digest(salt or bytes(32), secret, hashlib.sha256)
    out, block = b"", b""
    for counter in range(1, -(-length // 32) + 1):
        block = hmac.digest(prk, block + info + bytes([counter]), hashlib.sha256)
        out += block
    return out[:length]


def aad(cluster: str, user: str) -> bytes:
    """The associated data that binds a sealed environment to its cluster and user."""
    return b"\0".join((INFO, cluster.encode(), user.encode()))


def _compiled() -> Any:
    """cryptography's compiled OpenSSL bindings (a private module of the pinned release)."""
    from cryptography.hazmat.bindings._rust import openssl  # noqa: PLC0415 -- see above

    return openssl


def _primitives() -> tuple[tuple[Any, Any], Any]:
    """((X25519 ``generate()``, public key ``from_public_bytes(raw)``), ChaCha20Poly1305):
    cryptography's compiled classes, else its public ones."""
    try:
        openssl = _compiled()
        x25519, aead = openssl.x25519, openssl.aead
        return (x25519.generate_key, x25519.from_public_bytes), aead.ChaCha20Poly1305
    except (ImportError, AttributeError):  # a cryptography release that moved them
        from cryptography.hazmat.primitives.asymmetric import x25519 as public  # noqa: PLC0415
        from cryptography.hazmat.primitives.ciphers.aead import (  # noqa: PLC0415
            ChaCha20Poly1305,
        )

        return ((public.X25519PrivateKey.generate, public.X25519PublicKey.from_public_bytes),
                ChaCha20Poly1305)


def seal_raw(env: dict[str, str], node_public: bytes, cluster: str, user: str) -> str:
    """The sealed blob (base64) of ``env`` for the nodes whose X25519 public key is the 32
    bytes ``node_public``, bound to ``cluster`` and ``user`` (see :mod:`agents.auth.sealed_env`).
    """
    (generate, peer), chacha = _primitives()
    ephemeral = generate()
    eph_raw = ephemeral.public_key().public_bytes_raw()
    shared = ephemeral.exchange(peer(node_public))
    key = hkdf_sha256(shared, eph_raw + node_public, INFO)
    nonce = os.urandom(12)
    body = json.dumps(env, sort_keys=True, separators=(",", ":")).encode()
    sealed = chacha(key).encrypt(nonce, body, aad(cluster, user))
    return base64.b64encode(MAGIC + eph_raw + nonce + sealed).decode()


def env_public_raw(settings: Settings) -> bytes | None:
    """The nodes' X25519 public key (32 bytes) this client seals to; None when there is none
    (no ``EnvPublicKey`` setting and no key file). Raises :class:`KeyFileError`."""
    raw = inline_public_key(settings.env_pubkey)
    if raw is not None:
        return raw
    path = env_key_paths(settings)[1]
    try:
        text = path.read_bytes()
    except FileNotFoundError:
        if settings.env_pubkey:
            raise KeyFileError(f"{path}: no such key file") from None
        return None
    except OSError as exc:
        raise KeyFileError(f"{path}: cannot be read: {exc.strerror or exc}") from exc
    raw = _spki_x25519(text)
    if raw is not None:
        return raw
    from agents.auth.node_keys import load_env_public  # noqa: PLC0415 -- an unusual file

    return load_env_public(settings).public_bytes_raw()


def _spki_x25519(pem: bytes) -> bytes | None:
    """The 32 key bytes of a PEM X25519 public key in its one canonical form, else None."""
    lines = pem.decode("ascii", "replace").strip().splitlines()
    if len(lines) < 3 or (lines[0].strip(), lines[-1].strip()) != _PEM_PUBLIC:
        return None
    try:
        der = base64.b64decode("".join(line.strip() for line in lines[1:-1]), validate=True)
    except (ValueError, binascii.Error):
        return None
    if len(der) != len(_X25519_SPKI) + 32 or not der.startswith(_X25519_SPKI):
        return None
    return der[len(_X25519_SPKI):]
