"""Per-user rate limits (``SlurmctldParameters=rl_enable``) against a real broker and worker.

alice floods ``sbatch --test-only`` (each one a scheduling pass when admitted); the intake
refuses what her bucket does not cover (``RequestDenied`` ``RateLimited``), bob's submissions
still decide promptly, the node daemon (a node JWT) and the test's own requests (root, the
service user) are never limited, and the CLI backs off, retries, and either gets through once
a token came back or fails cleanly with Slurm's words.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agents.auth import jwt_token
from cli.audit import verify
from cli.client import Client
from projections.replay import read_facts
from tests.e2e.harness import LocalSystem
from tests.e2e.ledger import facts, job_workdir

pytestmark = [pytest.mark.kafka, pytest.mark.e2e]


BUCKET, PERIOD_S, TEST_COST = 5, 10, 5
PARAMETERS = (f"rl_enable,rl_bucket_size={BUCKET},rl_refill_rate=1,"
              f"rl_refill_period={PERIOD_S},rl_test_only_cost={TEST_COST}")
"""5 tokens, one more every 10 s; a test takes the whole bucket (so a refill never covers
one within the test's time), a submission one token."""
FLOOD = 40
ROOT = Path(__file__).resolve().parents[2]


def _spec(user: str) -> dict[str, object]:
    return {"user": user, "nodes_min": 1, "command": ["true"], "workdir": job_workdir()}


def _system(system: LocalSystem, tmp_path: Path) -> bytes:
    key_path = tmp_path / "jwt.key"
    key = jwt_token.create_key(key_path)
    system.settings = system.settings.with_(auth="jwt", jwt_key=str(key_path),
                                            slurmctld_params=PARAMETERS)
    system.client = Client(system.settings)
    system.start_core()
    system.start_nodes(1)
    system.wait_nodes_idle(1)
    return key


def _user_client(system: LocalSystem, key: bytes, user: str) -> tuple[Client, str]:
    token = jwt_token.issue(key, user, 600, int(time.time()))
    return Client(system.settings.with_(jwt=token, jwt_key="")), token


def _sluice(system: LocalSystem, user: str, token: str, *argv: str, retries: str
            ) -> subprocess.CompletedProcess[str]:
    """``sluice submit --uid USER ARGV`` holding ``user``'s JWT (the CLI names its Unix
    caller in the record unless ``--uid`` names another; the credential proves ``user``)."""
    argv = (argv[0], "--uid", user, *argv[1:])
    env = {**os.environ, **system.settings.as_env(), "SLUICE_JWT": token, "SLUICE_JWT_KEY": "",
           "SLUICE_RATE_LIMIT_RETRIES": retries,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-m", "cli.main", *argv], env=env,
                          capture_output=True, text=True, timeout=120, check=False,
                          cwd=job_workdir())


def test_a_flooding_user_is_refused_and_another_users_submissions_still_decide_promptly(
        system: LocalSystem, tmp_path: Path) -> None:
    key = _system(system, tmp_path)
    alice, alice_token = _user_client(system, key, "alice")
    bob, _ = _user_client(system, key, "bob")

    flooded = time.monotonic()
    sluids = [alice.sluids.new() for _ in range(FLOOD)]
    alice.send_many([(s, "TestSubmitJob", {"job_sluid": s, "spec": _spec("alice"), "nonce": 1})
                     for s in sluids])
    latencies = []
    for _ in range(4):
        start = time.monotonic()
        decision = bob.submit(_spec("bob"), wait_s=60)
        latencies.append(time.monotonic() - start)
        assert decision.accepted, decision
    print(f"bob's submissions decided in {[round(s, 2) for s in latencies]} s during alice's "
          f"flood of {FLOOD} tests")
    assert max(latencies) < 15

    answers = alice.decisions(sluids, 60)
    elapsed = time.monotonic() - flooded
    denied = [s for s, a in answers.items() if a and a.get("denial", {}).get("reason")
              == "RateLimited"]
    tested = [s for s, a in answers.items() if a and "test" in a]
    assert len(denied) + len(tested) == FLOOD, answers
    refills = int(elapsed // PERIOD_S) + 1
    assert len(tested) <= (BUCKET + refills) // TEST_COST
    assert len(denied) >= FLOOD - (BUCKET + refills) // TEST_COST

    refusals = [f.record for f in facts(system.settings, "RequestDenied")
                if f.record["reason"] == "RateLimited"]
    assert {r["requester"] for r in refusals} == {"alice"}
    assert {r["request"] for r in refusals} == {"TestSubmitJob"}
    assert all(r["detail"] == "Rate limit exceeded, please retry momentarily" for r in refusals)
    # the node daemon (its node JWT) and the test's root requests were never limited: the
    # node registered and reported, and the test's own requests went through
    assert not [f for f in facts(system.settings, "RequestDenied")
                if f.record["requester"] in ("root", "")]

    # the CLI: a test needs the whole bucket, which comes back only after 50 s: refused,
    # one back-off, refused again, then a clean failure in Slurm's words
    refused = _sluice(system, "alice", alice_token, "submit", "--test-only", "--wrap", "true",
                      retries="1")
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "RPC rate limited 1 time(s). Sleeping then trying again." in refused.stderr
    assert "Rate limit exceeded, please retry momentarily [RateLimited]" in refused.stderr
    # a submission takes one token, back within a refill period (10 s): the back-offs
    # (1 + 2 + 3 + 4 + 5 s) outlast it and the job is queued
    queued = _sluice(system, "alice", alice_token, "submit", "--parsable", "--wrap", "true",
                     retries="5")
    assert queued.returncode == 0, queued.stdout + queued.stderr
    assert queued.stdout.strip().isdigit(), queued.stdout

    # replay: re-deciding the recorded inbox (the intake's seals, refusals included) gives the
    # ledger's facts, the RateLimited refusals among them
    time.sleep(11)  # the shard closes its last cycle (10 s idle at most)
    [report] = verify(system.settings, read_facts(system.settings))
    assert report.divergences == [], "\n".join(report.lines())
    assert report.checked == report.cycles > 0
