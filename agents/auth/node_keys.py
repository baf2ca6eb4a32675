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
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import os
import tempfile
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey

from agents.auth.key_files import KeyFileError
from streams.settings import Settings

__all__ = ["KeyFileError", "command_key_paths", "ensure_keys", "env_key_paths",
           "load_command_private", "load_command_public", "load_env_private", "load_env_public",
           "public_text"]


def public_text(key: Ed25519PublicKey | X25519PublicKey) -> str:
    """A public key as one line: base64 of its raw bytes."""
    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return base64.b64encode(raw).decode()


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


def _inline(value: str) -> bytes | None:
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


def _read(path: Path, private: bool) -> bytes:
    try:
        if private and path.stat().st_mode & 0o077:
            raise KeyFileError(f"{path}: a private key must not be readable by group or others "
                            "(chmod 600)")
        return path.read_bytes()
    except FileNotFoundError as exc:
        raise KeyFileError(f"{path}: no such key file") from exc
    except OSError as exc:
        raise KeyFileError(f"{path}: cannot be read: {exc.strerror or exc}") from exc


def _load_private(path: Path, kind: str) -> Ed25519PrivateKey | X25519PrivateKey:
    try:
        key = serialization.load_pem_private_key(_read(path, True), password=None)
    except ValueError as exc:
        raise KeyFileError(f"{path}: not a PEM private key") from exc
    wanted = Ed25519PrivateKey if kind == "ed25519" else X25519PrivateKey
    if not isinstance(key, wanted):
        raise KeyFileError(f"{path}: not an {kind} private key")
    return key


def _load_public(path: Path, kind: str) -> Ed25519PublicKey | X25519PublicKey:
    try:
        key = serialization.load_pem_public_key(_read(path, False))
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
    raw = _inline(settings.command_pubkey)
    if raw is not None:
        return Ed25519PublicKey.from_public_bytes(raw)
    key = _load_public(command_key_paths(settings)[1], "ed25519")
    assert isinstance(key, Ed25519PublicKey)
    return key


def load_env_private(settings: Settings) -> X25519PrivateKey:
    key = _load_private(env_key_paths(settings)[0], "x25519")
    assert isinstance(key, X25519PrivateKey)
    return key


def load_env_public(settings: Settings) -> X25519PublicKey:
    raw = _inline(settings.env_pubkey)
    if raw is not None:
        return X25519PublicKey.from_public_bytes(raw)
    key = _load_public(env_key_paths(settings)[1], "x25519")
    assert isinstance(key, X25519PublicKey)
    return key
