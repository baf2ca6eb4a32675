"""What the relay refuses before Kafka (``projections.relay_gate``): a credential bad on its
face (401 with the intake's reason) and a peer past its budget (429 with ``Retry-After``),
checked on the gate's functions and over real HTTP with real processes of another uid."""

from __future__ import annotations

import base64
import http.client
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from agents.auth import jwt_token, munge
from cli.client import ApiError, Client
from projections.http import ApiServer
from projections.relay import RequestRelay
from projections.relay_gate import (
    DEFAULT,
    EXPIRY_LEEWAY_S,
    PeerBudgets,
    budget_config,
    credential_refusal,
)
from projections.service import ProjectionService
from schemas import encode
from streams.settings import Settings
from tests.unit.auth.test_credentials import munged
from tests.unit.projections.test_api_connection_share import PYTHON, needs_users
from tests.unit.projections.test_relay_serving import Producer

SLUID = "s000000000000A"
REQUEST_ID = "s000000000000B"
VALUE = encode("CancelJob", {"job_sluid": SLUID})
NOW = 1_800_000_000.0
KEY = b"k" * 32
__all__ = ["munged"]  # a fixture: a real munged of the test's own


def refusal(auth: str | None, required: bool = True, request_id: str = REQUEST_ID
            ) -> tuple[str, str] | None:
    headers = {"sluice-request-id": request_id} if request_id else {}
    if auth is not None:
        headers["sluice-auth"] = auth
    return credential_refusal(headers, required, NOW)


def test_no_credential_is_unauthenticated_only_while_auth_is_required() -> None:
    assert refusal(None, required=True) == (
        "Unauthenticated", "this cluster requires a credential (AuthRequired); send a "
        "Sluice-Auth header (munge or jwt)")
    assert refusal(None, required=False) is None


