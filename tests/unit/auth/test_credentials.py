"""Credentials: the seal, the replay cache, the client configuration, and the intake's checks
with real JWTs and a real munged (started here with a temporary key and socket)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.auth import jwt_token, munge
from agents.auth.credentials import AUTH_HEADER, REQUEST_ID_HEADER, Verifier, client_headers
from agents.auth.replay import ReplayCache
from agents.auth.seal import SealChecker, Sealed, open_seal, seal_headers
from scheduler import Identity
from schemas import encode, sluid
from schemas.sluid import SluidGenerator
from streams.settings import ClientConfError, Settings, read_client_conf

SECRET = b"k" * 32
VALUE = b"\xc3\x01request-bytes"


def test_a_sealed_record_opens_with_its_identity_and_stamp() -> None:
    who = Identity(user="alice", uid=1001, gid=1001, groups=("alice",), kind="munge")
    opened = open_seal(SECRET, VALUE, seal_headers(SECRET, "intake", 123, VALUE, who))
    assert isinstance(opened, Sealed)
    assert (opened.origin, opened.stamp_ms, opened.identity) == ("intake", 123, who)


def test_records_sealed_for_many_identities_each_open_with_their_own() -> None:
    people = [Identity(user=f"u{i % 3}", uid=1000 + i % 3, gid=i % 2, kind="jwt",
                       denied="expired" if i % 5 == 0 else "") for i in range(12)]
    for who in people * 2:  # the second round is answered from the cached encodings
        opened = open_seal(SECRET, VALUE, seal_headers(SECRET, "intake", 5, VALUE, who))
        assert isinstance(opened, Sealed)
        assert opened.identity == who


@pytest.mark.parametrize("tamper", ["value", "stamp", "identity", "secret", "missing"])
def test_a_tampered_or_foreign_seal_does_not_open(tamper: str) -> None:
    headers = dict(seal_headers(SECRET, "clock", 123, VALUE))
    value, secret = VALUE, SECRET
    if tamper == "value":
        value = VALUE + b"x"
    elif tamper == "stamp":
        headers["sluice-stamp"] = b"999999999999999"
    elif tamper == "identity":
        headers["sluice-identity"] = b'{"user": "root", "service": true}'
    elif tamper == "secret":
        secret = b"z" * 32
    else:
        del headers["sluice-seal"]
    assert isinstance(open_seal(secret, value, list(headers.items())), str)


def test_a_seal_is_applied_once_and_not_when_older_than_the_window() -> None:
    checker = SealChecker()
    sealed = open_seal(SECRET, VALUE, seal_headers(SECRET, "intake", 1_000_000, VALUE))
    assert isinstance(sealed, Sealed)
    assert checker.fresh(sealed, 1_000_000)
    assert not checker.fresh(sealed, 1_000_000)
    old = open_seal(SECRET, VALUE, seal_headers(SECRET, "intake", 1, VALUE))
    assert isinstance(old, Sealed) and not checker.fresh(old, 1_000_000)


def test_the_replay_cache_accepts_an_id_once_but_a_redelivery_at_the_same_position() -> None:
    cache = ReplayCache(size=2)
    assert cache.first_sight("a", 100, 0, "0:1")
    assert cache.first_sight("a", 100, 0, "0:1")  # the same record again after a crash
    assert not cache.first_sight("a", 100, 0, "0:7")
    assert cache.first_sight("b", 100, 0, "0:2") and cache.first_sight("c", 100, 0, "0:3")
    assert len(cache) == 2  # bounded: the oldest went
    assert cache.first_sight("x", 5, 0, "0:4")
    assert cache.first_sight("x", 5, 10, "0:9")  # expired ids are forgotten


def test_the_client_configuration_is_read_and_its_mistakes_named(tmp_path: Path) -> None:
    conf = tmp_path / "sluice.conf"
    conf.write_text("# comment\nKafkaBootstrap=b:9092\nApi=h:1\nAuthType=auth/munge\n")
    settings = Settings.from_env({"SLUICE_CONF": str(conf), "SLUICE_HOME": str(tmp_path)})
    assert (settings.bootstrap, settings.api, settings.auth) == ("b:9092", "h:1", "munge")
    override = Settings.from_env({"SLUICE_CONF": str(conf), "SLUICE_HOME": str(tmp_path),
                                  "SLUICE_AUTH": "none"})
    assert override.auth == "none"
    assert read_client_conf(tmp_path / "absent.conf") == {}
    conf.write_text("Secret=1\n")
    with pytest.raises(ClientConfError, match=r"sluice\.conf:1"):
        read_client_conf(conf)
    conf.write_text("AuthType=auth/kerberos\n")
    with pytest.raises(ClientConfError, match="AuthType"):
        read_client_conf(conf)


def test_a_jwt_key_readable_by_others_is_refused(tmp_path: Path) -> None:
    key = tmp_path / "jwt.key"
    jwt_token.create_key(key)
    key.chmod(0o644)
    with pytest.raises(PermissionError):
        jwt_token.read_key(key)


def _jwt_headers(key: bytes, request_id: str, **claims: int) -> list[tuple[str, bytes]]:
    token = jwt_token.issue(key, "alice", claims.get("life", 60),
                            claims.get("now", int(time.time())))
    return [(REQUEST_ID_HEADER, request_id.encode()), (AUTH_HEADER, b"jwt " + token.encode())]


def test_the_intake_verifies_jwts_and_refuses_expired_forged_and_replayed_ones() -> None:
    key = os.urandom(64)
    verifier = Verifier(jwt_key=key)
    now = time.time()
    ok = verifier.identity(VALUE, _jwt_headers(key, "s0000000001"), now, "0:1")
    assert (ok.user, ok.kind, ok.denied) == ("alice", "jwt", "")
    again = verifier.identity(VALUE, _jwt_headers(key, "s0000000001"), now, "0:2")
    assert again.denied == "CredentialReplayed"
    old = verifier.identity(VALUE, _jwt_headers(key, "s0000000002", now=int(now) - 999), now,
                            "0:3")
    assert old.denied == "CredentialExpired"
    forged = verifier.identity(VALUE, _jwt_headers(os.urandom(64), "s0000000003"), now, "0:4")
    assert forged.denied == "CredentialInvalid"
    no_id = verifier.identity(VALUE, _jwt_headers(key, "")[1:], now, "0:5")
    assert no_id.denied == "CredentialInvalid"
    assert verifier.identity(VALUE, [], now, "0:6") == Identity()


def test_a_jwt_issued_in_the_future_by_a_clock_that_runs_ahead_is_accepted_until_exp() -> None:
    """Slurm's auth/jwt checks ``exp`` only; a node daemon 400 s ahead signs its own tokens
    with an ``iat`` 400 s in the future, and its reports must still reach the shard."""
    key = os.urandom(64)
    verifier = Verifier(jwt_key=key)
    now = time.time()
    ahead = verifier.identity(VALUE, _jwt_headers(key, "s0000000007", now=int(now) + 400), now,
                              "0:1")
    assert (ahead.user, ahead.denied) == ("alice", "")
    ended = verifier.identity(VALUE, _jwt_headers(key, "s0000000008", now=int(now) - 400), now,
                              "0:2")
    assert ended.denied == "CredentialExpired"  # exp still bounds it


def _report(node: str, job: str) -> bytes:
    """A node daemon's ReportJobExit, encoded as the daemon sends it."""
    return encode("ReportJobExit", {"job_sluid": job, "run_sluid": "s009M92CC1GW09",
                                    "node_sluid": "s009M92CAZT23W", "node_name": node,
                                    "exit_code": 0})


