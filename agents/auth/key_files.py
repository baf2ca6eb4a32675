"""Key file settings and errors, apart from the keys (importing it loads no ``cryptography``).

A public key setting (``SLUICE_COMMAND_PUBKEY``, ``SLUICE_ENV_PUBKEY``) is a file path (starting
with ``/``) or the key itself, base64 of its 32 raw bytes; :func:`inline_public_key` tells which.
The keys themselves are :mod:`agents.auth.node_keys`'.
"""

from __future__ import annotations

import base64
import binascii
from pathlib import Path

from streams.settings import Settings

__all__ = ["KeyFileError", "command_key_paths", "env_key_paths", "inline_public_key",
           "is_path_setting"]


class KeyFileError(RuntimeError):
    """A key file is missing, unreadable, too open, or not a key of the expected kind."""


def is_path_setting(value: str) -> bool:
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


def inline_public_key(value: str) -> bytes | None:
    """The raw bytes of an inline public key setting (None: the setting is a path or empty)."""
    if not value or is_path_setting(value):
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
    public = settings.command_pubkey if is_path_setting(settings.command_pubkey) else ""
    return (Path(settings.command_key or keys / "command-ed25519.key"),
            Path(public or keys / "command-ed25519.pub"))


def env_key_paths(settings: Settings) -> tuple[Path, Path]:
    """(private, public) of the sealed-environment pair."""
    keys = settings.home / "keys"
    public = settings.env_pubkey if is_path_setting(settings.env_pubkey) else ""
    return (Path(settings.env_key or keys / "env-x25519.key"),
            Path(public or keys / "env-x25519.pub"))
