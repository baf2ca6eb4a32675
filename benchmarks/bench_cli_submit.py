"""The front door: wall time of ``sluice submit`` calls against a running ``sluice up``.

    sluice up                     # with the SLUICE_* settings this benchmark inherits
    .venv/bin/python benchmarks/bench_cli_submit.py --sequential 30 --calls 1000 --from-jobs 1000

Prints, with the machine's load average before and after each phase:

1. ``--sequential`` calls of ``sluice submit -- true``, one after the other: p50 / p90 / max
   wall time per call (process start to exit, the job id printed);
2. ``--calls`` calls spread over 1 and over 4 concurrent clients (each a loop of CLI
   calls): calls per second; with ``--held``, each of them ``sluice submit --hold -- true``,
   so no job runs and the figure is the front door's alone (Slurm's own figure for held jobs
   is the one to set it beside);
3. ``sluice submit --from FILE`` with ``--from-jobs`` lines: jobs per second;
4. the split of one in-process call through the relay (imports, the spec, signing, the
   relay's exchange) for the record;
5. with ``--latency N`` (run first): N one-node jobs submitted one at a time (the client library, in
   process) on the idle system, and the time from just before the send to the moment a
   ``read_committed`` reader of the ledger holds the job's ``JobQueued`` and ``JobStarted``:
   idle submit → start, p50 / p99 (after one job not counted, so that the client's first
   send, which also fetches its producer's metadata, is not in the system's figure);
6. with ``--client-only N``: the CLI's own cost, N calls of ``sluice submit -- true`` and of
   ``sluice submit --export=NONE -- true`` (this tree's, and the baseline's when given,
   interleaved) against a stand-in relay in this process that answers each ``POST
   /v1/requests`` at once with a queued job, so no system and no Kafka hop is in the figure.
   Run under ``chrt -f 10`` (root) on a shared machine, the calls get a core at once as on an
   idle one.

With ``--baseline DIR`` (a checkout of an earlier commit, e.g. ``git archive BASE | tar -x -C
DIR``), phase 1 alternates calls of that checkout's CLI (the installed ``sluice`` script with
``DIR`` as ``PYTHONPATH``, so both start the same way; ``python -m cli.main`` also loaded
``runpy``) with this one's, and prints both: an A/B under the same load. With
``--baseline-env NAME=VALUE`` (repeated) the baseline's calls get those settings too: pointed
at a second system started from the baseline checkout (its own ``SLUICE_TOPIC_PREFIX``,
``SLUICE_HOME`` and ``SLUICE_API`` on the same broker), the A/B is of the whole front door,
CLI and server side, each call of one system between two of the other. ``--latency`` measures
the system of the current settings. Each call's CPU time (user + system, of the CLI process)
is printed beside the wall time: on a shared machine it moves much less with the load.

Every call must print "Submitted batch job N"; a failed call stops the benchmark. The tree's
bytecode is compiled first (an installed package has its ``.pyc`` files; with
``PYTHONDONTWRITEBYTECODE`` set, every call would otherwise compile the CLI's modules again).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

SLUICE = str(Path(sys.executable).with_name("sluice"))


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


BASELINE_ENV: dict[str, str] = {}
"""Settings of the baseline's calls (``--baseline-env``)."""