def test_two_daemons_minting_in_the_same_millisecond_can_draw_the_same_request_id(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The cause of the lost exits of docs/benchmarks.md: each daemon mints its request ids
    with its own SluidGenerator, which starts a millisecond at a random point of 512."""
    monkeypatch.setattr(sluid.time, "time_ns", lambda: 1_764_913_000_123_000_000)
    monkeypatch.setattr(sluid.os, "urandom", lambda n: b"\x01\x2f"[:n])
    assert SluidGenerator(9).new() == SluidGenerator(9).new()


def test_two_requests_sharing_an_id_are_both_accepted_and_each_refused_when_replayed() -> None:
    """Seen in a benchmark (05:55 run): node07's ReportJobExit of job 931 and node53's report
    of another job carried the same request id s009M92CC26116; the intake denied node07's as
    CredentialReplayed (a RequestDenied keyed by the shard), and the job ran for ever."""
    key = os.urandom(64)
    verifier = Verifier(jwt_key=key)
    now = int(time.time())
    first, second = _report("node53", "s009M92CBGZJVX"), _report("node07", "s009M92CBGZJT5")

    def headers(node: str) -> list[tuple[str, bytes]]:
        token = jwt_token.issue(key, "root", 60, now, node=node)
        return [(REQUEST_ID_HEADER, b"s009M92CC26116"), (AUTH_HEADER, b"jwt " + token.encode())]

    assert verifier.identity(first, headers("node53"), now, "2:100").denied == ""
    assert verifier.identity(second, headers("node07"), now, "3:200").node == "node07"
    assert verifier.identity(second, headers("node07"), now, "3:200").denied == ""  # redelivery
    for value, node, position in ((first, "node53", "2:101"), (second, "node07", "3:201")):
        again = verifier.identity(value, headers(node), now, position)
        assert again.denied == "CredentialReplayed", position


def test_two_munge_requests_sharing_an_id_are_both_accepted(munged: str) -> None:
    verifier = Verifier(munge_socket=munged)
    now = time.time()
    first, second = _report("node53", "s009M92CBGZJVX"), _report("node07", "s009M92CBGZJT5")
    one = client_headers(first, "s009M92CC26116", "munge", munge_socket=munged)
    two = client_headers(second, "s009M92CC26116", "munge", munge_socket=munged)
    assert verifier.identity(first, one, now, "2:100").denied == ""
    assert verifier.identity(second, two, now, "3:200").denied == ""
    assert verifier.identity(second, two, now, "3:201").denied == "CredentialReplayed"


@pytest.fixture
def munged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    binary = shutil.which("munged") or "/usr/sbin/munged"
    if not Path(binary).exists() or not munge.available():
        pytest.skip("munged is not installed (Debian package 'munge')")
    home = tmp_path_factory.mktemp("munged")
    key = home / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o600)
    socket = str(home / "munge.socket")
    argv = [binary, f"--socket={socket}", f"--key-file={key}", f"--pid-file={home / 'pid'}",
            f"--log-file={home / 'log'}", f"--seed-file={home / 'seed'}"]
    subprocess.run([*argv, *(["--force"] if os.getuid() == 0 else [])], check=True)
    try:
        yield socket
    finally:
        os.kill(int((home / "pid").read_text()), 15)


def test_the_intake_verifies_munge_credentials_bound_to_the_request(munged: str) -> None:
    verifier = Verifier(munge_socket=munged)
    now = time.time()
    headers = client_headers(VALUE, "s0000000010", "munge", munge_socket=munged)
    who = verifier.identity(VALUE, headers, now, "0:1")
    assert (who.uid, who.kind, who.denied) == (os.getuid(), "munge", "")
    assert who.host.count(".") == 3 and who.host != "0.0.0.0"  # munged's origin address
    assert who.registrant == f"munge {who.user}@{who.host}"
    assert who.service == (os.getuid() in (0, os.getuid()))
    assert verifier.identity(VALUE, headers, now, "0:1").denied == ""  # redelivery
    assert verifier.identity(VALUE, headers, now, "0:2").denied == "CredentialReplayed"
    moved = client_headers(VALUE, "s0000000011", "munge", munge_socket=munged)
    assert verifier.identity(b"other bytes", moved, now, "0:3").denied == "CredentialMismatch"
    junk = [(REQUEST_ID_HEADER, b"s0000000012"), (AUTH_HEADER, b"munge MUNGE:junk:")]
    assert verifier.identity(VALUE, junk, now, "0:4").denied == "CredentialInvalid"
    down = Verifier(munge_socket=munged + ".absent")
    fresh = client_headers(VALUE, "s0000000013", "munge", munge_socket=munged)
    assert down.identity(VALUE, fresh, now, "0:5").denied == "AuthUnavailable"
