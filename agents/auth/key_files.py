"""The error of a key file, apart from the keys (importing it loads no ``cryptography``)."""

from __future__ import annotations

__all__ = ["KeyFileError"]


class KeyFileError(RuntimeError):
    """A key file is missing, unreadable, too open, or not a key of the expected kind."""
