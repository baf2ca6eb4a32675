"""The MUNGE binding's SHA-256 is the same whichever library computes it
(``agents.auth.headers.sha256_hex``: cryptography when loaded, else hashlib)."""

from __future__ import annotations

import hashlib
import subprocess
import sys

from cryptography.hazmat.primitives import hashes  # noqa: F401 - loaded: binding uses it

from agents.auth.headers import binding, sha256_hex

VALUE = b"\xc3\x01 a request value \x00\xff" * 7


def test_the_digest_is_hashlib_s_with_cryptography_loaded() -> None:
    assert "cryptography.hazmat.primitives.hashes" in sys.modules
    assert sha256_hex(VALUE) == hashlib.sha256(VALUE).hexdigest()
    assert sha256_hex(b"") == hashlib.sha256(b"").hexdigest()


def test_a_process_without_cryptography_binds_the_same_bytes() -> None:
    probe = ("import sys\nfrom agents.auth.headers import binding\n"
             f"print(binding('sREQ', {VALUE!r}).decode())\n"
             "print('cryptography' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True)
    assert done.stdout.split("\n")[:2] == [binding("sREQ", VALUE).decode(), "False"]
