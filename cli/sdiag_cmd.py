"""``sluice sdiag`` (sdiag): the scheduler's statistics in sdiag's layout, from what is measured.

Sources, both OpenMetrics text read over HTTP (docs/observability.md):

- the views' ``/metrics/scheduler`` (``SLUICE_API``): the job counters since the views started
  (submitted, started, completed, canceled, failed), the pending and running jobs at the
  shards' last cycles, the cycles that wrote facts and the inbox records they decided;
- the worker's metrics server (``SLUICE_WORKER_METRICS``, default ``127.0.0.1:9108``): the
  cycle times (last, max, total, mean, µs, as sdiag) and the requests the intake forwarded by
  kind (sdiag's "Remote Procedure Call statistics by message type": counts only).

What sdiag prints and Sluice has no counterpart for (server threads, agent queues, slurmdbd,
backfill cycle statistics, RPC times, RPCs by user) is left out, not printed as zero. A source
that does not answer is one line on stderr and its part is left out; neither answering is exit
1. Several workers: the worker named by ``SLUICE_WORKER_METRICS`` alone.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from typing import Any

from cli.api_http import connect, exchange
from streams.settings import Settings

__all__ = ["Samples", "add_parsers", "fetch_text", "parse_openmetrics", "sdiag_lines",
           "worker_metrics"]

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]
"""OpenMetrics samples: (name, sorted labels) → value."""

_SAMPLE = re.compile(r'^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)')
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
_WORKER_DEFAULT = "127.0.0.1:9108"


def worker_metrics() -> str:
    """The worker's metrics server (``SLUICE_WORKER_METRICS``, else ``127.0.0.1:9108``)."""
    return os.environ.get("SLUICE_WORKER_METRICS") or _WORKER_DEFAULT


def add_parsers(sub: Any) -> None:
    """Register sdiag."""
    p = sub.add_parser("sdiag", help="scheduler statistics (like sdiag)")
    p.add_argument("-a", "--all", action="store_true", help="all statistics (the default)")
    p.set_defaults(run=_sdiag)


def parse_openmetrics(text: str) -> Samples:
    """The samples of an OpenMetrics (or Prometheus) text exposition; comments skipped."""
    samples: Samples = {}
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if match is None or line.startswith("#"):
            continue
        name, labels, value = match.groups()
        try:
            number = float(value)
        except ValueError:
            continue
        pairs = tuple(sorted(_LABEL.findall(labels or "")))
        samples[(name, pairs)] = number
    return samples


def fetch_text(address: str, path: str, headers: dict[str, str]) -> str:
    """The body of ``GET path`` at ``address`` (host:port; 5 s to connect); OSError unless 200."""
    host, _, port = address.rpartition(":")
    sock = connect(host.strip("[]"), int(port), 5.0)
    status, body = exchange(sock, "GET", host, path, headers, None)
    if status != 200:
        raise OSError(f"HTTP {status}")
    return body.decode("utf-8", "replace")


def _one(samples: Samples, name: str) -> float | None:
    values = [v for (n, _), v in samples.items() if n == name]
    return sum(values) if values else None


def _when(seconds: float) -> str:
    return f"{time.strftime('%a %b %d %H:%M:%S %Y', time.localtime(seconds))} ({int(seconds)})"


def sdiag_lines(views: Samples | None, worker: Samples | None, now_s: float) -> list[str]:
    """sdiag's report of the samples (either source may be missing: its part is left out)."""
    lines = ["*******************************************************",
             f"sdiag output at {_when(now_s)}",
             "*******************************************************"]
    if views is not None:
        def count(key: str) -> int:
            return int(_one(views, f"slurm_sdiag_jobs_{key}") or 0)
        lines += [f"Jobs submitted: {count('submitted')}", f"Jobs started:   {count('started')}",
                  f"Jobs completed: {count('completed')}", f"Jobs canceled:  {count('canceled')}",
                  f"Jobs failed:    {count('failed')}", ""]
        stamp = _one(views, "slurm_sdiag_job_states_ts")
        if stamp:
            lines.append(f"Job states ts:  {_when(stamp)}")
        lines += [f"Jobs pending:   {count('pending')}", f"Jobs running:   {count('running')}"]
    lines += ["", "Main schedule statistics (microseconds):"]
    if worker is not None:
        for label, name in (("Last cycle:  ", "slurm_schedule_cycle_last"),
                            ("Max cycle:   ", "slurm_schedule_cycle_max"),
                            ("Mean cycle:  ", "slurm_sched_mean_cycle")):
            lines.append(f"\t{label} {int(_one(worker, name) or 0)}")
    if views is not None:
        for label, name in (("Total cycles:", "slurm_schedule_cycle_cnt"),
                            ("Mean depth cycle: ", "slurm_sched_mean_depth_cycle"),
                            ("Last queue length:", "slurm_schedule_queue_len")):
            lines.append(f"\t{label} {int(_one(views, name) or 0)}")
    if worker is not None:
        lines += ["", "Remote Procedure Call statistics by message type"]
        rpcs = sorted(((dict(labels).get("request", ""), int(value))
                       for (name, labels), value in worker.items()
                       if name == "sluice_intake_requests_total"), key=lambda r: (-r[1], r[0]))
        lines += [f"\t{kind:<40} count:{n}" for kind, n in rpcs] or ["\tNo RPCs recorded yet."]
    return lines


def _sdiag(args: argparse.Namespace, settings: Settings) -> int:
    del args
    views: Samples | None = None
    worker: Samples | None = None
    from agents.auth.signer import CredentialError, RequestSigner

    try:
        headers = RequestSigner(settings).api_headers("/metrics/scheduler")
        views = parse_openmetrics(fetch_text(settings.api, "/metrics/scheduler", headers))
    except (CredentialError, OSError, ValueError) as exc:
        print(f"sdiag: the views at {settings.api} do not answer ({exc})", file=sys.stderr)
    address = worker_metrics()
    try:
        worker = parse_openmetrics(fetch_text(address, "/metrics", {}))
    except (OSError, ValueError) as exc:
        print(f"sdiag: the worker's metrics at {address} do not answer ({exc})",
              file=sys.stderr)
    if views is None and worker is None:
        return 1
    print("\n".join(sdiag_lines(views, worker, time.time())))
    return 0