def timed_call(baseline: str = "", extra: tuple[str, ...] = (),
               settings: dict[str, str] | None = None) -> tuple[float, float]:
    """(wall s, CPU s) of one ``sluice submit [extra] -- true``; the CPU time is exact only
    when no other child ends meanwhile (the sequential phases)."""
    argv = [SLUICE, "submit", *extra, "--", "true"]
    env = {**os.environ, **settings} if settings else None
    if baseline:  # the same installed script, the baseline's modules first on sys.path
        env = {**os.environ, **BASELINE_ENV, **(settings or {}), "PYTHONPATH": baseline}
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=False, env=env,
                          cwd=baseline or None)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0 or "Submitted batch job" not in done.stdout:
        raise SystemExit(f"sluice submit failed ({done.returncode}): {done.stderr.strip()}")
    return elapsed, (after.ru_utime - used.ru_utime) + (after.ru_stime - used.ru_stime)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def served_cpu() -> float:
    """CPU seconds the command servers' ended children have used (their ``cutime`` and
    ``cstime``): a call the front hands to a server runs there, not in the front's process."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if b"cli.command_server" not in (entry / "cmdline").read_bytes():
                continue
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        total += int(fields[13]) + int(fields[14])  # cutime, cstime (fields 16 and 17)
    return total / ticks


def sequential(n: int, baseline: str) -> None:
    before = load()
    ours: list[tuple[float, float]] = []
    theirs: list[tuple[float, float]] = []
    python: list[tuple[float, float]] = []
    served = 0.0
    for _ in range(n):
        if baseline:
            theirs.append(timed_call(baseline))
        if FRONT_VS_PYTHON:
            python.append(timed_call(settings={"SLUICE_COMMAND_SERVER": "off"}))
        used = served_cpu()
        ours.append(timed_call())
        served += served_cpu() - used
    after = load()
    for label, rows in (("baseline", theirs), ("the Python CLI", python), ("this tree", ours)):
        if not rows:
            continue
        times, cpu = [w for w, _c in rows], [c for _w, c in rows]
        print(f"{n} sequential calls ({label}): p50 {1e3 * statistics.median(times):.0f} ms, "
              f"p90 {1e3 * pct(times, 0.9):.0f} ms, max {1e3 * max(times):.0f} ms; CPU p50 "
              f"{1e3 * statistics.median(cpu):.1f} ms a call (load {before} -> {after})")
    if served:
        print(f"  this tree's calls through the front: {1e3 * served / n:.1f} ms of CPU a call "
              f"in the command server's children (mean; clock ticks of "
              f"{1e3 / os.sysconf('SC_CLK_TCK'):.0f} ms)")


FRONT_VS_PYTHON = False
"""``--front-vs-python``: phase 1 alternates each call with one of the Python CLI."""


def clients(n: int, k: int, held: bool = False) -> None:
    before = load()
    extra = ("--hold",) if held else ()
    start = time.perf_counter()
    with ThreadPoolExecutor(k) as pool:
        times = list(pool.map(lambda _i: timed_call(extra=extra)[0], range(n)))
    elapsed = time.perf_counter() - start
    what = " (held jobs)" if held else ""
    print(f"{n} calls from {k} client(s){what}: {n / elapsed:.1f} calls/s, p50 "
          f"{1e3 * statistics.median(times):.0f} ms a call (load {before} -> {load()})")


def from_file(n: int) -> None:
    with tempfile.NamedTemporaryFile("w", suffix=".jobs", delete=False) as handle:
        handle.write("".join(f"-J bench{i} -- true\n" for i in range(n)))
    before = load()
    start = time.perf_counter()
    done = subprocess.run([SLUICE, "submit", "--parsable", "--from", handle.name],
                          capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    Path(handle.name).unlink()
    ids = done.stdout.split()
    if done.returncode != 0 or len(ids) != n:
        raise SystemExit(f"--from failed ({done.returncode}, {len(ids)} ids): {done.stderr}")
    print(f"sluice submit --from with {n} lines: {n / elapsed:.0f} jobs/s "
          f"({elapsed:.2f} s; load {before} -> {load()})")


def split() -> None:
    """One call's phases in process, as ``sluice submit -- true`` runs them (through the
    relay unless ``SLUICE_RELAY=0``): imports, the spec (arguments, ``--export ALL``
    captured and sealed), the request encoded and signed, the relay's exchange (send and
    decision); the process start and exit around them are the rest of a call's wall time."""
    code = (
        "import time; t0 = time.perf_counter()\n"
        "import cli.main\nfrom cli.client import Client\nfrom cli.export import seal_spec_env\n"
        "from cli.submit import build_spec\nfrom streams.settings import Settings\n"
        "t1 = time.perf_counter(); settings = Settings.from_env()\n"
        "args = cli.main._parser('submit').parse_args(['submit', '--', 'true'])\n"
        "spec = seal_spec_env(build_spec(args), settings)\nt2 = time.perf_counter()\n"
        "c = Client(settings); s = c.sluids.new()\n"
        "[(n, v, k)] = c._encode([(s, 'SubmitJob', {'job_sluid': s, 'spec': spec})])\n"
        "h = c.credential(v); t3 = time.perf_counter()\n"
        "d = c._relay(k, v, h, 30.0, False); t4 = time.perf_counter()\n"
        "assert d and 'job' in d, d\n"
        "print(f'{1e3*(t1-t0):.1f} {1e3*(t2-t1):.1f} {1e3*(t3-t2):.1f} {1e3*(t4-t3):.1f}')\n"
    )
    rows = []
    for _ in range(10):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True).stdout.split()
        rows.append([float(x) for x in out])
    med = [statistics.median(col) for col in zip(*rows, strict=True)]
    print(f"one call, median of 10 (in-process, through the relay): imports {med[0]:.1f} ms, "
          f"arguments + spec + seal {med[1]:.1f} ms, encode + sign {med[2]:.1f} ms, relay "
          f"(send and decision) {med[3]:.1f} ms (load {load()})")


