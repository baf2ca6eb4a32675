"""CPU per relayed request of the relay's gate (``projections.relay_gate``): the credential's
form (``credential_refusal``) and the peer's bucket (``PeerBudgets.admit``), for a JWT and a
MUNGE credential, with the machine's load average. Run from the tree:
``PYTHONPATH=. python benchmarks/bench_relay_gate.py``."""

from __future__ import annotations

import os
import time

from agents.auth import jwt_token
from projections.relay_gate import DEFAULT, PeerBudgets, credential_refusal

N = 20_000


def main() -> None:
    jwt = jwt_token.issue(b"k" * 32, "alice", 600, int(time.time()))
    munge = "munge MUNGE:" + "AwQDAAC" * 40 + "=:"
    budgets = PeerBudgets(DEFAULT)
    for label, auth in (("jwt", f"jwt {jwt}"), ("munge", munge)):
        headers = {"sluice-auth": auth, "sluice-request-id": "s00DJXT1ZWS001"}
        start = time.process_time()
        for i in range(N):
            assert credential_refusal(headers, True, time.time()) is None
            budgets.admit(("uid", i % 1000))
        cpu_us = (time.process_time() - start) / N * 1e6
        print(f"{label}: {cpu_us:.1f} us CPU per request (gate), "
              f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
