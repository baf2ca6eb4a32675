"""A stalled shard is visible: the age of its last cycle in the views, ``sluice status``, the
``sluice_shard_cycle_age_seconds`` metric and the ``SluiceShardStalled`` alert."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from agents.metrics import REGISTRY
from cli.status import STALE_S, status_lines
from projections.metrics import _cycle_age_families
from projections.views import Views

PROMETHEUS_DIR = Path(__file__).resolve().parents[3] / "infra" / "prometheus"
T0 = 1_700_000_000_000


def cycle(shard: str, seq: int, time_ms: int) -> dict[str, object]:
    return {"event_sluid": "s", "shard": shard, "shard_seq": seq, "time_ms": time_ms,
            "inbox_partition": 0, "inbox_from": seq, "inbox_to": seq, "pending": 0,
            "running": 0, "started": 0}


def test_the_views_keep_the_time_of_each_shards_last_cycle() -> None:
    views = Views()
    views.apply("CycleCompleted", cycle("a", 1, T0))
    views.apply("JobReleased", {"event_sluid": "s", "shard": "a", "shard_seq": 2,
                                "time_ms": T0 + 5000, "job_sluid": "j"})
    views.apply("CycleCompleted", cycle("b", 1, T0 + 1000))
    assert views.cycle_ms == {"a": T0, "b": T0 + 1000}


def test_the_metric_is_the_age_of_the_last_cycle_by_the_views_clock() -> None:
    age, last = _cycle_age_families({"a": T0, "b": T0 + 90_000}, (T0 + 100_000) / 1000)
    assert age.name == "sluice_shard_cycle_age_seconds"
    assert [(labels, value) for _, labels, value in age.samples] == [
        ((("shard", "a"),), 100.0), ((("shard", "b"),), 10.0)]
    assert [value for _, _, value in last.samples] == [T0 / 1000, T0 / 1000 + 90]


def test_status_marks_a_shard_whose_last_cycle_is_old_as_stalled() -> None:
    fresh = {"caught_up": True, "lag_records": 0, "last_fact_ms": T0,
             "shard_seq": {"a": 7, "b": 3}, "cycle_ms": {"a": T0, "b": T0},
             "cycle_age_s": {"a": 2.5, "b": STALE_S + 1}}
    lines, stalled = status_lines(fresh)
    assert stalled and lines[0].startswith("views: caught up")
    assert "shard a: seq 7" in lines[1] and "STALLED" not in lines[1]
    assert "shard b: seq 3" in lines[2] and "STALLED" in lines[2]
    assert status_lines({**fresh, "cycle_age_s": {"a": 1.0, "b": 1.0}})[1] is False


def _rules() -> list[dict[str, str]]:
    groups = yaml.safe_load((PROMETHEUS_DIR / "alerts.yml").read_text())["groups"]
    return [rule for group in groups for rule in group["rules"]]


def test_the_shipped_rules_alert_on_a_stalled_shard_and_prometheus_loads_them() -> None:
    rules = {rule["alert"]: rule for rule in _rules()}
    assert rules["SluiceShardStalled"]["expr"] == f"sluice_shard_cycle_age_seconds > {STALE_S:.0f}"
    config = yaml.safe_load((PROMETHEUS_DIR / "prometheus.yml").read_text())
    assert "alerts.yml" in config["rule_files"]
    worker = {metric.name for metric in REGISTRY.collect()}
    for name in ("SluiceRequestsFailing", "SluiceSchedulingPassFailing"):
        metric = rules[name]["expr"].split("(")[1].split("[")[0].removesuffix("_total")
        assert metric in worker, (name, metric)


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed")
def test_promtool_accepts_the_shipped_rules() -> None:
    done = subprocess.run(["promtool", "check", "rules", str(PROMETHEUS_DIR / "alerts.yml")],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_audit_shows_a_denied_request_and_the_views_keep_the_job() -> None:
    from projections.audit import audit_job
    from projections.replay import Fact

    base = {"event_sluid": "s", "shard": "a", "time_ms": T0}
    queued = {**base, "shard_seq": 1, "job_sluid": "J", "job_id": 1,
              "spec": {"user": "alice", "command": ["true"]}}
    denied = {**base, "shard_seq": 2, "request": "CancelJob", "subject_sluid": "J",
              "requester": "bob", "reason": "InternalError", "detail": "KeyError: 'x'"}
    facts = [Fact("JobQueued", queued, 0, 0), Fact("RequestDenied", denied, 0, 1)]
    entries = audit_job(facts, "J")
    assert [e.name for e in entries] == ["JobQueued", "RequestDenied"]
    assert entries[1].text == (
        "CancelJob by bob refused: InternalError — KeyError: 'x' (nothing changed)")
    views = Views()
    views.apply("JobQueued", queued)
    row = dict(views.jobs["J"])
    views.apply("RequestDenied", denied)
    assert views.jobs["J"] == row
