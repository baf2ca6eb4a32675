"""The cost of authentication: submissions per second with munge, with JWT and without.

Usage::

    .venv/bin/python benchmarks/bench_auth.py [--jobs 3000]

Starts its own ``munged`` (temporary key and socket) and the real worker (one shard) against
the broker at ``KAFKA_BOOTSTRAP`` or a local one, then for each kind (none, jwt, munge) produces
``--jobs`` SubmitJob requests with that kind's headers (the client's signing is part of the
figure: a munge credential is one round trip to munged per request) and waits until every
``JobQueued`` is visible in the ledger. It prints the client-side signing rate alone, and the
rate of accepted submissions end to end, with the machine's load.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_submit import LedgerWatch, warm_up
from broker import BenchBroker, machine_line

from agents.auth import jwt_token
from agents.auth.signer import RequestSigner
from schemas import SluidGenerator
from streams.clients import producer
from tests.e2e.harness import LocalSystem
from tests.e2e.ledger import submit_records


def start_munged(home: Path) -> tuple[str, int]:
    """A munged with a fresh key; (socket, pid)."""
    home.mkdir(parents=True, exist_ok=True)
    key = home / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o600)
    socket = str(home / "munge.socket")
    argv = ["/usr/sbin/munged", f"--socket={socket}", f"--key-file={key}",
            f"--pid-file={home / 'munged.pid'}", f"--log-file={home / 'munged.log'}",
            f"--seed-file={home / 'munged.seed'}"]
    if os.getuid() == 0:
        argv.append("--force")
    subprocess.run(argv, check=True)
    time.sleep(0.5)
    return socket, int((home / "munged.pid").read_text())


def run_kind(system: LocalSystem, watch: LedgerWatch, kind: str, jobs: int) -> tuple[float, float]:
    """(signing rate, accepted rate) for one credential kind."""
    settings = system.settings.with_(auth=kind)
    signer = RequestSigner(settings)
    sluids = SluidGenerator(settings.cluster_id)
    records = [submit_records(sluids.new(), user="root", time_limit_s=60) for _ in range(jobs)]
    t0 = time.perf_counter()
    headers = [signer.headers(value) for _, value in records]
    signing = jobs / (time.perf_counter() - t0)
    out = producer(settings.bootstrap, **{"linger.ms": 5})
    topic = system.client.topics.requests
    started = time.perf_counter()
    for (key, value), extra in zip(records, headers, strict=True):
        while True:
            try:
                out.produce(topic, value, key, headers=extra)
                break
            except BufferError:
                out.poll(0.01)
        out.poll(0)
    out.flush(60)
    watch.wait([("JobQueued", k.decode()) for k, _ in records], 900)
    last = max(watch.seen[("JobQueued", k.decode())] for k, _ in records)
    return signing, jobs / (last - started)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=3000)
    args = parser.parse_args()
    print(machine_line())
    broker = BenchBroker.start("sluice-bench-auth-")
    scratch = Path(tempfile.mkdtemp(prefix="sluice-bench-munge-"))
    socket, munged = start_munged(scratch)
    key = scratch / "jwt.key"
    jwt_token.create_key(key)
    system = LocalSystem(broker.bootstrap, broker.home / "auth", f"benchauth{int(time.time())}")
    system.settings = system.settings.with_(munge_socket=socket, jwt_key=str(key))
    watch = None
    try:
        system.start_core()
        watch = LedgerWatch(system)
        warm_up(system, watch)
        print(f"{'kind':<6} {'signing/s':>10} {'accepted/s':>11}  load (1/5/15 min)")
        for kind in ("none", "jwt", "munge"):
            signing, accepted = run_kind(system, watch, kind, args.jobs)
            load = " ".join(f"{x:.2f}" for x in os.getloadavg())
            print(f"{kind:<6} {signing:>10,.0f} {accepted:>11,.0f}  {load}")
    finally:
        if watch is not None:
            watch.close()
        system.stop()
        os.kill(munged, 15)
        broker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