def stand_in_relay() -> tuple[str, threading.Event]:
    """A loopback server answering every ``POST /v1/requests`` with a queued job (the key's
    SLUID, job id 7): ``(host:port, stop)``."""
    import json
    import socket

    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            conn, _ = server.accept()
            with conn:
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                data = b""
                while b"\r\n\r\n" not in data:
                    data += conn.recv(65536)
                head, _, body = data.partition(b"\r\n\r\n")
                fields = dict(line.split(b":", 1) for line in head.split(b"\r\n")[1:])
                headers = {k.strip().lower(): v.strip() for k, v in fields.items()}
                while len(body) < int(headers.get(b"content-length", b"0")):
                    body += conn.recv(65536)
                key = headers.get(b"sluice-key", b"").decode()
                answer = json.dumps({"sent": {"partition": 0, "offset": 0}, "decisions": {
                    key: {"job": {"job_id": 7, "state": "PENDING", "job_sluid": key}}}}).encode()
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                             b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(answer)
                             + answer)

    threading.Thread(target=serve, daemon=True).start()
    host, port = server.getsockname()[:2]
    return f"{host}:{port}", stop


def client_only(n: int, baseline: str) -> None:
    """The CLI alone (``--client-only``): wall and CPU p50 of each variant, interleaved."""
    api, stop = stand_in_relay()
    trees = [("baseline", baseline), ("this tree", "")] if baseline else [("this tree", "")]
    variants = [(label, tree, extra) for label, tree in trees
                for extra in ((), ("--export=NONE",))]
    rows: dict[tuple[str, tuple[str, ...]], list[tuple[float, float]]] = {
        (label, extra): [] for label, _t, extra in variants}
    before = load()
    for _ in range(n):
        for label, tree, extra in variants:
            rows[label, extra].append(timed_call(tree, extra, {"SLUICE_API": api}))
    stop.set()
    for (label, extra), values in rows.items():
        times, cpu = [w for w, _c in values], [c for _w, c in values]
        words = " ".join(("sluice submit", *extra, "-- true"))
        print(f"client only, {n} calls of {words} ({label}):"
              f" p50 {1e3 * statistics.median(times):.1f} ms, p90 {1e3 * pct(times, 0.9):.1f}"
              f" ms; CPU p50 {1e3 * statistics.median(cpu):.1f} ms (load {before} -> {load()})")


