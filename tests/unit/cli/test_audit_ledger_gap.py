"""``sluice audit``/``verify``/``replay`` on a ledger with a gap or a repeated ``shard_seq``
say so in one line and exit 1. Found by h3 (2026-12-07): a fact numbered twice (a bug since
fixed in the shard) made ``sluice audit`` end in a ``LedgerGapError`` traceback."""

from __future__ import annotations

import io
from typing import Any

import pytest

from cli import audit
from projections.replay import Fact
from streams.settings import Settings


def test_an_audit_of_a_ledger_with_a_repeated_fact_number_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    facts = [Fact("JobQueued", {"shard": "a", "shard_seq": 1, "time_ms": 1, "job_sluid": "j1",
                                "job_id": 1, "spec": {"user": "alice", "command": ["true"]}},
                  0, 0),
             Fact("JobPending", {"shard": "a", "shard_seq": 1, "time_ms": 2,
                                 "job_sluid": "j1"}, 0, 1)]
    monkeypatch.setattr(audit, "read_facts", lambda _settings: facts)
    monkeypatch.setattr(audit, "dead_letters", lambda *_a: [])
    monkeypatch.setattr(audit, "Client", lambda _settings: None)
    code = audit.run(["audit", "j1"], io.StringIO(), Settings())
    err = capsys.readouterr().err
    assert code == 1
    assert err.startswith("sluice audit: the ledger is not whole: shard a: expected shard_seq 2")
    assert "Traceback" not in err


def test_the_catch_is_only_for_a_gap(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(_settings: Any) -> list[Fact]:
        raise RuntimeError("not a gap")

    monkeypatch.setattr(audit, "read_facts", broken)
    with pytest.raises(RuntimeError, match="not a gap"):
        audit.run(["audit", "j1"], io.StringIO(), Settings())
