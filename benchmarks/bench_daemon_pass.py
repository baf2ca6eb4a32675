"""What an idle node daemon's loop costs a pass, part by part (issue 17 item 6).

    SLUICE_…=… .venv/bin/python benchmarks/bench_daemon_pass.py --name nodeX --seconds 70

Runs one real :class:`agents.node.daemon.NodeDaemon` in this process against a running system
(its settings from the environment: the ``SLUICE_*`` variables a ``sluice up`` node daemon
has, ``/proc/PID/environ``), idle for ``--seconds``, with each step of its pass
(``NodeDaemon._pass``) wrapped to add up the thread CPU it takes (``time.thread_time_ns``:
user and system time of the loop's thread, so the syscalls count). Prints per step the CPU a
call and the calls, the whole pass's CPU (median and mean, the wait's ``poll`` excluded, its
setup included), the passes a second, and the machine's load average. The wrappers add about a
microsecond a call: the whole pass is measured without them when ``--bare``.

The daemon registers a node of that name (it stays DOWN once the benchmark ends: ``scontrol
update NodeName=… State=RESUME`` or ``sluice down`` clears it).
"""

from __future__ import annotations

import argparse
import collections
import logging
import os
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

from agents.health_watch import heartbeat_interval_s, node_timeout_s
from agents.node.daemon import NodeDaemon, detect_resources
from streams.settings import Settings


def _wrap(obj: Any, name: str, label: str, cpu: collections.Counter[str],
          calls: collections.Counter[str]) -> None:
    inner: Callable[..., Any] = getattr(obj, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        began = time.thread_time_ns()
        try:
            return inner(*args, **kwargs)
        finally:
            cpu[label] += time.thread_time_ns() - began
            calls[label] += 1

    setattr(obj, name, timed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--name", default="bench-pass")
    parser.add_argument("--seconds", type=float, default=70.0)
    parser.add_argument("--bare", action="store_true", help="only the whole pass")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    daemon = NodeDaemon(Settings.from_env(), args.name, detect_resources(),
                        heartbeat_s=heartbeat_interval_s(node_timeout_s()))
    cpu: collections.Counter[str] = collections.Counter()
    calls: collections.Counter[str] = collections.Counter()
    if not args.bare:
        for name in ("_keep_lease", "_check_commands", "_heartbeat", "_register_if_lost"):
            _wrap(daemon, name, name, cpu, calls)
        for owner, name, label in (
                (daemon._runs, "poll", "runs.poll"), (daemon._steps, "poll", "steps.poll"),
                (daemon._runs, "resend_ends", "runs.resend_ends"),
                (daemon._outbox, "resend_undelivered", "outbox.resend_undelivered"),
                (daemon._gate, "refuses", "state_gate.refuses (statvfs)"),
                (daemon._trim, "after_pass", "trim.after_pass")):
            _wrap(owner, name, label, cpu, calls)
    passes: list[int] = []
    waiting = daemon._wait
    mark: list[int] = []

    def wait(feed: Any) -> None:  # a pass: from the end of one wait to the start of the next
        if mark:
            passes.append(time.thread_time_ns() - mark[0])
        began = time.thread_time_ns()
        waiting(feed)  # its sleep is off CPU: what it takes is the setup and the wake-up
        cpu["_wait (setup and wake-up)"] += time.thread_time_ns() - began
        calls["_wait (setup and wake-up)"] += 1
        mark[:] = [time.thread_time_ns()]

    daemon._wait = wait  # type: ignore[method-assign]
    load_before = os.getloadavg()
    threading.Timer(args.seconds, daemon.stop).start()
    started = time.monotonic()
    daemon.run()
    elapsed = time.monotonic() - started
    kept = passes[2:] or passes  # the first passes include the registration's flush
    print(f"node daemon {args.name}: {len(passes)} passes in {elapsed:.0f} s "
          f"({len(passes) / elapsed:.2f} a second); load {load_before[0]:.2f} -> "
          f"{os.getloadavg()[0]:.2f}")
    if kept:
        print(f"a pass: median {statistics.median(kept) / 1000:.0f} us, mean "
              f"{statistics.fmean(kept) / 1000:.0f} us of the loop thread's CPU "
              f"(the first {len(passes) - len(kept)} not counted)")
    for label, total in cpu.most_common():
        print(f"  {label:44s} {total / calls[label] / 1000:8.1f} us a call  x{calls[label]}")


if __name__ == "__main__":
    main()
