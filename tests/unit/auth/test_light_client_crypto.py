"""The client's light sealing and token signing (issue 17) give what ``cryptography`` and PyJWT
give: the same HKDF bytes, sealed environments the nodes open, the same key read from every
form of the setting, and tokens byte-equal to ``jwt.encode``'s."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import jwt
import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from agents.auth import env_seal
from agents.auth.env_seal import KeyFileError, env_public_raw, hkdf_sha256, seal_raw
from agents.auth.jwt_sign import issue
from agents.auth.jwt_token import verify
from agents.auth.node_keys import ensure_keys, load_env_private, load_env_public, public_text
from agents.auth.sealed_env import SealedEnvError, open_env
from streams.settings import Settings


@pytest.mark.parametrize("length", [1, 16, 32, 33, 64, 100])
def test_hkdf_sha256_gives_cryptography_s_bytes(length: int) -> None:
    secret, salt, info = os.urandom(32), os.urandom(64), b"sluice-env/v1"
    expected = HKDF(algorithm=hashes.SHA256(), length=length, salt=salt, info=info).derive(secret)
    assert hkdf_sha256(secret, salt, info, length) == expected


def test_a_light_sealed_environment_opens_on_the_nodes_and_only_there(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, cluster="c1")
    ensure_keys(settings)
    raw = env_public_raw(settings)
    assert raw == load_env_public(settings).public_bytes_raw()
    env = {"API_KEY": "s3cr3t", "PATH": "/usr/bin", "EMPTY": ""}
    blob = seal_raw(env, raw, "c1", "alice")
    assert b"s3cr3t" not in base64.b64decode(blob)
    assert open_env(blob, load_env_private(settings), "c1", "alice") == env
    with pytest.raises(SealedEnvError):
        open_env(blob, load_env_private(settings), "c1", "mallory")


def test_the_public_classes_seal_the_same_when_the_compiled_names_are_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = Settings(home=tmp_path, cluster="c1")
    ensure_keys(settings)
    monkeypatch.setattr(env_seal, "_compiled", object)  # a release without those names
    (generate, _peer), _aead = env_seal._primitives()
    assert generate.__self__ is X25519PrivateKey  # the public classes answered
    blob = seal_raw({"A": "1"}, load_env_public(settings).public_bytes_raw(), "c1", "u")
    assert open_env(blob, load_env_private(settings), "c1", "u") == {"A": "1"}


def test_the_nodes_key_is_read_alike_from_its_file_its_text_or_another_path(
    tmp_path: Path,
) -> None:
    settings = Settings(home=tmp_path, cluster="c1")
    assert env_public_raw(settings) is None  # no key: the values travel in the clear
    ensure_keys(settings)
    raw = load_env_public(settings).public_bytes_raw()
    inline = Settings(home=tmp_path / "none", env_pubkey=public_text(load_env_public(settings)))
    assert env_public_raw(inline) == raw
    der = tmp_path / "env.der.pem"  # a PEM the fixed prefix does not match: cryptography reads it
    der.write_bytes(load_env_public(settings).public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo) + b"\n\n")
    assert env_public_raw(Settings(home=tmp_path / "none", env_pubkey=str(der))) == raw
    other = tmp_path / "x.pem"
    other.write_bytes(X25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    with pytest.raises(KeyFileError, match="not a PEM public key"):
        env_public_raw(Settings(home=tmp_path / "none", env_pubkey=str(other)))
    with pytest.raises(KeyFileError, match="no such key file"):
        env_public_raw(Settings(home=tmp_path / "none", env_pubkey=str(tmp_path / "gone.pem")))


@pytest.mark.parametrize("node", ["", "node07"])
def test_a_token_is_byte_equal_to_pyjwt_s_and_verifies(node: str) -> None:
    key = os.urandom(64)
    claims: dict[str, object] = {"sun": "alice", "iat": 1_800_000_000, "exp": 1_800_000_300}
    if node:
        claims["node"] = node
    token = issue(key, "alice", 300, 1_800_000_000, node)
    assert token == jwt.encode(claims, key, algorithm="HS256")
    now = int(__import__("time").time())
    assert verify(key, issue(key, "bob", 300, now, node)).node == node
