"""Submissions per second into the ledger over SASL_SSL (SCRAM-SHA-512, TLS) next to PLAINTEXT.

Usage::

    .venv/bin/python benchmarks/bench_submit_sasl.py [--jobs 5000] [--port 20820]

Starts a local single-node KRaft broker twice, one after the other, in a scratch home: first
PLAINTEXT, then secured as ``sluice up --secure`` makes it (local CA, SCRAM principals, the ACL
table). On each it runs ``bench_submit.py``'s phase 1 (the faust worker with one shard; one
producer submits ``--jobs`` SubmitJob requests as fast as it can; a read-committed ledger
reader notes each JobQueued). Over SASL_SSL the worker runs as its own principal (``worker``)
and the benchmark's producer and ledger reader as ``admin``. Prints the load average before
and after each phase: the machine is shared.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_submit import LedgerWatch, throughput, warm_up
from broker import machine_line

from cli.up_secure import SecureSystem
from infra.kafka import LocalKafka
from streams.kafka_admin import apply_acls, upsert_scram_users
from streams.settings import Settings
from tests.e2e.harness import LocalSystem


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min) {five:.2f} (5 min)"


def _phase(kafka: LocalKafka, home: Path, jobs: int, worker_env: dict[str, str],
           prefix: str) -> float:
    system = LocalSystem(kafka.bootstrap, home, prefix)
    try:
        system.start("worker", "worker", "--loglevel", "warning", env=worker_env)
        watch = LedgerWatch(system)
        warm_up(system, watch)
        print(f"  before: {_load()}")
        rate = throughput(system, watch, jobs)
        print(f"  after:  {_load()}")
        watch.close()
        return rate
    finally:
        system.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=5000)
    parser.add_argument("--port", type=int, default=20820)
    args = parser.parse_args()
    print(machine_line())
    for key in [k for k in os.environ if k.startswith("SLUICE_KAFKA_")] + ["KAFKA_BOOTSTRAP"]:
        os.environ.pop(key, None)
    home = Path(tempfile.mkdtemp(prefix="kafkasec-bench-"))
    rates: dict[str, float] = {}
    print("PLAINTEXT:")
    kafka = LocalKafka.start(home / "plain", port=args.port, heap="-Xms1g -Xmx1g")
    try:
        rates["PLAINTEXT"] = _phase(kafka, home / "plain-home", args.jobs, {},
                                    f"bench{int(time.time())}p")
    finally:
        kafka.stop()
    print("SASL_SSL (SCRAM-SHA-512):")
    kafka = LocalKafka.start(home / "secure", port=args.port, heap="-Xms1g -Xmx1g", secure=True)
    try:
        assert kafka.tls is not None
        secure = SecureSystem(home, kafka.tls.ca, kafka.tls.admin_password_file)
        upsert_scram_users(kafka.bootstrap, secure.ensure_passwords(), client=kafka.client_config)
        os.environ.update(secure.env("admin"))
        prefix = f"bench{int(time.time())}s"
        apply_acls(Settings(bootstrap=kafka.bootstrap, prefix=prefix), client=kafka.client_config)
        rates["SASL_SSL"] = _phase(kafka, home / "secure-home", args.jobs, secure.env("worker"),
                                   prefix)
    finally:
        kafka.stop()
    print(f"submission rate: PLAINTEXT {rates['PLAINTEXT']:,.0f}/s, "
          f"SASL_SSL {rates['SASL_SSL']:,.0f}/s "
          f"({rates['SASL_SSL'] / rates['PLAINTEXT'] * 100:.0f} %) over {args.jobs} jobs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
