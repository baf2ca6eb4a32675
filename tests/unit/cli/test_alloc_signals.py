"""srun and salloc cancel the allocation they wait for on SIGTERM, SIGHUP, SIGQUIT, SIGUSR1,
SIGUSR2 and SIGALRM, as on Ctrl-C (Slurm's ``_signal_while_allocating``). Seen live
(2026-12-08): ``timeout 8 srun -N1 hostname`` on a busy cluster ended srun and left job 146
queued; it then started and stayed RUNNING with no step, its holder waiting for one, holding
its node until its time limit (none)."""

from __future__ import annotations

import argparse
import os
import signal
from typing import Any

import pytest

from cli import run_alloc
from cli.client import Decision
from cli.run_alloc import run_allocated, signals_interrupt


def test_a_signal_interrupts_inside_and_is_back_after() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt), signals_interrupt():
        os.kill(os.getpid(), signal.SIGTERM)
    assert signal.getsignal(signal.SIGTERM) is before


def test_an_ignored_signal_stays_ignored() -> None:
    old = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with signals_interrupt():
            os.kill(os.getpid(), signal.SIGHUP)  # nohup srun: nothing happens
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, old)


def test_srun_cancels_its_pending_allocation_on_sigterm(
        monkeypatch: pytest.MonkeyPatch) -> None:
    cancelled: list[str] = []
    decision = Decision(job_sluid="sJ", state="PENDING", job_id=148)
    monkeypatch.setattr(run_alloc, "allocate", lambda *a: (object(), decision))
    monkeypatch.setattr(run_alloc, "allocation_argv", lambda *a: [])

    def waiting(*args: Any, **kwargs: Any) -> None:
        os.kill(os.getpid(), signal.SIGTERM)  # timeout(1) gives up while the job is queued

    monkeypatch.setattr(run_alloc, "wait_started", waiting)
    monkeypatch.setattr(run_alloc, "cancel", lambda client, sluid, prog: cancelled.append(sluid))
    args = argparse.Namespace(quit_on_interrupt=False)
    assert run_allocated(args, object(), ["hostname"]) == 130  # type: ignore[arg-type]
    assert cancelled == ["sJ"]
