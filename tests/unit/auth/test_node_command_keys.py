"""Signed node commands and sealed environments, with real keys from ``cryptography``."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from agents.auth.command_signature import (
    SIGNATURE_HEADER,
    CommandChecker,
    CommandSigner,
    Refusal,
    expiry_of,
)
from agents.auth.daemon_keys import CommandKey, load_command_key
from agents.auth.node_keys import (
    KeyFileError,
    command_key_paths,
    ensure_keys,
    env_key_paths,
    load_command_private,
    load_env_private,
    load_env_public,
    public_text,
)
from agents.auth.sealed_env import SealedEnvError, open_env, seal_env
from streams.settings import Settings

NOW = 1_800_000_000_000
NODE = "sNODE1"


def _reason(refused: tuple[str, str] | None) -> str | None:
    return None if refused is None else refused[0]


def _settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path, cluster="c1", command_ttl_s=60)


def _pair(tmp_path: Path) -> tuple[CommandSigner, CommandChecker]:
    settings = _settings(tmp_path)
    ensure_keys(settings)
    signer = CommandSigner(load_command_private(settings), "c1", 60)
    checker = CommandChecker(lambda: load_command_key(settings), "c1", NODE,
                             tmp_path / "seen.json")
    return signer, checker


def test_keys_are_made_once_with_a_private_mode_and_never_replaced(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    ensure_keys(settings)
    private, public = command_key_paths(settings)
    env_private, env_public = env_key_paths(settings)
    assert private.stat().st_mode & 0o777 == 0o600
    assert env_private.stat().st_mode & 0o777 == 0o600
    assert public.stat().st_mode & 0o777 == 0o644
    before = private.read_bytes(), env_private.read_bytes()
    ensure_keys(settings)
    assert (private.read_bytes(), env_private.read_bytes()) == before
    private.chmod(0o640)
    with pytest.raises(KeyFileError, match="chmod 600"):
        load_command_private(settings)
    assert env_public.exists()


def test_an_inline_public_key_is_the_same_key_as_its_file(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    ensure_keys(settings)
    inline = settings.with_(env_pubkey=public_text(load_env_public(settings)))
    assert public_text(load_env_public(inline)) == public_text(load_env_public(settings))
    with pytest.raises(KeyFileError, match="neither a path nor base64"):
        load_env_public(settings.with_(env_pubkey="not base64!"))


def test_a_signed_command_runs_once_and_every_forgery_has_its_reason(tmp_path: Path) -> None:
    signer, checker = _pair(tmp_path)
    value = b"launch bytes"
    _name, header = signer.header(NODE, "sRUN", value, NOW)
    assert _name == SIGNATURE_HEADER

    assert _reason(checker.check(value, None, NODE, "sRUN", NOW)) == Refusal.UNSIGNED
    assert _reason(checker.check(value, b"v2 1 AA==", NODE, "sRUN", NOW)) == Refusal.MALFORMED
    assert _reason(checker.check(value, header, "sOTHER", "sRUN", NOW)) == Refusal.OTHER_NODE
    assert _reason(checker.check(b"altered", header, NODE, "sRUN", NOW)) == Refusal.INVALID
    assert _reason(checker.check(value, header, NODE, "sRUN2", NOW)) == Refusal.INVALID
    late = NOW + 61_000
    assert _reason(checker.check(value, header, NODE, "sRUN", late)) == Refusal.EXPIRED
    assert checker.check(value, header, NODE, "sRUN", NOW + 1000) is None
    assert _reason(checker.check(value, header, NODE, "sRUN", NOW + 2000)) == Refusal.REPLAYED


def test_a_command_refused_as_expired_names_the_expiry_the_worker_signed(
    tmp_path: Path,
) -> None:
    """What a node reports with a launch it refused as expired (the shard tells a clock
    ahead from a stale copy by it: scheduler.nodes.refused_launches)."""
    signer, checker = _pair(tmp_path)
    _name, header = signer.header(NODE, "sRUN", b"v", NOW)
    assert _reason(checker.check(b"v", header, NODE, "sRUN", NOW + 400_000)) == Refusal.EXPIRED
    assert expiry_of(header) == NOW + 60_000  # CommandTTL 60 s after the signing
    assert expiry_of(None) == 0
    assert expiry_of(b"v1 soon AA==") == 0
    assert expiry_of(b"v2 1 AA==") == 0


def test_the_replay_cache_outlives_a_restarted_daemon(tmp_path: Path) -> None:
    signer, checker = _pair(tmp_path)
    _name, header = signer.header(NODE, "sRUN", b"v", NOW)
    assert checker.check(b"v", header, NODE, "sRUN", NOW) is None
    settings = _settings(tmp_path)
    restarted = CommandChecker(lambda: load_command_key(settings), "c1", NODE,
                               tmp_path / "seen.json")
    assert _reason(restarted.check(b"v", header, NODE, "sRUN", NOW + 5)) == Refusal.REPLAYED


def test_a_key_of_another_cluster_does_not_verify(tmp_path: Path) -> None:
    signer, _checker = _pair(tmp_path / "a")
    _other_signer, other = _pair(tmp_path / "b")
    _name, header = signer.header(NODE, "sRUN", b"v", NOW)
    assert _reason(other.check(b"v", header, NODE, "sRUN", NOW)) == Refusal.INVALID


def test_a_node_without_its_public_key_runs_nothing(tmp_path: Path) -> None:
    signer, _checker = _pair(tmp_path / "a")
    empty = Settings(home=tmp_path / "none")
    checker = CommandChecker(lambda: load_command_key(empty), "c1", NODE, tmp_path / "s")
    _name, header = signer.header(NODE, "sRUN", b"v", NOW)
    refused = checker.check(b"v", header, NODE, "sRUN", NOW)
    assert refused is not None and refused[0] == Refusal.NO_KEY


def test_a_sealed_environment_opens_only_for_its_user_cluster_and_key(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    ensure_keys(settings)
    env = {"API_KEY": "s3cr3t-value", "PATH": "/usr/bin"}
    blob = seal_env(env, load_env_public(settings).public_bytes_raw(), "c1", "alice")
    raw = base64.b64decode(blob)
    assert b"s3cr3t-value" not in raw and b"API_KEY" not in raw
    assert open_env(blob, load_env_private(settings).private_bytes_raw(), "c1", "alice") == env
    with pytest.raises(SealedEnvError, match="does not open"):
        open_env(blob, load_env_private(settings).private_bytes_raw(), "c1", "mallory")
    with pytest.raises(SealedEnvError):
        open_env(blob, load_env_private(settings).private_bytes_raw(), "c2", "alice")
    with pytest.raises(SealedEnvError):
        open_env(blob, X25519PrivateKey.generate().private_bytes_raw(), "c1", "alice")
    tampered = base64.b64encode(raw[:-1] + bytes([raw[-1] ^ 1])).decode()
    with pytest.raises(SealedEnvError):
        open_env(tampered, load_env_private(settings).private_bytes_raw(), "c1", "alice")
    assert open_env("", load_env_private(settings).private_bytes_raw(), "c1", "alice") == {}


def test_an_inline_public_key_whose_base64_begins_with_a_slash_is_read_as_a_key(
    tmp_path: Path,
) -> None:
    from agents.auth.node_keys import inline_raw as _inline

    raw = b"\xfe" + bytes(31)  # base64 "/gAAAA…=": 1 key in 64 begins with "/"
    text = base64.b64encode(raw).decode()
    assert text.startswith("/")
    assert _inline(text) == raw
    real = tmp_path / "env.pub"
    real.write_text(text)
    assert _inline(str(real)) is None  # a path that exists stays a path


def test_a_command_key_replaced_on_disk_is_read_again(tmp_path: Path) -> None:
    """Fault round 2026-12-07: the command key pair was made again (its files lost, `sluice up`
    made new ones) and the worker restarted; every daemon held the old public key and refused
    every launch (CommandSignatureInvalid), the jobs RUNNING on no process. A signature the
    held key does not verify reads the key file again (at most every KEY_RELOAD_MS)."""
    settings = _settings(tmp_path)
    old_signer, checker = _pair(tmp_path)
    value = b"launch bytes"
    _n, old = old_signer.header(NODE, "sRUN0", value, NOW)
    assert checker.check(value, old, NODE, "sRUN0", NOW) is None  # the old key is held
    for path in command_key_paths(settings):
        path.unlink()
    ensure_keys(settings)  # a new pair
    new_signer = CommandSigner(load_command_private(settings), "c1", 60)
    _n, new = new_signer.header(NODE, "sRUN1", value, NOW)
    assert checker.check(value, new, NODE, "sRUN1", NOW + 1000) is None
    _n, forged = old_signer.header(NODE, "sRUN2", value, NOW)  # the old key no longer
    assert _reason(checker.check(value, forged, NODE, "sRUN2", NOW + 2000)) == Refusal.INVALID


def test_forged_commands_read_the_key_file_at_most_every_interval(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    ensure_keys(settings)
    reads: list[int] = []

    def load() -> CommandKey:
        reads.append(1)
        return load_command_key(settings)

    checker = CommandChecker(load, "c1", NODE, tmp_path / "seen.json")
    forged = b"v1 %d " % (NOW + 60_000) + base64.b64encode(b"x" * 64)
    for i in range(100):
        assert _reason(checker.check(b"v", forged, NODE, "sRUN", NOW + i * 10)) == Refusal.INVALID
    assert len(reads) == 2  # the first load, and one read again within the interval
