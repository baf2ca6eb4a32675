"""libsodium's sealed box and Ed25519 verification, bound with ``ctypes`` (issue 17).

Three whole libsodium operations, nothing composed here:

- :func:`box_seal` / :func:`box_seal_open`: ``crypto_box_seal`` / ``crypto_box_seal_open``,
  an anonymous sealed box (X25519 with a fresh ephemeral key, XSalsa20-Poly1305);
- :func:`public_of`: ``crypto_scalarmult_base``, the X25519 public key of a private one;
- :func:`verify_detached`: ``crypto_sign_verify_detached``, an Ed25519 (RFC 8032) check.

Why not ``cryptography`` for these: loading it costs a ``sluice submit`` 13 to 15 ms (its Rust
core, ``typing``, the OpenSSL backend), a third of the call, and a node daemon 10 MiB once its
first job arrives. ``ctypes`` is loaded already on those paths (the MUNGE binding), and
libsodium loads in about 0.2 ms. Why not PyNaCl or pysodium (the libsodium bindings on PyPI):
PyNaCl's import is 14.8 ms (cffi and every binding module), pysodium's 16 ms (it runs
``ctypes.util.find_library``, a subprocess). The library is the system's (Debian
``libsodium23``), loaded by its soname as :mod:`agents.auth.munge` loads libmunge.
:func:`available` says whether it is there; callers fall back to ``cryptography`` where a
construction of it exists (docs/security.md).
"""

from __future__ import annotations

import ctypes

__all__ = ["SodiumError", "available", "box_seal", "box_seal_open", "preload", "public_of",
           "verify_detached"]

SEAL_OVERHEAD = 48
"""``crypto_box_SEALBYTES``: the ephemeral public key (32) and the Poly1305 tag (16)."""
KEY_BYTES = 32
"""An X25519 or Ed25519 key (public or private seed for X25519), in bytes."""
SIGNATURE_BYTES = 64
"""An Ed25519 signature."""

_SONAMES = ("libsodium.so.23", "libsodium.so.26", "libsodium.so")
_lib: ctypes.CDLL | None = None
_missing: str = ""


class SodiumError(RuntimeError):
    """libsodium is not installed, or refused to start."""


def _bind(lib: ctypes.CDLL) -> ctypes.CDLL:
    buf, ull = ctypes.c_char_p, ctypes.c_ulonglong
    lib.sodium_init.argtypes = []
    lib.crypto_box_seal.argtypes = [buf, buf, ull, buf]
    lib.crypto_box_seal_open.argtypes = [buf, buf, ull, buf, buf]
    lib.crypto_scalarmult_base.argtypes = [buf, buf]
    lib.crypto_sign_verify_detached.argtypes = [buf, buf, ull, buf]
    for name in ("sodium_init", "crypto_box_seal", "crypto_box_seal_open",
                 "crypto_scalarmult_base", "crypto_sign_verify_detached"):
        getattr(lib, name).restype = ctypes.c_int
    if lib.sodium_init() < 0:  # 0 first time, 1 when already initialised
        raise SodiumError("sodium_init failed")
    return lib


def _library() -> ctypes.CDLL:
    global _lib, _missing  # noqa: PLW0603 -- loaded once, on first use
    if _lib is None:
        if _missing:
            raise SodiumError(_missing)
        errors = []
        for soname in _SONAMES:
            try:
                _lib = _bind(ctypes.CDLL(soname))
                break
            except OSError as exc:
                errors.append(str(exc))
            except AttributeError as exc:  # a libsodium without one of the five functions
                errors.append(f"{soname}: {exc}")
        else:
            _missing = ("libsodium is not installed (apt-get install libsodium23): "
                        + "; ".join(errors))
            raise SodiumError(_missing)
    return _lib


def preload() -> None:
    """Load libsodium now if it can be, for the processes this one forks (the command server's
    calls: ``cli/command_server.py``), which would each load it again; a failure is not kept, so
    a later call tries again (and says why) as a fresh process would."""
    global _missing  # noqa: PLW0603 -- forgotten: each call tries again, as the CLI would
    if not available():
        _missing = ""


def available() -> bool:
    """True when libsodium can be loaded."""
    try:
        _library()
    except SodiumError:
        return False
    return True


def _key(key: bytes, what: str) -> bytes:
    if len(key) != KEY_BYTES:
        raise ValueError(f"{what} must be {KEY_BYTES} bytes, not {len(key)}")
    return bytes(key)


def box_seal(message: bytes, public_key: bytes) -> bytes:
    """``message`` sealed to the X25519 ``public_key`` (``crypto_box_seal``): only the holder
    of its private key opens it; 48 bytes longer than ``message``."""
    out = ctypes.create_string_buffer(len(message) + SEAL_OVERHEAD)
    if _library().crypto_box_seal(out, message, len(message), _key(public_key, "a public key")):
        raise SodiumError("crypto_box_seal failed")
    return out.raw


def box_seal_open(sealed: bytes, public_key: bytes, private_key: bytes) -> bytes | None:
    """The message of a sealed box, or None when it does not open with this key pair (another
    key, altered, truncated)."""
    if len(sealed) < SEAL_OVERHEAD:
        return None
    out = ctypes.create_string_buffer(max(len(sealed) - SEAL_OVERHEAD, 1))
    failed = _library().crypto_box_seal_open(out, sealed, len(sealed),
                                             _key(public_key, "a public key"),
                                             _key(private_key, "a private key"))
    return None if failed else out.raw[:len(sealed) - SEAL_OVERHEAD]


def public_of(private_key: bytes) -> bytes:
    """The X25519 public key of ``private_key`` (``crypto_scalarmult_base``)."""
    out = ctypes.create_string_buffer(KEY_BYTES)
    if _library().crypto_scalarmult_base(out, _key(private_key, "a private key")):
        raise SodiumError("crypto_scalarmult_base failed")
    return out.raw


def verify_detached(signature: bytes, message: bytes, public_key: bytes) -> bool:
    """True when ``signature`` is ``public_key``'s Ed25519 signature of ``message``."""
    if len(signature) != SIGNATURE_BYTES:
        return False
    failed: int = _library().crypto_sign_verify_detached(
        signature, message, len(message), _key(public_key, "an Ed25519 public key"))
    return failed == 0
