"""The nodes' environment key as a client reads it (``agents.auth.public_keys``): the same key
as ``cryptography``'s PEM loader gives, without importing its ``serialization`` package."""

from __future__ import annotations

import base64
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from agents.auth.node_keys import KeyFileError, ensure_keys, env_key_paths, load_pem_public
from agents.auth.public_keys import X25519_SPKI_HEADER, load_env_public, x25519_pem_raw
from streams.settings import Settings


def _settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path, cluster="c1")


def test_a_key_file_made_by_ensure_keys_loads_to_the_key_cryptography_reads(
        tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    ensure_keys(settings, command=False)
    path = env_key_paths(settings)[1]
    assert x25519_pem_raw(path.read_bytes()) is not None
    assert (load_env_public(settings).public_bytes_raw()
            == load_pem_public(path, "x25519").public_bytes_raw())


def test_loading_the_key_file_imports_no_serialization_package(tmp_path: Path) -> None:
    ensure_keys(_settings(tmp_path), command=False)
    probe = ("import sys\nfrom pathlib import Path\nfrom streams.settings import Settings\n"
             "from agents.auth.public_keys import load_env_public\n"
             f"load_env_public(Settings(home=Path({str(tmp_path)!r})))\n"
             "print('cryptography.hazmat.primitives.serialization' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True)
    assert done.stdout.split() == ["False"]


def test_a_public_key_file_of_another_kind_is_refused_as_before(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    path = env_key_paths(settings)[1]
    path.parent.mkdir(parents=True)
    path.write_bytes(Ed25519PrivateKey.generate().public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    assert x25519_pem_raw(path.read_bytes()) is None
    with pytest.raises(KeyFileError, match="not an x25519 public key"):
        load_env_public(settings)
    path.write_text("not a key\n")
    with pytest.raises(KeyFileError, match="not a PEM public key"):
        load_env_public(settings)
    path.unlink()
    with pytest.raises(KeyFileError, match="no such key file"):
        load_env_public(settings)


@pytest.mark.parametrize("der", [
    X25519_SPKI_HEADER + bytes(31),  # short
    X25519_SPKI_HEADER + bytes(33),  # long
    bytes.fromhex("302a300506032b6570032100") + bytes(32),  # Ed25519's OID
])
def test_any_other_der_is_left_to_cryptography_s_loader(der: bytes) -> None:
    pem = (b"-----BEGIN PUBLIC KEY-----\n" + base64.b64encode(der)
           + b"\n-----END PUBLIC KEY-----\n")
    assert x25519_pem_raw(pem) is None
    assert x25519_pem_raw(pem.replace(b"PUBLIC KEY", b"PRIVATE KEY")) is None