def _b64(obj: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()


_DEEP = base64.urlsafe_b64encode(b"[" * 5000).rstrip(b"=").decode()


@pytest.mark.parametrize(("auth", "request_id", "reason", "words"), [
    ("kerberos abc", REQUEST_ID, "CredentialInvalid", "unknown credential kind 'kerberos'"),
    ("munge", REQUEST_ID, "CredentialInvalid", "not a MUNGE credential"),
    ("munge MUNGE:abc", REQUEST_ID, "CredentialInvalid", "not a MUNGE credential"),
    ("munge MUNGE:a b:", REQUEST_ID, "CredentialInvalid", "not a MUNGE credential"),
    ("munge MUNGE:" + "A" * 9000 + ":", REQUEST_ID, "CredentialInvalid", "longer than"),
    ("munge MUNGE:abc:", "short", "CredentialInvalid", "8 to 64 characters"),
    ("munge MUNGE:abc:", "", "CredentialInvalid", "8 to 64 characters"),
    ("jwt abc", REQUEST_ID, "CredentialInvalid", "three base64url parts"),
    ("jwt a.b.c", REQUEST_ID, "CredentialInvalid", "not an HS256 JWT"),
    (f"jwt {_b64({'alg': 'none'})}.{_b64({'exp': 2 * int(NOW)})}.c2ln", REQUEST_ID,
     "CredentialInvalid", "not an HS256 JWT"),
    (f"jwt {_b64({'alg': 'HS256'})}.{_b64({'sun': 'x'})}.c2ln", REQUEST_ID,
     "CredentialInvalid", "no integer exp"),
    (f"jwt {_b64({'alg': 'HS256'})}.{_b64({'exp': '9'})}.c2ln", REQUEST_ID,
     "CredentialInvalid", "no integer exp"),
    # nested 5,000 deep: RecursionError, a 500 and a traceback per request (red team)
    (f"jwt {_b64({'alg': 'HS256'})}.{_DEEP}.c2ln", REQUEST_ID, "CredentialInvalid",
     "no integer exp"),
    (f"jwt {_DEEP}.{_b64({'exp': 9})}.c2ln", REQUEST_ID, "CredentialInvalid",
     "not an HS256 JWT"),
])
def test_a_malformed_credential_is_refused_with_the_intakes_reason(
        auth: str, request_id: str, reason: str, words: str) -> None:
    found = refusal(auth, request_id=request_id)
    assert found is not None and found[0] == reason and words in found[1], found


def test_real_credentials_pass_and_an_expired_jwt_is_refused_after_the_leeway() -> None:
    fresh = jwt_token.issue(KEY, "alice", 600, int(NOW))
    assert refusal(f"jwt {fresh}") is None
    forged = jwt_token.issue(b"x" * 32, "root", 600, int(NOW))  # the relay cannot tell: the
    assert refusal(f"jwt {forged}") is None  # intake refuses it (CredentialInvalid)
    just = jwt_token.issue(KEY, "alice", 10, int(NOW) - 10 - EXPIRY_LEEWAY_S + 1)
    assert refusal(f"jwt {just}") is None
    old = jwt_token.issue(KEY, "alice", 10, int(NOW) - 10 - EXPIRY_LEEWAY_S - 1)
    assert refusal(f"jwt {old}") == ("CredentialExpired", "the JWT's exp has passed")


def test_a_real_munge_credential_has_the_form_the_relay_passes(munged: str) -> None:
    for payload in (b"", b"sluice/1 x y", os.urandom(300)):
        credential = munge.encode(payload, munged)
        assert refusal(f"munge {credential}") is None, credential


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_peer_gets_its_burst_then_the_refill_rate_and_is_told_when_to_come_back() -> None:
    clock = Clock()
    budgets = PeerBudgets(budget_config("rl_bucket_size=3,rl_refill_rate=2,rl_refill_period=5"),
                          clock)
    alice, bob = ("uid", 1000), ("uid", 1001)
    assert [budgets.admit(alice) for _ in range(3)] == [0.0, 0.0, 0.0]
    clock.now = 101.5
    assert budgets.admit(alice) == pytest.approx(3.5)  # the next refill is at 105
    assert budgets.admit(bob) == 0.0  # another peer's bucket is its own
    assert budgets.admit(None) == 0.0  # root and the views' own user are never limited
    clock.now = 105.0
    assert [budgets.admit(alice) for _ in range(3)] == [0.0, 0.0, pytest.approx(5.0)]


def test_the_table_cannot_grow_without_bound() -> None:
    clock = Clock()
    budgets = PeerBudgets(budget_config("rl_bucket_size=2,rl_table_size=2"), clock)
    assert budgets.admit(("address", "a")) == 0.0
    assert budgets.admit(("address", "b")) == 0.0
    assert budgets.admit(("address", "c")) > 0  # full, and no bucket is full again yet
    clock.now += 1  # a refill: a and b are full again and dropped, c gets one
    assert budgets.admit(("address", "c")) == 0.0


def test_the_budget_setting() -> None:
    assert budget_config("") == DEFAULT
    assert not budget_config("off").enabled
    config = budget_config("rl_bucket_size=7")
    assert (config.enabled, config.bucket_size, config.refill_rate) == (True, 7,
                                                                       DEFAULT.refill_rate)
    with pytest.raises(ValueError, match="rl_refill_rate"):
        budget_config("rl_refill_rate=-1")


_POST = """
import http.client, json, sys
port, count, auth = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
body = bytes.fromhex(sys.argv[4])
for _ in range(count):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    headers = {"Sluice-Key": "s000000000000A", "Sluice-Request-Id": "s000000000000B"}
    if auth:
        headers["Sluice-Auth"] = auth
    c.request("POST", "/v1/requests", body=body, headers=headers)
    r = c.getresponse()
    print(r.status, r.getheader("Retry-After") or "-", json.loads(r.read()).get("reason", ""),
          flush=True)
    c.close()
"""


@pytest.fixture()
def relay_api(tmp_path: Path) -> Any:
    service = ProjectionService(Settings(home=tmp_path))
    service.views.private_jobs = True  # AuthRequired in force
    producer = Producer()
    relay = RequestRelay(service, Settings(home=tmp_path), producer,
                         PeerBudgets(budget_config("rl_bucket_size=3,rl_refill_period=600")))
    api = ApiServer(service, "127.0.0.1", 0)
    api.post_route("/v1/requests", relay)
    api.start()
    relay.start()
    try:
        yield api, relay, producer
    finally:
        relay.stop()
        api.stop()


def _as_nobody(port: int, count: int, auth: str) -> list[list[str]]:
    out = subprocess.run(["runuser", "-u", "nobody", "--", PYTHON, "-c", _POST, str(port),
                          str(count), auth, VALUE.hex()], capture_output=True, text=True,
                         timeout=60, cwd="/", check=True).stdout
    return [line.split(" ") for line in out.splitlines()]


@needs_users
def test_over_http_bad_credentials_are_401_and_a_flooding_user_gets_429_unsent(
        relay_api: Any) -> None:
    api, relay, producer = relay_api
    produced: list[bytes] = []
    real_produce = producer.produce

    def counting(topic: str, value: bytes, key: bytes, **kwargs: Any) -> None:
        produced.append(key)
        real_produce(topic, value, key, **kwargs)

    producer.produce = counting
    # no credential, a malformed one: 401 with the reason, nothing produced, no budget taken
    assert _as_nobody(api.port, 2, "") == [["401", "-", "Unauthenticated"]] * 2
    assert _as_nobody(api.port, 1, "munge junk") == [["401", "-", "CredentialInvalid"]]
    assert produced == []
    # well-formed (the intake would judge it): 3 forwarded, then 429 with Retry-After
    forged = f"jwt {jwt_token.issue(b'x' * 32, 'root', 600, int(time.time()))}"
    answers = _as_nobody(api.port, 5, forged)
    assert [a[0] for a in answers] == ["200", "200", "200", "429", "429"], answers
    assert all(a[2] == "RateLimited" and 1 <= int(a[1]) <= 600 for a in answers[3:])
    assert len(produced) == 3
    # root (this process) has no budget: still forwarded
    connection = http.client.HTTPConnection("127.0.0.1", api.port, timeout=10)
    connection.request("POST", "/v1/requests", body=VALUE,
                       headers={"Sluice-Key": SLUID, "Sluice-Request-Id": REQUEST_ID,
                                "Sluice-Auth": forged})
    assert connection.getresponse().status == 200
    assert len(produced) == 4
    assert relay.refused.value("Unauthenticated") == 2
    assert relay.refused.value("CredentialInvalid") == 1
    assert relay.refused.value("RateLimited") == 2
    family = relay.refused.family()
    assert {dict(labels)["reason"] for _s, labels, _v in family.samples} == {
        "Unauthenticated", "CredentialInvalid", "RateLimited"}  # a reason, never a peer


class AsNobody:
    """The relay as a peer of uid 65534 reaches it (this test runs as root, who has no
    budget; the CLI cannot run as nobody from the virtualenv)."""

    def __init__(self, relay: RequestRelay) -> None:
        self.relay = relay
        self.max_body = relay.max_body

    def handle(self, query: dict[str, list[str]], headers: Any, body: bytes, viewer: Any,
               peer: object = None) -> tuple[int, dict[str, Any]]:
        return self.relay.handle(query, headers, body, viewer, ("uid", 65534))


def test_the_cli_waits_out_a_429_in_slurms_words_then_gives_up_cleanly(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    settings = Settings(home=tmp_path)
    service = ProjectionService(settings)
    producer = Producer()
    relay = RequestRelay(service, settings, producer,
                         PeerBudgets(budget_config("rl_bucket_size=1,rl_refill_period=2")))
    api = ApiServer(service, "127.0.0.1", 0)
    api.post_route("/v1/requests", AsNobody(relay))
    api.start()
    relay.start()
    try:
        client = Client(settings.with_(api=f"127.0.0.1:{api.port}"))
        headers = [("sluice-request-id", REQUEST_ID.encode())]
        assert client._relay(SLUID.encode(), VALUE, headers, 0.1, False) is None  # sent
        started = time.monotonic()
        assert client._relay(SLUID.encode(), VALUE, headers, 0.1, False) is None  # after 429
        assert 0.9 <= time.monotonic() - started <= 5
        assert "sluice: RPC rate limited 1 time(s). Sleeping then trying again." in \
            capsys.readouterr().err
        monkeypatch.setenv("SLUICE_RATE_LIMIT_RETRIES", "0")
        with pytest.raises(ApiError, match=r"Rate limit exceeded.*\[RateLimited\]"):
            client._relay(SLUID.encode(), VALUE, headers, 0.1, False)
        assert relay.refused.value("RateLimited") == 2
    finally:
        relay.stop()
        api.stop()
