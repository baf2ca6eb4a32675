"""The keys a node daemon loads (``agents.auth.daemon_keys``): the same keys as
``serialization``'s loaders give, the same refusals, and a node's command check and sealed
environment loading neither ``serialization`` nor OpenSSL's ``hashlib`` (issue 17: a daemon's
memory)."""

from __future__ import annotations

import base64
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from agents.auth.daemon_keys import (
    ED25519_SPKI_HEADER,
    X25519_PKCS8_HEADER,
    CommandKey,
    load_command_key,
    load_env_private_key,
)
from agents.auth.headers import sha256_hex
from agents.auth.node_keys import (
    KeyFileError,
    command_key_paths,
    ensure_keys,
    env_key_paths,
    load_command_private,
    load_command_public,
    load_env_private,
    load_env_public,
    public_raw,
    public_text,
)
from agents.auth.public_keys import env_public_text, pem_raw
from agents.auth.sealed_env import open_env, seal_env
from streams.settings import Settings

RFC8032_KEY = bytes.fromhex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
RFC8032_SIG = bytes.fromhex(
    "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701c"
    "f9b46bd25bf5f0595bbe24655141438e7a100b")
"""RFC 8032 §7.1, TEST 1: the signature of the empty message."""


def _settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path, cluster="c1")


def _private_raw(key: X25519PrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw,
                             serialization.NoEncryption())


def test_the_rfc_8032_vector_verifies_and_nothing_near_it_does() -> None:
    key = CommandKey(RFC8032_KEY)
    assert key.verify(RFC8032_SIG, b"")
    assert not key.verify(RFC8032_SIG, b"x")
    assert not key.verify(RFC8032_SIG[:-1] + bytes([RFC8032_SIG[-1] ^ 1]), b"")
    assert not key.verify(RFC8032_SIG[:63], b"")
    assert not key.verify(RFC8032_SIG + b"\0", b"")


def test_the_command_key_file_and_inline_form_are_the_key_serialization_reads(
        tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    ensure_keys(settings)
    private = load_command_private(settings)
    key = load_command_key(settings)
    assert key.raw == public_raw(load_command_public(settings))
    inline = settings.with_(command_pubkey=base64.b64encode(key.raw).decode())
    assert load_command_key(inline).raw == key.raw
    for message in (b"", b"launch", bytes(range(256)) * 40):
        signature = private.sign(message)
        assert key.verify(signature, message)
        assert not key.verify(signature, message + b"!")
    ensure_keys(_settings(tmp_path / "b"))
    other = load_command_key(_settings(tmp_path / "b"))
    assert not other.verify(private.sign(b"launch"), b"launch")


def test_a_command_key_file_of_another_kind_or_form_is_refused_or_read_as_before(
        tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    path = command_key_paths(settings)[1]
    path.parent.mkdir(parents=True)
    path.write_bytes(X25519PrivateKey.generate().public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    assert pem_raw(path.read_bytes(), ED25519_SPKI_HEADER) is None
    with pytest.raises(KeyFileError, match="not an ed25519 public key"):
        load_command_key(settings)
    path.write_text("not a key\n")
    with pytest.raises(KeyFileError, match="not a PEM public key"):
        load_command_key(settings)
    path.unlink()
    with pytest.raises(KeyFileError, match="no such key file"):
        load_command_key(settings)
    with pytest.raises(KeyFileError, match="neither a path nor base64"):
        load_command_key(settings.with_(command_pubkey="not base64!"))
    ensure_keys(settings)
    raw = load_command_key(settings).raw
    assert pem_raw(path.read_bytes(), ED25519_SPKI_HEADER) == raw
    path.write_bytes(b"a line before the block\n" + path.read_bytes())  # serialization reads it
    assert pem_raw(path.read_bytes(), ED25519_SPKI_HEADER) is None
    assert load_command_key(settings).raw == raw


def test_the_environment_key_is_the_key_serialization_reads_and_opens_what_was_sealed(
        tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    ensure_keys(settings, command=False)
    private_path = env_key_paths(settings)[0]
    assert pem_raw(private_path.read_bytes(), X25519_PKCS8_HEADER, b"PRIVATE KEY") is not None
    key = load_env_private_key(settings)
    assert key == _private_raw(load_env_private(settings))
    blob = seal_env({"A": "1"}, load_env_public(settings).public_bytes_raw(), "c1", "alice")
    assert open_env(blob, key, "c1", "alice") == {"A": "1"}
    private_path.chmod(0o640)
    with pytest.raises(KeyFileError, match="chmod 600"):
        load_env_private_key(settings)
    private_path.write_bytes(Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    private_path.chmod(0o600)
    assert pem_raw(private_path.read_bytes(), X25519_PKCS8_HEADER, b"PRIVATE KEY") is None
    with pytest.raises(KeyFileError, match="not an x25519 private key"):
        load_env_private_key(settings)
    private_path.write_text("not a key\n")
    with pytest.raises(KeyFileError, match="not a PEM private key"):
        load_env_private_key(settings)


def test_the_environment_key_text_is_what_cryptography_gives(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    ensure_keys(settings, command=False)
    text = public_text(load_env_public(settings))
    assert env_public_text(settings) == text
    assert env_public_text(settings.with_(env_pubkey=text)) == text


def test_the_replay_digest_is_hashlib_s_sha256() -> None:
    import hashlib

    for value in (b"", b"abc", bytes(range(256)) * 100):
        assert sha256_hex(value) == hashlib.sha256(value).hexdigest()


def test_a_node_s_command_check_and_sealed_environment_load_neither_serialization_nor_openssl(
        tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    ensure_keys(settings)
    from agents.auth.command_signature import CommandSigner

    header = CommandSigner(load_command_private(settings), "c1", 60).header(
        "sNODE", "sRUN", b"launch", 1_800_000_000_000)[1]
    blob = seal_env({"A": "1"}, load_env_public(settings).public_bytes_raw(), "c1", "alice")
    probe = (
        "import sys\nfrom pathlib import Path\nfrom streams.settings import Settings\n"
        "import agents.node.daemon, agents.node.runs\n"
        "from agents.auth.daemon_keys import load_command_key\n"
        "from agents.auth.command_signature import CommandChecker\n"
        "from agents.node.job_env import open_job_env\n"
        f"s = Settings(home=Path({str(tmp_path)!r}), cluster='c1')\n"
        "c = CommandChecker(lambda: load_command_key(s), 'c1', 'sNODE', s.home / 'seen')\n"
        f"print(c.check(b'launch', {header!r}, 'sNODE', 'sRUN', 1_800_000_000_000))\n"
        f"print(c.check(b'launch', {header!r}, 'sNODE', 'sRUN', 1_800_000_000_001)[0])\n"
        f"print(open_job_env(s, {{'sealed_env': {blob!r}, 'user': 'alice'}})['A'])\n"
        "print(sorted(m for m in ('cryptography', 'hashlib', '_hashlib', 'hmac')\n"
        "             if m in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True)
    assert done.stdout.split("\n")[:4] == ["None", "CommandReplayed", "1", "[]"]
