"""Reading the requeue keys of a cluster file into a :class:`RequeueConfig`.

Slurm's keys (``slurm.conf``):

- ``SlurmctldParameters`` — a list or Slurm's comma string; ``enable_expedited_requeue`` is the
  one Sluice knows (any other entry is an error, so a typo never silently does nothing);
- ``SchedulerParameters`` — ``requeue_delay=<s>`` (seconds a requeued job waits before it is
  eligible again; Slurm's default is ``cred_expire``, 120 s) and ``nohold_on_prolog_fail``
  (a job whose prolog failed is requeued without a hold);
- ``JobRequeue`` — 1 (default): a batch job is requeued after a node failure unless it was
  submitted with ``--no-requeue``; 0: only jobs submitted with ``--requeue`` are;
- ``MaxBatchRequeue`` — requeues after which the job is held (``JobHoldMaxRequeue``), default 5;
- ``RequeueExit`` / ``RequeueExitHold`` — exit codes (0-255; a comma list of codes and ``lo-hi``
  ranges, e.g. ``1-9,18``, or a YAML list of them) with which a batch job that may be requeued
  is requeued, or requeued held in ``SPECIAL_EXIT``. A negative code, a code over 255, a range
  that runs backwards or anything else is an error, and so is a code in both lists (Slurm
  silently lets ``RequeueExit`` win).

Sluice's keys: ``HotSwap`` (``yes``/``no``, default ``no``; a partition may override it) and
``HotSwapWait`` (seconds an expediting job keeps its surviving nodes and waits for replacements
next to them before it accepts any placement; default 60).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from scheduler.config.model import RequeueConfig
from scheduler.config.values import (
    ConfigError,
    as_bool,
    as_choice,
    as_int,
    as_str_list,
)

__all__ = ["REQUEUE_PARAMS", "SLURMCTLD_PARAMS", "build_requeue", "hot_swap_choice"]

T = TypeVar("T")

REQUEUE_PARAMS = ("requeue_delay", "nohold_on_prolog_fail")
"""The ``SchedulerParameters`` entries read here (the scheduler's reader skips them)."""

SLURMCTLD_PARAMS = ("enable_expedited_requeue",)
"""The ``SlurmctldParameters`` entries Sluice knows."""

MAX_REQUEUE_DELAY_S = 86_400
MAX_EXIT_CODE = 255
"""Slurm's ``MAX_EXIT_VAL``: the largest exit status (``WEXITSTATUS``)."""

_CODES = re.compile(r"(\d+)(?:\s*-\s*(\d+))?")

hot_swap_choice = as_choice("yes", "no")
"""``HotSwap`` values (case-insensitive)."""


class _Keys(Protocol):
    source: str
    line: int

    def get(self, key: str, convert: Callable[[Any, str], T], default: T) -> T: ...


def build_requeue(top: _Keys, params: dict[str, str]) -> RequeueConfig:
    """The requeue configuration from the top-level keys and ``SchedulerParameters``."""
    defaults = RequeueConfig()
    no_params: tuple[str, ...] = ()
    enabled = top.get("SlurmctldParameters", _slurmctld_params, no_params)
    requeue_exit = top.get("RequeueExit", _exit_codes(), frozenset[int]())
    try:
        delay, nohold = _scheduler_params(params, defaults.requeue_delay_s)
    except ValueError as error:
        raise ConfigError(top.source, top.line, str(error)) from None
    return RequeueConfig(
        expedited_requeue="enable_expedited_requeue" in enabled,
        requeue_delay_s=delay,
        nohold_on_prolog_fail=nohold,
        job_requeue=top.get("JobRequeue", as_choice("0", "1"), "1") == "1",
        max_batch_requeue=top.get("MaxBatchRequeue", as_int(0), defaults.max_batch_requeue),
        requeue_exit=requeue_exit,
        requeue_exit_hold=top.get(
            "RequeueExitHold", _exit_codes(besides=requeue_exit), frozenset[int]()
        ),
        hot_swap=top.get("HotSwap", hot_swap_choice, "no") == "yes",
        hot_swap_wait_s=top.get("HotSwapWait", as_int(0), defaults.hot_swap_wait_s),
    )


def _scheduler_params(params: dict[str, str], default_delay_s: int) -> tuple[int, bool]:
    delay = default_delay_s
    if "requeue_delay" in params:
        delay = as_int(0)(params["requeue_delay"], "requeue_delay")
        if delay > MAX_REQUEUE_DELAY_S:
            raise ValueError(f"requeue_delay must be at most {MAX_REQUEUE_DELAY_S}, not {delay}")
    flag = params.get("nohold_on_prolog_fail")
    nohold = flag is not None and (flag == "" or as_bool(flag, "nohold_on_prolog_fail"))
    return delay, nohold


def _slurmctld_params(value: Any, key: str) -> tuple[str, ...]:
    """``enable_expedited_requeue`` (a list, or Slurm's comma string; ``name=value`` allowed)."""
    items = as_str_list(value, key)
    names = tuple(item.partition("=")[0].strip().lower() for item in items)
    unknown = [n for n in names if n not in SLURMCTLD_PARAMS]
    if any(n.startswith("rl_") for n in unknown):
        raise ValueError(f"{key}: the rl_* rate limits are the intake's, not the cluster "
                         "configuration's: give them in SlurmctldParameters of the system "
                         "configuration (/etc/sluice/sluice.conf, or "
                         "SLUICE_SLURMCTLD_PARAMETERS) of the workers")
    if unknown:
        known = ", ".join(SLURMCTLD_PARAMS)
        raise ValueError(f"{key}: unknown entry {unknown[0]!r} (known: {known})")
    return names


def _exit_codes(besides: frozenset[int] = frozenset()) -> Callable[[Any, str], frozenset[int]]:
    """A converter for ``RequeueExit``-style lists: ``1-9,18`` (or a YAML list of codes and
    ranges) → the exit codes; a code in ``besides`` (the other list) is an error."""

    def convert(value: Any, key: str) -> frozenset[int]:
        codes: set[int] = set()
        for item in as_str_list(value, key):
            codes |= _exit_code_item(item, key)
        both = sorted(codes & besides)
        if both:
            raise ValueError(
                f"{key}: exit code {both[0]} is also in RequeueExit "
                "(a code either requeues the job or requeues it held, not both)"
            )
        return frozenset(codes)

    return convert


def _exit_code_item(item: str, key: str) -> set[int]:
    match = _CODES.fullmatch(item)
    if match is None:
        if item.startswith("-") and _CODES.fullmatch(item[1:]):
            raise ValueError(f"{key}: exit codes cannot be negative ({item!r})")
        raise ValueError(f"{key}: {item!r} is not an exit code or a range of them (e.g. 1-9,18)")
    low = int(match[1])
    high = int(match[2]) if match[2] is not None else low
    if high < low:
        raise ValueError(f"{key}: the range {item!r} runs backwards")
    if high > MAX_EXIT_CODE:
        raise ValueError(f"{key}: exit code {high} is over {MAX_EXIT_CODE} in {item!r}")
    return set(range(low, high + 1))
