"""The two forms of a sealed environment (SLX2: libsodium's sealed box; SLX1: cryptography's
X25519 + HKDF + ChaCha20-Poly1305) and the libsodium binding under them
(``agents.auth.sodium``), against ``cryptography``'s own keys and signatures."""

from __future__ import annotations

import base64
import json

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from agents.auth import sodium
from agents.auth.daemon_keys import CommandKey
from agents.auth.sealed_env import SealedEnvError, open_env, seal_env

ENV = {"API_KEY": "s3cr3t-value", "PATH": "/usr/bin", "EMPTY": "", "UNICODE": "é\u2603"}


@pytest.fixture
def keys() -> tuple[bytes, bytes]:
    private = X25519PrivateKey.generate()
    return private.private_bytes_raw(), private.public_key().public_bytes_raw()


def _blob(text: str) -> bytes:
    return base64.b64decode(text)


def test_libsodium_is_installed_where_the_tests_run() -> None:
    assert sodium.available()  # .ci/run installs libsodium23; without it SLX1 is written


def test_an_slx2_environment_opens_only_for_its_user_cluster_and_key(
        keys: tuple[bytes, bytes]) -> None:
    private, public = keys
    text = seal_env(ENV, public, "c1", "alice")
    blob = _blob(text)
    assert blob.startswith(b"SLX2") and b"s3cr3t" not in blob and b"alice" not in blob
    assert open_env(text, private, "c1", "alice") == ENV
    for cluster, user in (("c1", "mallory"), ("c2", "alice"), ("c1", "alice\0"), ("", "")):
        with pytest.raises(SealedEnvError, match="does not open"):
            open_env(text, private, cluster, user)
    with pytest.raises(SealedEnvError, match="does not open"):
        open_env(text, X25519PrivateKey.generate().private_bytes_raw(), "c1", "alice")
    for cut in (1, 17, len(blob) - 4 - 1):
        with pytest.raises(SealedEnvError):
            open_env(base64.b64encode(blob[:-cut]).decode(), private, "c1", "alice")
    flipped = base64.b64encode(blob[:20] + bytes([blob[20] ^ 1]) + blob[21:]).decode()
    with pytest.raises(SealedEnvError, match="does not open"):
        open_env(flipped, private, "c1", "alice")
    assert seal_env(ENV, public, "c1", "alice") != text  # a fresh ephemeral key every time


def test_a_client_without_libsodium_writes_slx1_and_a_node_opens_both(
        keys: tuple[bytes, bytes], monkeypatch: pytest.MonkeyPatch) -> None:
    private, public = keys
    with monkeypatch.context() as patched:
        patched.setattr(sodium, "available", lambda: False)
        text = seal_env(ENV, public, "c1", "alice")
        assert _blob(text).startswith(b"SLX1")
        assert open_env(text, private, "c1", "alice") == ENV
    assert open_env(text, private, "c1", "alice") == ENV
    with pytest.raises(SealedEnvError, match="does not open"):
        open_env(text, private, "c1", "mallory")


@pytest.mark.parametrize("body", [
    b"not json", b"[1, 2]", b'{"cluster": "c1", "user": "alice"}',
    b'{"cluster": "c1", "user": "alice", "env": ["A"]}', b'{"env": {"A": "1"}}', b"",
])
def test_an_slx2_box_sealed_by_someone_else_than_a_client_is_refused(
        keys: tuple[bytes, bytes], body: bytes) -> None:
    """Anyone holding the public key can seal a box: what is inside is checked, not trusted."""
    private, public = keys
    text = base64.b64encode(b"SLX2" + sodium.box_seal(body, public)).decode()
    with pytest.raises(SealedEnvError):
        open_env(text, private, "c1", "alice")


def test_values_that_are_not_strings_become_strings_and_nothing_else_is_accepted(
        keys: tuple[bytes, bytes]) -> None:
    private, public = keys
    body = json.dumps({"cluster": "c1", "user": "alice", "env": {"N": 1}}).encode()
    text = base64.b64encode(b"SLX2" + sodium.box_seal(body, public)).decode()
    assert open_env(text, private, "c1", "alice") == {"N": "1"}
    assert open_env("", private, "c1", "alice") == {}
    for bad in ("SLX2", "U0xYMg==", "not base64!", base64.b64encode(b"SLX3" + bytes(80)).decode()):
        with pytest.raises(SealedEnvError):
            open_env(bad, private, "c1", "alice")


def test_a_public_key_no_exchange_works_with_is_a_clear_error() -> None:
    with pytest.raises(SealedEnvError, match="cannot seal"):
        seal_env(ENV, bytes(32), "c1", "alice")  # the all-zero (low-order) point
    with pytest.raises(ValueError, match="32 bytes"):
        seal_env(ENV, bytes(31), "c1", "alice")


def test_the_binding_agrees_with_cryptography(keys: tuple[bytes, bytes]) -> None:
    private, public = keys
    assert sodium.public_of(private) == public
    assert sodium.box_seal_open(sodium.box_seal(b"m\0x", public), public, private) == b"m\0x"
    assert sodium.box_seal_open(b"short", public, private) is None
    signer = Ed25519PrivateKey.generate()
    raw = signer.public_key().public_bytes_raw()
    signature = signer.sign(b"a command")
    assert sodium.verify_detached(signature, b"a command", raw)
    assert not sodium.verify_detached(signature, b"a commanD", raw)
    assert not sodium.verify_detached(signature[:-1], b"a command", raw)
    assert not sodium.verify_detached(bytes(64), b"a command", raw)


def test_a_command_key_verifies_alike_with_and_without_libsodium(
        monkeypatch: pytest.MonkeyPatch) -> None:
    signer = Ed25519PrivateKey.generate()
    raw = signer.public_key().public_bytes_raw()
    signature = signer.sign(b"launch")
    with_sodium = CommandKey(raw)
    monkeypatch.setattr(sodium, "available", lambda: False)
    without = CommandKey(raw)
    for key in (with_sodium, without):
        assert key.verify(signature, b"launch")
        assert not key.verify(signature, b"launcH")
        assert not key.verify(b"", b"launch")
