"""The views' relay (``POST /v1/requests``) against a real broker, worker and views: what it
can tell is bad costs neither Kafka nor the ledger, and one user's flood of requests it cannot
judge (a forged JWT looks like any other) is cut at the user's budget while root and another
user's honest submissions go on.

The flooding user is a real process of another uid (``nobody``), told apart by the kernel
(``projections.peer_uid``), as any local user reaching the API would be.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from agents.auth import jwt_token
from cli.client import Client
from schemas import encode
from tests.e2e.harness import LocalSystem, apply_config
from tests.e2e.ledger import facts, job_workdir

pytestmark = [pytest.mark.kafka, pytest.mark.e2e]

PYTHON = "/usr/bin/python3"  # nobody may not enter the virtualenv's home
BUCKET = 4
BUDGET = f"rl_bucket_size={BUCKET},rl_refill_rate=1,rl_refill_period=600"

needs_users = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("runuser") is None or not Path(PYTHON).exists(),
    reason="a process of another user needs root, runuser and a system python3")

_POST = """
import http.client, json, sys
port = int(sys.argv[1])
for line in sys.stdin:
    key, auth, request_id, body = line.split()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Sluice-Key": key, "Sluice-Request-Id": request_id}
    if auth != "-":
        headers["Sluice-Auth"] = auth.replace("_", " ", 1)
    c.request("POST", "/v1/requests", body=bytes.fromhex(body), headers=headers)
    r = c.getresponse()
    answer = json.loads(r.read())
    print(r.status, r.getheader("Retry-After") or "-", answer.get("reason", "-"), flush=True)
    c.close()
"""


def _as_nobody(port: int, lines: list[str]) -> list[list[str]]:
    out = subprocess.run(["runuser", "-u", "nobody", "--", PYTHON, "-c", _POST, str(port)],
                         input="".join(f"{line}\n" for line in lines), capture_output=True,
                         text=True, timeout=120, cwd="/", check=True).stdout
    return [line.split(" ") for line in out.splitlines()]


def _cancel(client: Client, auth: str) -> tuple[str, str]:
    """A ``CancelJob`` of a fresh SLUID, as one line for ``_POST``; its SLUID."""
    sluid = client.sluids.new()
    value = encode("CancelJob", {"job_sluid": sluid})
    return sluid, f"{sluid} {auth} {client.sluids.new()} {value.hex()}"


@needs_users
def test_bad_credentials_never_reach_the_ledger_and_a_flood_is_cut_at_the_users_budget(
        system: LocalSystem, tmp_path: Path) -> None:
    key_path = tmp_path / "jwt.key"
    key = jwt_token.create_key(key_path)
    system.settings = system.settings.with_(auth="jwt", jwt_key=str(key_path))
    system.client = Client(system.settings)
    system.start("worker", "worker", "--loglevel", "info")
    system.start("projections", "projections", env={"SLUICE_RELAY_RATE_LIMIT": BUDGET})
    system.wait(lambda: system.client.get("/v1/status"), 60, "the views")
    apply_config(system, "AuthRequired: true\n")
    port = int(system.settings.api.rpartition(":")[2])

    # bad on its face: 401 with the intake's reason, nothing produced, no budget taken
    unsent = [_cancel(system.client, auth) for auth in
              ("-", "munge_MUNGE:not-base64!:", "kerberos_x", "jwt_a.b")]
    answers = _as_nobody(port, [line for _s, line in unsent])
    assert [a[0] for a in answers] == ["401"] * 4, answers
    assert [a[2] for a in answers] == ["Unauthenticated", "CredentialInvalid",
                                       "CredentialInvalid", "CredentialInvalid"]
    # a forged JWT (another key) looks right: forwarded, and refused by the intake, until
    # nobody's budget is spent; then 429 with Retry-After and nothing more is produced
    forged = jwt_token.issue(b"f" * 32, "root", 600, int(time.time()))
    flood = [_cancel(system.client, f"jwt_{forged}") for _ in range(BUCKET + 6)]
    answers = _as_nobody(port, [line for _s, line in flood])
    assert [a[0] for a in answers] == ["200"] * BUCKET + ["429"] * 6, answers
    assert all(a[2] == "RateLimited" and 1 <= int(a[1]) <= 600 for a in answers[BUCKET:])

    # root (the test) has no budget at the relay, and an honest user's submission is decided
    alice = jwt_token.issue(key, "alice", 600, int(time.time()))
    decision = Client(system.settings.with_(jwt=alice, jwt_key="")).submit(
        {"user": "alice", "command": ["true"], "workdir": job_workdir(), "hold": True}, 60)
    assert decision.state == "PENDING" and decision.row["user"] == "alice", decision
    # a marker after the flood: root's own forged request (root has no budget), refused
    probe, probe_line = _cancel(system.client, f"jwt_{forged}")
    key_text, _auth, request_id, body = probe_line.split()
    sent = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/requests", data=bytes.fromhex(body), method="POST",
        headers={"Sluice-Key": key_text, "Sluice-Request-Id": request_id,
                 "Sluice-Auth": f"jwt {forged}"})
    with urllib.request.urlopen(sent, timeout=30) as answer:
        assert answer.status == 200
    system.wait(lambda: any(f.record["subject_sluid"] == probe
                            for f in facts(system.settings, "RequestDenied")) or None,
                60, "the marker's refusal")
    denied = {f.record["subject_sluid"]: f.record["reason"]
              for f in facts(system.settings, "RequestDenied")}
    assert not {s for s, _ in unsent} & denied.keys()  # the 401s cost the ledger nothing
    assert [denied.get(s) for s, _ in flood] == ["CredentialInvalid"] * BUCKET + [None] * 6

    metrics = _metrics(port)
    for reason, count in (("Unauthenticated", 1), ("CredentialInvalid", 3),
                          ("RateLimited", 6)):
        assert f'sluice_relay_refused_total{{reason="{reason}"}} {count}' in metrics, metrics


def _metrics(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        return str(answer.read().decode())
