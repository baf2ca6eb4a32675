"""MUNGE credentials through libmunge (Debian's ``libmunge2``, the library Slurm's auth/munge uses).

``encode(payload)`` asks the local ``munged`` for a credential carrying the caller's uid and gid
(taken by munged from the kernel, so a user cannot claim another) and ``payload``; ``decode``
asks munged to check one and returns what it proves. munged itself refuses a credential that is
expired, rewound, or decoded twice (replayed). No cryptography is done here.

Errors: :class:`MungeError` with ``code`` (libmunge's ``munge_err_t``) and the library's message.
"""

from __future__ import annotations

import ctypes

from schemas.frozen_record import FrozenSlotsRecord

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (issue 17)
if TYPE_CHECKING:
    from typing import Final

__all__ = ["EXPIRED", "REPLAYED", "REWOUND", "SOCKET", "MungeCredential", "MungeError",
           "available", "decode", "encode"]

_OPT_TTL: Final = 4
_OPT_ADDR4: Final = 5
_OPT_ENCODE_TIME: Final = 6
_OPT_SOCKET: Final = 8
SOCKET: Final = 6
EXPIRED: Final = 15
REWOUND: Final = 16
REPLAYED: Final = 17


class MungeError(RuntimeError):
    """libmunge refused: ``code`` is its error number."""

    def __init__(self, code: int, message: str, credential: MungeCredential | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.credential = credential
        """For a replayed credential: what it proves (munged still tells)."""


class MungeCredential(FrozenSlotsRecord):
    """What a valid credential proves (a frozen record: schemas/frozen_record.py); ``host`` is
    the IPv4 address of the host the credential was made on (munged's ``ADDR4``)."""

    __slots__ = ("encode_time", "gid", "host", "payload", "ttl", "uid")
    __match_args__ = ("uid", "gid", "payload", "encode_time", "ttl", "host")
    uid: int
    gid: int
    payload: bytes
    encode_time: int
    ttl: int
    host: str

    def __init__(self, uid: int, gid: int, payload: bytes, encode_time: int,
                 ttl: int, host: str = "") -> None:
        object.__setattr__(self, "uid", uid)
        object.__setattr__(self, "gid", gid)
        object.__setattr__(self, "payload", payload)
        object.__setattr__(self, "encode_time", encode_time)
        object.__setattr__(self, "ttl", ttl)
        object.__setattr__(self, "host", host)


_lib: ctypes.CDLL | None = None
_libc = ctypes.CDLL(None)
_libc.free.argtypes = [ctypes.c_void_p]


def _library() -> ctypes.CDLL:
    global _lib  # noqa: PLW0603 -- loaded once, on first use
    if _lib is None:
        try:  # the soname first: find_library runs ldconfig, a process per CLI call
            lib = ctypes.CDLL("libmunge.so.2")
        except OSError:
            from ctypes.util import find_library  # noqa: PLC0415 - only without the soname

            try:
                lib = ctypes.CDLL(find_library("munge") or "libmunge.so")
            except OSError as exc:
                reason = f"libmunge is not installed ({exc}); apt-get install munge"
                raise MungeError(-1, reason) from exc
        lib.munge_ctx_create.restype = ctypes.c_void_p
        lib.munge_ctx_destroy.argtypes = [ctypes.c_void_p]
        lib.munge_ctx_strerror.argtypes = [ctypes.c_void_p]
        lib.munge_ctx_strerror.restype = ctypes.c_char_p
        lib.munge_strerror.argtypes = [ctypes.c_int]
        lib.munge_strerror.restype = ctypes.c_char_p
        lib.munge_encode.argtypes = [ctypes.POINTER(ctypes.c_char_p), ctypes.c_void_p,
                                     ctypes.c_char_p, ctypes.c_int]
        lib.munge_decode.argtypes = [ctypes.c_char_p, ctypes.c_void_p,
                                     ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_int),
                                     ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(ctypes.c_uint)]
        _lib = lib
    return _lib


def available() -> bool:
    """True when libmunge can be loaded."""
    try:
        _library()
    except MungeError:
        return False
    return True


def _context(lib: ctypes.CDLL, socket: str) -> int:
    ctx = lib.munge_ctx_create()
    if not ctx:
        raise MungeError(5, "munge_ctx_create: out of memory")
    if socket:
        code = lib.munge_ctx_set(ctypes.c_void_p(ctx), _OPT_SOCKET, socket.encode())
        if code:
            lib.munge_ctx_destroy(ctx)
            raise MungeError(code, f"munge socket {socket}: {lib.munge_strerror(code).decode()}")
    return int(ctx)


def _error(lib: ctypes.CDLL, ctx: int, code: int) -> MungeError:
    text = lib.munge_ctx_strerror(ctypes.c_void_p(ctx)) or lib.munge_strerror(code)
    return MungeError(code, text.decode(errors="replace"))


def encode(payload: bytes, socket: str = "") -> str:
    """A credential for the calling process's uid/gid carrying ``payload`` (munged's TTL)."""
    lib = _library()
    ctx = _context(lib, socket)
    try:
        cred = ctypes.c_char_p()
        code = lib.munge_encode(ctypes.byref(cred), ctypes.c_void_p(ctx), payload, len(payload))
        if code:
            raise _error(lib, ctx, code)
        assert cred.value is not None
        text = cred.value.decode()
        _libc.free(ctypes.cast(cred, ctypes.c_void_p))
        return text
    finally:
        lib.munge_ctx_destroy(ctypes.c_void_p(ctx))


def decode(credential: str, socket: str = "") -> MungeCredential:
    """What ``credential`` proves; :class:`MungeError` when munged refuses it."""
    lib = _library()
    ctx = _context(lib, socket)
    buf, length = ctypes.c_void_p(), ctypes.c_int()
    uid, gid = ctypes.c_uint(), ctypes.c_uint()
    try:
        code = lib.munge_decode(credential.encode(), ctypes.c_void_p(ctx), ctypes.byref(buf),
                                ctypes.byref(length), ctypes.byref(uid), ctypes.byref(gid))
        payload = ctypes.string_at(buf, length.value) if buf.value else b""
        if buf.value:
            _libc.free(buf)
        encoded, ttl = ctypes.c_long(), ctypes.c_int()
        lib.munge_ctx_get(ctypes.c_void_p(ctx), _OPT_ENCODE_TIME, ctypes.byref(encoded))
        lib.munge_ctx_get(ctypes.c_void_p(ctx), _OPT_TTL, ctypes.byref(ttl))
        addr = (ctypes.c_ubyte * 4)()
        lib.munge_ctx_get(ctypes.c_void_p(ctx), _OPT_ADDR4, ctypes.byref(addr))
        proven = MungeCredential(uid.value, gid.value, payload, encoded.value, ttl.value,
                                 ".".join(str(b) for b in addr) if any(addr) else "")
        if code:
            error = _error(lib, ctx, code)
            if code == REPLAYED:
                error.credential = proven
            raise error
        return proven
    finally:
        lib.munge_ctx_destroy(ctypes.c_void_p(ctx))
