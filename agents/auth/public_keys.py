"""Where the node-side key pairs live, and the nodes' environment key as a client reads it.

``sluice submit`` seals ``--export`` values to the nodes' X25519 public key
(:mod:`agents.auth.sealed_env`). Loading that key through ``cryptography``'s ``serialization``
package imports its SSH, RSA, DSA, EC and DH modules too: about a third of a ``sluice submit``
call's CPU (issue 17). This module reads the key with ``X25519PublicKey.from_public_bytes``:

- an inline setting (``EnvPublicKey``, ``SLUICE_ENV_PUBKEY``): base64 of the 32 raw bytes;
- a PEM file (``keys/env-x25519.pub``) holding the one DER form an X25519 public key has
  (RFC 8410 §4: a 12-byte SubjectPublicKeyInfo header, the OID 1.3.101.110, then the 32 key
  bytes — what ``cryptography`` writes): the 32 bytes after that fixed header. Any other
  file (other armour, another key kind, extra data) goes to ``serialization``'s loader
  (:func:`agents.auth.node_keys.load_pem_public`), so every file loads to the same key, or is
  refused with the same error, as before.

Nothing here is cryptography: it compares bytes with a constant and hands the key bytes to
``cryptography``. :mod:`agents.auth.node_keys` (making and loading every key) re-exports it.
"""

from __future__ import annotations

import base64
import binascii
from pathlib import Path

from agents.auth.key_files import KeyFileError

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (issue 17)
if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PublicKey

    from streams.settings import Settings

__all__ = ["command_key_paths", "env_key_paths", "env_public_raw", "env_public_text", "inline_raw",
           "load_env_public", "pem_raw", "read_key_file", "x25519_pem_raw"]

X25519_SPKI_HEADER = bytes.fromhex("302a300506032b656e032100")
"""SEQUENCE { SEQUENCE { OID 1.3.101.110 }, BIT STRING (33 bytes, 0 unused bits) }: what
precedes the 32 key bytes in every X25519 SubjectPublicKeyInfo (RFC 8410 §4)."""


def _is_path(value: str) -> bool:
    """A public key setting that names a file: an absolute path — unless it is the base64
    text of a 32-byte key, which may itself begin with "/" (and names no existing file)."""
    if not value.startswith("/"):
        return False
    if Path(value).exists():
        return True
    try:
        return len(base64.b64decode(value, validate=True)) != 32
    except (ValueError, binascii.Error):
        return True


def inline_raw(value: str) -> bytes | None:
    """The raw bytes of an inline public key setting (None: the setting is a path or empty)."""
    if not value or _is_path(value):
        return None
    try:
        raw = base64.b64decode(value, validate=True)
    except (ValueError, binascii.Error) as exc:
        raise KeyFileError(f"public key {value[:20]!r}…: neither a path nor base64") from exc
    if len(raw) != 32:
        raise KeyFileError(f"public key {value[:20]!r}…: {len(raw)} bytes, not 32")
    return raw


def command_key_paths(settings: Settings) -> tuple[Path, Path]:
    """(private, public) of the command-signing pair."""
    keys = settings.home / "keys"
    public = settings.command_pubkey if _is_path(settings.command_pubkey) else ""
    return (Path(settings.command_key or keys / "command-ed25519.key"),
            Path(public or keys / "command-ed25519.pub"))


def env_key_paths(settings: Settings) -> tuple[Path, Path]:
    """(private, public) of the sealed-environment pair."""
    keys = settings.home / "keys"
    public = settings.env_pubkey if _is_path(settings.env_pubkey) else ""
    return (Path(settings.env_key or keys / "env-x25519.key"),
            Path(public or keys / "env-x25519.pub"))


def read_key_file(path: Path, private: bool) -> bytes:
    """The bytes of a key file (:class:`KeyFileError` when missing or unreadable, or, for a
    private key, readable by group or others)."""
    try:
        if private and path.stat().st_mode & 0o077:
            raise KeyFileError(f"{path}: a private key must not be readable by group or others "
                               "(chmod 600)")
        return path.read_bytes()
    except FileNotFoundError as exc:
        raise KeyFileError(f"{path}: no such key file") from exc
    except OSError as exc:
        raise KeyFileError(f"{path}: cannot be read: {exc.strerror or exc}") from exc


def pem_raw(pem: bytes, header: bytes, label: bytes = b"PUBLIC KEY") -> bytes | None:
    """The 32 key bytes of a PEM key (``label``: PUBLIC KEY or PRIVATE KEY) whose DER is
    ``header`` then 32 bytes (the one form an X25519 or Ed25519 key has, public or PKCS8
    private); None for anything else (left to ``serialization``'s loaders)."""
    lines = pem.strip().splitlines()
    if (len(lines) < 3 or lines[0].strip() != b"-----BEGIN " + label + b"-----"
            or lines[-1].strip() != b"-----END " + label + b"-----"):
        return None
    try:
        der = base64.b64decode(b"".join(line.strip() for line in lines[1:-1]), validate=True)
    except (ValueError, binascii.Error):
        return None
    if len(der) != len(header) + 32 or not der.startswith(header):
        return None
    return der[len(header):]


def x25519_pem_raw(pem: bytes) -> bytes | None:
    """The 32 key bytes of a PEM X25519 public key in its one DER form; None for anything
    else (left to ``serialization.load_pem_public_key``)."""
    return pem_raw(pem, X25519_SPKI_HEADER)


def env_public_text(settings: Settings) -> str:
    """The nodes' environment key as one line (base64 of its 32 raw bytes, as
    :func:`agents.auth.node_keys.public_text` writes it), read without ``cryptography`` when
    it is inline or a PEM file in its one DER form (a node daemon writes it into its jobs'
    client configuration: issue 17, a daemon's memory). :class:`KeyFileError` as
    :func:`load_env_public`."""
    return base64.b64encode(env_public_raw(settings)).decode()


def env_public_raw(settings: Settings) -> bytes:
    """The nodes' environment key's 32 raw bytes, read without ``cryptography`` when it is
    inline or a PEM file in its one DER form (what ``sluice submit`` seals to).
    :class:`KeyFileError` as :func:`load_env_public`."""
    raw = inline_raw(settings.env_pubkey)
    if raw is None:
        raw = x25519_pem_raw(read_key_file(env_key_paths(settings)[1], private=False))
    if raw is None:
        return load_env_public(settings).public_bytes_raw()  # another form of file
    return raw


def load_env_public(settings: Settings) -> X25519PublicKey:
    """The nodes' environment key: inline, or from its file (:class:`KeyFileError` when
    missing, unreadable or not an X25519 public key)."""
    from cryptography.hazmat.primitives.asymmetric.x25519 import (  # noqa: PLC0415 - when used
        X25519PublicKey,
    )

    raw = inline_raw(settings.env_pubkey)
    if raw is not None:
        return X25519PublicKey.from_public_bytes(raw)
    path = env_key_paths(settings)[1]
    raw = x25519_pem_raw(read_key_file(path, private=False))
    if raw is not None:
        return X25519PublicKey.from_public_bytes(raw)
    from agents.auth.node_keys import load_pem_public  # noqa: PLC0415 - another form of file

    key = load_pem_public(path, "x25519")
    assert isinstance(key, X25519PublicKey)
    return key