def latency(samples: int) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from confluent_kafka import OFFSET_END, TopicPartition

    from cli.client import Client
    from cli.submit import real_user
    from schemas import decode
    from streams.clients import consumer, ready_messages
    from streams.settings import Settings

    client = Client(Settings.from_env())
    client.connect()
    seen: dict[tuple[str, str], float] = {}
    reader = consumer(client.settings.bootstrap)
    topic = client.topics.events
    parts = reader.list_topics(topic, timeout=10).topics[topic].partitions
    reader.assign([TopicPartition(topic, p, OFFSET_END) for p in parts])
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            for message in ready_messages(reader, 500, 0.05):  # no batching wait
                if message.error() is None and message.value():
                    name, record = decode(message.value())
                    seen.setdefault((name, record.get("job_sluid", "")), time.perf_counter())

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    time.sleep(2)  # the reader's assignment settles
    queued, started = [], []
    spec = {"name": "lat", "user": real_user(), "command": ["sleep", "0.2"], "workdir": "/tmp"}

    def one() -> tuple[float, float]:
        sluid = client.sluids.new()
        sent = time.perf_counter()
        client.send_many([(sluid, "SubmitJob", {"job_sluid": sluid, "spec": spec})])
        deadline = time.monotonic() + 60
        while ("JobStarted", sluid) not in seen and time.monotonic() < deadline:
            time.sleep(0.002)
        if ("JobStarted", sluid) not in seen:
            raise SystemExit(f"job {sluid} did not start within 60 s")
        time.sleep(0.5)  # the system idle again
        return seen[("JobQueued", sluid)] - sent, seen[("JobStarted", sluid)] - sent

    # One job first, not counted: the first send of this fresh client fetches its producer's
    # metadata (~50 ms on its own); the figure is the system's, for a client already connected
    # (the CLI's whole call, that fetch included, is phase 1's figure).
    warm_queued, warm_started = one()
    print(f"warm-up job (not counted): submit → JobQueued {1e3 * warm_queued:.1f} ms, "
          f"→ JobStarted {1e3 * warm_started:.1f} ms")
    before = load()
    for _ in range(samples):
        q, s = one()
        queued.append(q)
        started.append(s)
    stop.set()
    thread.join(5)
    reader.close()
    for label, values in (("submit → JobQueued", queued), ("submit → JobStarted", started)):
        print(f"{label}: p50 {1e3 * statistics.median(values):.1f} ms, p99 "
              f"{1e3 * pct(values, 0.99):.1f} ms over {samples} jobs (load {before} -> {load()})")
    slowest = sorted(range(samples), key=lambda i: -started[i])[:3]
    print("slowest starts (sample number: ms): " + ", ".join(
        f"{i + 1}: {1e3 * started[i]:.1f}" for i in slowest))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sequential", type=int, default=30)
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--from-jobs", type=int, default=1000)
    parser.add_argument("--latency", type=int, default=0, metavar="N",
                        help="N idle submit -> start samples")
    parser.add_argument("--client-only", type=int, default=0, metavar="N",
                        help="N calls of each variant against a stand-in relay (the CLI alone)")
    parser.add_argument("--baseline", default="", metavar="DIR",
                        help="an earlier checkout to compare phase 1 with")
    parser.add_argument("--baseline-env", action="append", default=[], metavar="NAME=VALUE",
                        help="a setting of the baseline's calls (its own system)")
    parser.add_argument("--held", action="store_true",
                        help="phase 2: submit held jobs (--hold), so that none runs")
    parser.add_argument("--front-vs-python", action="store_true",
                        help="phase 1: alternate with the Python CLI (SLUICE_COMMAND_SERVER=off)")
    args = parser.parse_args()
    global FRONT_VS_PYTHON  # noqa: PLW0603 -- a phase's option, as BASELINE_ENV
    FRONT_VS_PYTHON = args.front_vs_python
    BASELINE_ENV.update(item.split("=", 1) for item in args.baseline_env)
    import compileall

    root = Path(__file__).resolve().parents[1]
    for package in ("agents", "cli", "schemas", "streams", "scheduler", "projections"):
        compileall.compile_dir(root / package, quiet=1)
    print(f"{os.cpu_count()} CPUs; load average {load()}")
    if args.latency:  # first, while the system is idle
        latency(args.latency)
    if args.client_only:
        client_only(args.client_only, args.baseline)
    if args.sequential:
        sequential(args.sequential, args.baseline)
    if args.sequential or args.calls or args.from_jobs:
        split()
    if args.calls:
        clients(args.calls, 1, args.held)
        clients(args.calls, 4, args.held)
    if args.from_jobs:
        from_file(args.from_jobs)


if __name__ == "__main__":
    main()
