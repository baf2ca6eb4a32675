"""The keys a node daemon loads, read without ``cryptography``'s ``serialization`` package.

A node verifies every command with the command key (Ed25519) and opens a job's sealed
environment with the environment key (X25519). Loading either through ``serialization``
imports its SSH, RSA, DSA, EC, DH and PKCS12 modules: 1.7 MiB of a daemon's memory for two
32-byte keys (issue 17: a daemon ≤ 30 MiB). So, as :mod:`agents.auth.public_keys` does for a
client's environment key, the key files in the one DER form each key has — what
``cryptography`` writes (RFC 8410 §4 and §7) — are read by their fixed header:

| file | its DER: a fixed header, then 32 key bytes |
|---|---|
| ``keys/command-ed25519.pub`` | SubjectPublicKeyInfo, 12 bytes with the OID 1.3.101.112 |
| ``keys/env-x25519.key`` | PKCS8, 16 bytes with the OID 1.3.101.110 |

and the raw bytes handed to libsodium (:mod:`agents.auth.sodium`: a node with libsodium never
loads ``cryptography``, 10 MiB of its memory) or, without it, to ``cryptography``.
Any other file goes to ``serialization``'s loader (:mod:`agents.auth.node_keys`), so every
file gives the same key, or the same error, as before. Nothing here is cryptography: it
compares bytes with a constant. The command key may also be inline (``CommandPublicKey``,
``SLUICE_COMMAND_PUBKEY``: base64 of the 32 raw bytes).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agents.auth import sodium
from agents.auth.key_files import KeyFileError
from agents.auth.public_keys import (
    command_key_paths,
    env_key_paths,
    inline_raw,
    pem_raw,
    read_key_file,
)

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from streams.settings import Settings

__all__ = ["ED25519_SPKI_HEADER", "X25519_PKCS8_HEADER", "CommandKey", "load_command_key",
           "load_env_private_key"]

ED25519_SPKI_HEADER = bytes.fromhex("302a300506032b6570032100")
"""SEQUENCE { SEQUENCE { OID 1.3.101.112 }, BIT STRING (33 bytes, 0 unused bits) }: what
precedes the 32 key bytes in every Ed25519 SubjectPublicKeyInfo (RFC 8410 §4)."""
X25519_PKCS8_HEADER = bytes.fromhex("302e020100300506032b656e04220420")
"""SEQUENCE { INTEGER 0, SEQUENCE { OID 1.3.101.110 }, OCTET STRING { OCTET STRING (32) } }:
what precedes the 32 private bytes of an X25519 PKCS8 key without attributes or public key
(RFC 8410 §7, the form ``cryptography`` writes)."""


class CommandKey:
    """The Ed25519 public key that node commands are signed for: checked by libsodium
    (``crypto_sign_verify_detached``, :mod:`agents.auth.sodium`) where it is installed, by
    ``cryptography`` otherwise (a node then loads it at its first command, 10 MiB)."""

    def __init__(self, raw: bytes) -> None:
        self.raw = bytes(raw)
        if len(self.raw) != 32:
            raise KeyFileError(f"an Ed25519 public key is 32 bytes, not {len(self.raw)}")
        self._key: Ed25519PublicKey | None = None
        if not sodium.available():
            from cryptography.hazmat.primitives.asymmetric.ed25519 import (  # noqa: PLC0415
                Ed25519PublicKey,
            )

            self._key = Ed25519PublicKey.from_public_bytes(self.raw)

    def verify(self, signature: bytes, message: bytes) -> bool:
        """True when ``signature`` is this key's Ed25519 signature of ``message``."""
        if self._key is None:
            return sodium.verify_detached(signature, message, self.raw)
        from cryptography.exceptions import InvalidSignature  # noqa: PLC0415 - with the key

        try:
            self._key.verify(signature, message)
        except InvalidSignature:
            return False
        return True


def load_command_key(settings: Settings) -> CommandKey:
    """The nodes' command key: inline, or from its file (:class:`KeyFileError` when missing,
    unreadable or not an Ed25519 public key)."""
    raw = inline_raw(settings.command_pubkey)
    if raw is None:
        path = command_key_paths(settings)[1]
        raw = pem_raw(read_key_file(path, private=False), ED25519_SPKI_HEADER)
        if raw is None:
            from agents.auth.node_keys import load_pem_public, public_raw  # noqa: PLC0415

            raw = public_raw(load_pem_public(path, "ed25519"))
    return CommandKey(raw)


def load_env_private_key(settings: Settings) -> bytes:
    """The nodes' environment key's 32 raw private bytes (:class:`KeyFileError` when missing,
    readable by group or others, or not an X25519 private key), as
    :func:`agents.auth.node_keys.load_env_private` reads it."""
    path = env_key_paths(settings)[0]
    raw = pem_raw(read_key_file(path, private=True), X25519_PKCS8_HEADER, b"PRIVATE KEY")
    if raw is None:
        from agents.auth.node_keys import load_env_private  # noqa: PLC0415 - another form

        return load_env_private(settings).private_bytes_raw()
    return raw
