"""The inbox seal's HMAC, the library's keyed once per secret and copied per record, is
``hmac.new(secret, message, sha256).hexdigest()`` for every key length (shorter than, equal
to and longer than SHA-256's 64-byte block) and several secrets in turn."""

from __future__ import annotations

import hashlib
import hmac
import os

from agents.auth.seal import _mac, open_seal, seal_headers


def _reference(secret: bytes, origin: bytes, stamp: bytes, who: bytes, value: bytes) -> bytes:
    message = b"\0".join((origin, stamp, who, hashlib.sha256(value).digest()))
    return hmac.new(secret, message, hashlib.sha256).hexdigest().encode()


def test_the_seal_is_rfc_2104_hmac_sha256_for_every_key_length() -> None:
    for length in (0, 1, 31, 32, 63, 64, 65, 100, 128, 200):
        for _ in range(3):
            secret = os.urandom(length)
            value = os.urandom(length * 3)
            for origin, stamp, who in ((b"intake", b"1796675028563", b""),
                                       (b"health", b"1", b'{"user": "alice"}')):
                assert _mac(secret, origin, stamp, who, value) == _reference(
                    secret, origin, stamp, who, value)


def test_a_seal_opens_only_with_its_own_secret() -> None:
    one, other = os.urandom(32), os.urandom(32)
    value = b"\xc3\x01 a request"
    headers = seal_headers(one, "intake", 1_796_675_028_563, value)
    sealed = open_seal(one, value, headers)
    assert not isinstance(sealed, str) and sealed.stamp_ms == 1_796_675_028_563
    assert open_seal(other, value, headers) == "the seal does not verify"
    assert open_seal(one, value + b"!", headers) == "the seal does not verify"
