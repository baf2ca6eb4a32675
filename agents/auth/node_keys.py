"""The node side's two key pairs (issue 13, docs/security.md), made with ``cryptography``.

- command signing, Ed25519: private ``$SLUICE_HOME/keys/command-ed25519.key`` (mode 0600,
  ``SLUICE_COMMAND_KEY``), held by the shard scheduler (worker); public
  ``keys/command-ed25519.pub`` (``SLUICE_COMMAND_PUBKEY``, ``CommandPublicKey``), on the nodes;
- sealed environments, X25519: private ``keys/env-x25519.key`` (0600, ``SLUICE_ENV_KEY``),
  held by the node daemons; public ``keys/env-x25519.pub`` (``SLUICE_ENV_PUBKEY``,
  ``EnvPublicKey``), for the clients.

Keys are PEM files (PKCS8 / SubjectPublicKeyInfo). A public key setting is a file path
(starting with ``/``) or the key itself, base64 of its 32 raw bytes (:func:`public_text`, what
``sluice up`` writes into the client configuration, so any user can seal without reading a
file under ``SLUICE_HOME``). :func:`ensure_keys` makes what is missing
(``sluice up``, and the worker for its signing key on first start), never replacing a key.
Where the files are, and the nodes' environment key as a client loads it (without
``serialization``), are :mod:`agents.auth.public_keys`, re-exported here.
"""

from __future__ import annotations

import base64
import contextlib
import os
import tempfile
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey

from agents.auth.key_files import KeyFileError
from agents.auth.public_keys import (
    command_key_paths,
    env_key_paths,
    inline_raw,
    load_env_public,
    read_key_file,
)
from streams.settings import Settings

__all__ = ["KeyFileError", "command_key_paths", "ensure_keys", "env_key_paths",
           "load_command_private", "load_command_public", "load_env_private", "load_env_public",
           "load_pem_public", "public_raw", "public_text", "read_key_file"]


def public_raw(key: Ed25519PublicKey | X25519PublicKey) -> bytes:
    """A public key's 32 raw bytes."""
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def public_text(key: Ed25519PublicKey | X25519PublicKey) -> str:
    """A public key as one line: base64 of its raw bytes."""
    return base64.b64encode(public_raw(key)).decode()


def _write_new(path: Path, data: bytes, mode: int) -> None:
    """Write ``data`` whole, then link it into place (a racing writer's key wins, none is torn)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".key-")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        with contextlib.suppress(FileExistsError):
            os.link(tmp, path)
    finally:
        Path(tmp).unlink()


def _make_pair(private_path: Path, public_path: Path, kind: str) -> None:
    if private_path.exists():
        if not public_path.exists():  # derive a lost public key again
            _write_new(public_path, _public_pem(_load_private(private_path, kind).public_key()),
                       0o644)
        return
    new: Ed25519PrivateKey | X25519PrivateKey = (
        Ed25519PrivateKey.generate() if kind == "ed25519" else X25519PrivateKey.generate())
    pem = new.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    _write_new(private_path, pem, 0o600)
    key = _load_private(private_path, kind)  # a racing writer's key may have won
    with contextlib.suppress(FileNotFoundError):
        public_path.unlink()
    _write_new(public_path, _public_pem(key.public_key()), 0o644)


def _public_pem(key: Ed25519PublicKey | X25519PublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.PEM,
                            serialization.PublicFormat.SubjectPublicKeyInfo)


def ensure_keys(settings: Settings, command: bool = True, env: bool = True) -> None:
    """Make the missing key pairs (never replacing one that exists)."""
    if command:
        _make_pair(*command_key_paths(settings), "ed25519")
    if env:
        _make_pair(*env_key_paths(settings), "x25519")


def _load_private(path: Path, kind: str) -> Ed25519PrivateKey | X25519PrivateKey:
    try:
        key = serialization.load_pem_private_key(read_key_file(path, private=True), password=None)
    except ValueError as exc:
        raise KeyFileError(f"{path}: not a PEM private key") from exc
    wanted = Ed25519PrivateKey if kind == "ed25519" else X25519PrivateKey
    if not isinstance(key, wanted):
        raise KeyFileError(f"{path}: not an {kind} private key")
    return key


def load_pem_public(path: Path, kind: str) -> Ed25519PublicKey | X25519PublicKey:
    """The public key in the PEM file ``path``, which must be of ``kind`` (ed25519, x25519)."""
    try:
        key = serialization.load_pem_public_key(read_key_file(path, private=False))
    except ValueError as exc:
        raise KeyFileError(f"{path}: not a PEM public key") from exc
    wanted = Ed25519PublicKey if kind == "ed25519" else X25519PublicKey
    if not isinstance(key, wanted):
        raise KeyFileError(f"{path}: not an {kind} public key")
    return key


def load_command_private(settings: Settings) -> Ed25519PrivateKey:
    key = _load_private(command_key_paths(settings)[0], "ed25519")
    assert isinstance(key, Ed25519PrivateKey)
    return key


def load_command_public(settings: Settings) -> Ed25519PublicKey:
    raw = inline_raw(settings.command_pubkey)
    if raw is not None:
        return Ed25519PublicKey.from_public_bytes(raw)
    key = load_pem_public(command_key_paths(settings)[1], "ed25519")
    assert isinstance(key, Ed25519PublicKey)
    return key


def load_env_private(settings: Settings) -> X25519PrivateKey:
    key = _load_private(env_key_paths(settings)[0], "x25519")
    assert isinstance(key, X25519PrivateKey)
    return key
