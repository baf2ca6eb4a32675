"""``sluice sdiag``: the OpenMetrics samples it reads, printed in sdiag's layout."""

from __future__ import annotations

from cli.sdiag_cmd import parse_openmetrics, sdiag_lines

VIEWS = """# HELP slurm_sdiag_jobs_submitted Jobs submitted since reset
# TYPE slurm_sdiag_jobs_submitted gauge
slurm_sdiag_jobs_submitted 12
slurm_sdiag_jobs_started 10
slurm_sdiag_jobs_completed 7
slurm_sdiag_jobs_canceled 2
slurm_sdiag_jobs_failed 1
slurm_sdiag_jobs_pending 2
slurm_sdiag_jobs_running 1
slurm_schedule_cycle_cnt 40
slurm_sched_mean_depth_cycle 3
slurm_schedule_queue_len 2
# EOF
"""
WORKER = """slurm_schedule_cycle_last 1500.0
slurm_schedule_cycle_max 9000.0
slurm_sched_mean_cycle 2100.0
sluice_intake_requests_total{request="SubmitJob"} 12.0
sluice_intake_requests_total{request="UpdateJob"} 3.0
sluice_intake_requests_created{request="UpdateJob"} 1.7e9
"""


def test_labels_and_values_are_read_and_comments_skipped() -> None:
    samples = parse_openmetrics(WORKER)
    assert samples[("sluice_intake_requests_total", (("request", "UpdateJob"),))] == 3.0
    assert ("slurm_schedule_cycle_max", ()) in samples
    assert not any(name.startswith("#") for name, _ in parse_openmetrics(VIEWS))


def test_the_report_has_sdiags_lines_and_only_what_was_measured() -> None:
    lines = sdiag_lines(parse_openmetrics(VIEWS), parse_openmetrics(WORKER), 1_800_000_000)
    text = "\n".join(lines)
    for line in ("Jobs submitted: 12", "Jobs canceled:  2", "Jobs running:   1",
                 "\tLast cycle:   1500", "\tMax cycle:    9000", "\tTotal cycles: 40",
                 "\tMean cycle:   2100", "\tLast queue length: 2"):
        assert line in lines, (line, text)
    rpcs = text.split("by message type\n")[1].splitlines()
    assert rpcs[0].split() == ["SubmitJob", "count:12"]
    assert rpcs[1].split() == ["UpdateJob", "count:3"]
    assert "Server thread count" not in text and "Backfilling" not in text


def test_a_missing_worker_leaves_its_part_out() -> None:
    lines = sdiag_lines(parse_openmetrics(VIEWS), None, 1_800_000_000)
    assert "Jobs submitted: 12" in lines
    assert not any("Last cycle" in line or "message type" in line for line in lines)
