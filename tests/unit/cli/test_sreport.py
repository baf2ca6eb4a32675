"""sreport's computations and output (``cli.sreport_*``), without a system: windows that cut
runs, running jobs, requeued runs, arrays, down nodes, time formats and Slurm's layout."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from cli.main import main
from cli.sreport_cmd import window
from cli.sreport_layout import Request, UsageError, report_lines
from cli.sreport_print import MINUTES, amount, time_format, usage_width
from cli.sreport_reports import Query, Tree, account_rows, size_rows, top_rows, user_rows
from cli.sreport_usage import cluster_utilization, run_usage

H = 3_600_000
T0 = 1_767_225_600_000  # a whole hour


def run(job: int, start: int, end: int, cpus: int, *, user: str = "alice",
        account: str = "phys", nodes: tuple[str, ...] = ("n1",), **extra: Any) -> dict[str, Any]:
    return {"job_id": job, "array_job_id": 0, "array_task_id": -1, "user": user,
            "account": account, "partition": "main", "start_ms": start, "end_ms": end,
            "cpus": cpus, "nodes": list(nodes), "alloc": {}, **extra}


def node(name: str, cpus: int, *spells: tuple[int, str]) -> dict[str, Any]:
    return {"name": name, "cpus": cpus, "timeline": [[t, s, cpus] for t, s in spells]}


def test_a_run_counts_only_the_part_of_it_inside_the_window() -> None:
    across_start = run(1, T0 - H // 2, T0 + H // 2, 4)
    across_end = run(2, T0 + H - 60_000, T0 + 2 * H, 2)
    assert run_usage(across_start, T0, T0 + H, T0 + 5 * H) == 4 * H // 2
    assert run_usage(across_end, T0, T0 + H, T0 + 5 * H) == 2 * 60_000
    assert run_usage(run(3, T0 + H, T0 + 2 * H, 8), T0, T0 + H, T0 + 5 * H) == 0


def test_a_running_job_counts_up_to_now() -> None:
    running = run(1, T0 + 600_000, 0, 3)
    assert run_usage(running, T0, T0 + H, T0 + 1_200_000) == 3 * 600_000
    assert run_usage(running, T0, T0 + H, T0 + 5 * H) == 3 * (H - 600_000)


def test_each_run_of_a_requeued_job_and_each_array_task_is_charged() -> None:
    runs = [run(7, T0, T0 + 600_000, 4), run(7, T0 + 900_000, T0 + 1_500_000, 8),
            run(8, T0, T0 + 60_000, 1, array_job_id=8, array_task_id=0),
            run(9, T0, T0 + 60_000, 1, array_job_id=8, array_task_id=1)]
    query = Query(T0, T0 + H, T0 + H)
    assert user_rows(runs, query) == [{"account": "phys", "user": "alice",
                                       "used": (4 * 600 + 8 * 600 + 2 * 60)}]
    only_array = Query(T0, T0 + H, T0 + H, jobs=frozenset({8}))
    assert user_rows(runs, only_array)[0]["used"] == 120
    sizes = size_rows(runs, Tree({"phys": ""}), query, bounds=[2, 8], flat=False)
    assert sizes == [("phys", [120, 2400, 4800], [2, 1, 1])]


def test_cluster_utilization_splits_reported_time_into_allocated_down_and_idle() -> None:
    nodes = [node("n1", 4, (T0 - H, "IDLE")),
             node("n2", 4, (T0 - H, "IDLE"), (T0 + H // 2, "DRAIN")),
             node("n3", 8, (T0 + H // 2, "UNKNOWN"), (T0 + H // 2, "IDLE"))]  # joined mid-way
    runs = [run(1, T0, T0 + H, 2, nodes=("n1",)),
            run(2, T0, 0, 4, nodes=("n2",), alloc={"n2": 4})]  # still running as n2 drains
    use = cluster_utilization(runs, nodes, T0, T0 + H, T0 + 2 * H)
    assert use.reported == (4 + 4) * H + 8 * H // 2
    assert use.allocated == 2 * H + 4 * H
    assert use.down == 0  # the draining node's CPUs were all held by its job
    assert use.idle == use.reported - use.allocated
    assert use.cpu_count == 12
    idle_drained = cluster_utilization(runs[:1], nodes, T0, T0 + H, T0 + 2 * H)
    assert idle_drained.down == 4 * H // 2


def test_time_beyond_now_is_not_reported_and_allocation_past_nodes_is_overcommitted() -> None:
    nodes = [node("n1", 2, (T0, "IDLE"))]
    use = cluster_utilization([run(1, T0, 0, 4)], nodes, T0, T0 + H, T0 + H // 2)
    assert use.reported == 2 * H // 2
    assert use.allocated == 4 * H // 2
    assert (use.idle, use.overcommitted) == (0, 2 * H // 2)


def test_time_formats_print_as_sreport_does() -> None:
    assert amount(90, 0, MINUTES) == "2"  # 1.5 minutes, %.0f rounds half to even
    assert amount(150, 0, MINUTES) == "2"
    assert amount(3600 * 5, 3600 * 20, time_format("hours")) == "5"
    assert amount(30, 120, time_format("percent")) == "25.00%"
    assert amount(120, 480, time_format("minper")) == "2(25.00%)"
    assert amount(7, 70, time_format("secper")) == "7(10.00%)"
    assert amount(7, 70, time_format("s")) == "7"  # the *Per formats need all 6 letters
    with pytest.raises(ValueError, match="unknown time format"):
        time_format("fortnights")
    assert usage_width(99_999_999, MINUTES) == 8
    assert usage_width(100_000_000, MINUTES) == 9
    assert usage_width(0, time_format("hourper")) == 17


def test_the_window_defaults_to_yesterday_and_rounds_to_the_nearest_hour() -> None:
    zone = timezone(timedelta(hours=2))
    now = datetime(2026, 12, 7, 13, 10, 0, tzinfo=zone)

    def ms(*args: int) -> int:
        return int(datetime(*args, tzinfo=zone).timestamp() * 1000)

    assert window("", "", now) == (ms(2026, 12, 6), ms(2026, 12, 7))
    assert window("2026-12-07T10:29:30", "2026-12-07T11:29:29", now) == (
        ms(2026, 12, 7, 11), ms(2026, 12, 7, 12))  # 10:29:30 is 10:30 then 11:00
    assert window("2026-12-07T12:00", "now+5days", now) == (ms(2026, 12, 7, 12),
                                                             ms(2026, 12, 7, 13))  # end ≤ now
    assert window("2026-12-07T09:00", "2026-12-07T09:10", now) == (ms(2026, 12, 7, 9),
                                                                    ms(2026, 12, 7, 10))
    with pytest.raises(UsageError):
        window("yesteryear", "", now)


TREE = Tree({"science": "", "phys": "science", "chem": "science", "ops": ""},
            {"phys": ["alice", "bob"], "chem": ["carol"], "ops": []})


def test_account_utilization_lists_the_tree_with_subtree_totals() -> None:
    runs = [run(1, T0, T0 + 600_000, 2, user="alice", account="phys"),
            run(2, T0, T0 + 60_000, 1, user="carol", account="chem"),
            run(3, T0, T0 + 60_000, 1, user="dave", account="")]  # no account: root's
    rows = account_rows(runs, TREE, Query(T0, T0 + H, T0 + H), indent=True)
    assert [(r["account"], r["user"], r["used"]) for r in rows] == [
        ("root", "", 1320), (" root", "dave", 60), (" science", "", 1260),
        ("  chem", "", 60), ("   chem", "carol", 60), ("  phys", "", 1200),
        ("   phys", "alice", 1200)]  # ops and bob used nothing: no usage records, no rows
    only = account_rows(runs, TREE, Query(T0, T0 + H, T0 + H, accounts=("chem",)), indent=False)
    assert [(r["account"], r["user"]) for r in only] == [("chem", ""), ("chem", "carol")]


def test_top_usage_keeps_the_top_count_and_groups_accounts() -> None:
    runs = [run(1, T0, T0 + 60_000, 1, user="alice", account="phys"),
            run(2, T0, T0 + 60_000, 3, user="bob", account="phys"),
            run(3, T0, T0 + 60_000, 4, user="alice", account="chem")]
    query = Query(T0, T0 + H, T0 + H)
    assert [(r["user"], r["account"]) for r in top_rows(runs, query, group=False, count=2)] == [
        ("alice", "chem"), ("bob", "phys")]
    assert top_rows(runs, query, group=True, count=10) == [
        {"user": "alice", "account": "chem, phys", "used": 300},
        {"user": "bob", "account": "phys", "used": 180}]


def _lines(words: list[str], runs: list[dict[str, Any]], nodes: list[dict[str, Any]],
           *, parsable: bool = False, form: str = "minutes") -> list[str]:
    request = Request(words[0], words[1], words[2:], time_format(form))
    return report_lines(request, {"runs": runs, "nodes": nodes}, lambda: None,
                        cluster="sluice", start=T0, end=T0 + H, now=T0 + H, header=True,
                        delimiter="|" if parsable else None, trailing=False,
                        stamp=lambda ms: f"@{(ms - T0) // 1000}")


def test_cluster_utilization_prints_slurms_banner_and_columns() -> None:
    lines = _lines(["cluster", "utilization"], [run(1, T0, T0 + H, 2)],
                   [node("n1", 4, (T0 - H, "IDLE"))])
    assert lines[:4] == ["-" * 80, "Cluster Utilization @0 - @3599",
                         "Usage reported in CPU Minutes", "-" * 80]
    assert lines[4] == "  Cluster Allocate     Down PLND Dow     Idle  Planned Reported "
    assert lines[5] == "--------- -------- -------- -------- -------- -------- -------- "
    assert lines[6] == "   sluice      120        0        0      120        0      240 "
    parsable = _lines(["cl", "ut", "format=Cluster,Allocated,Reported,count"],
                      [run(1, T0, T0 + H, 2)], [node("n1", 4, (T0 - H, "IDLE"))],
                      parsable=True, form="percent")
    assert parsable[4:] == ["Cluster|Allocated|Reported|TRES Count",
                            "sluice|50.00%|100.00%|4"]


def test_the_user_reports_print_their_columns() -> None:
    runs = [run(1, T0, T0 + 600_000, 2, user="alice", account="phys")]
    nodes = [node("n1", 4, (T0 - H, "IDLE"))]
    top = _lines(["user", "top", "format=Login,Account,Used"], runs, nodes, parsable=True)
    assert top[1] == "Top 10 Users @0 - @3599 (3600 secs)"
    assert top[4:] == ["Login|Account|Used", "alice|phys|20"]
    by_user = _lines(["cluster", "UserUtilizationByAccount"], runs, nodes)
    assert by_user[4].split() == ["Cluster", "Login", "Proper", "Name", "Account", "Used",
                                  "Energy"]
    assert by_user[6].split()[:2] == ["sluice", "alice"] and by_user[6].split()[-2:] == ["20",
                                                                                          "0"]


def test_job_sizes_prints_the_groupings_and_the_share_of_the_cluster() -> None:
    runs = [run(1, T0, T0 + 600_000, 2, account=""), run(2, T0, T0 + 600_000, 60,
                                                         account="ops")]
    lines = _lines(["job", "sizes", "grouping=10,100", "printjobcount"], runs, [],
                   parsable=True)
    assert lines[2] == "Units are in number of jobs ran"
    assert lines[4:] == ["Cluster|Account|0-9 CPUs|10-99 CPUs|>= 100 CPUs|% of cluster",
                         "sluice|ops|0|1|0|50.00%", "sluice|root|1|0|0|50.00%"]


@pytest.mark.parametrize("words", [
    ["cluster", "wckeyutilizationbyuser"], ["cluster", "utilization", "bogus=1"],
    ["job", "sizes", "format=Nothing"], ["nonsense", "report"], ["user"],
])
def test_a_report_sreport_refuses_is_one_line_and_exit_1(
    words: list[str], capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["sreport", *words]) == 1
    err = capsys.readouterr().err
    assert err.startswith("sreport: error:") and len(err.strip().splitlines()) == 1, err


def test_an_unknown_time_format_or_tres_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sreport", "-t", "weeks", "cluster", "utilization"]) == 1
    assert main(["sreport", "-T", "gres/gpu", "cluster", "utilization"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "sreport: error: unknown time format weeks"
    assert "CPUs only" in err[1]


def test_the_version_and_the_usage_need_no_system(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sreport", "-V"]) == 0
    assert capsys.readouterr().out == "slurm 25.11.0\n"  # Slurm's line (test_slurm_version)
    assert main(["sreport"]) == 1  # no interactive mode
    assert capsys.readouterr().out.startswith("Usage: sreport")


def test_job_sizes_rolls_accounts_up_to_the_top_or_to_those_under_the_accounts_named() -> None:
    runs = [run(1, T0, T0 + 60_000, 1, account="phys"), run(2, T0, T0 + 60_000, 2,
                                                            account="chem"),
            run(3, T0, T0 + 60_000, 4, account="ops")]
    query = Query(T0, T0 + H, T0 + H)
    top = size_rows(runs, TREE, query, bounds=[50], flat=False)
    assert [(a, t) for a, t, _c in top] == [("ops", [240, 0]), ("science", [180, 0])]
    under = size_rows(runs, TREE, Query(T0, T0 + H, T0 + H, accounts=("science",)),
                      bounds=[50], flat=False)
    assert [(a, t) for a, t, _c in under] == [("chem", [120, 0]), ("phys", [60, 0])]
    flat = size_rows(runs, TREE, query, bounds=[50], flat=True)
    assert [a for a, _t, _c in flat] == ["chem", "ops", "phys", "science"]
