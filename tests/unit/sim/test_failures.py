"""The simulator with node failures: the LANL rules, the four requeue modes, the metrics."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli.simulate import run
from sim import SimOptions, simulate
from sim.failures import FailureEvent, failure_events, load_lanl, pick_system
from sim.workload import MachineNode, TraceJob, Workload

TRACES = Path(__file__).resolve().parents[3] / ".." / "shared" / "traces"
LANL = TRACES / "failures" / "LANL-1996-2005-failures.csv"
SDSC = TRACES / "swf" / "SDSC-SP2-1998-4.2-cln.swf.gz"

HEADER = (
    "LANL Hardware/Systems/Software Failure Data,,,,,,,,,,,,,,,,,,,,,,,,,\n"
    "System,machine type,nodes,procstot,procsinnode,nodenum,nodenumz,node install,node prod,"
    "node decom,fru type,mem,cputype,memtype,num intercon,purpose,"
    "Prob Started (mm/dd/yy hh:mm),Prob Fixed (mm/dd/yy hh:mm),Down Time,Facilities,Hardware,"
    "Human Error,Network,Undetermined,Software,Same Event\n"
)


def _row(system: int, nodes: int, node: int, start: str, fixed: str, down: str) -> str:
    return (
        f"{system},cluster,{nodes},0,4,{node},{node},x,x,x,part,1,1,1,0,compute,"
        f"{start},{fixed},{down},,x,,,,,No\n"
    )


def _log(tmp_path: Path) -> Path:
    path = tmp_path / "lanl.csv"
    path.write_text(
        HEADER
        + _row(7, 4, 5, "1/1/2004 0:10", "1/1/2004 0:40", "30")
        + _row(7, 4, 1, "1/1/2004 0:00", "1/1/2004 1:00", "")
        + _row(7, 4, 1, "1/1/2004 0:30", "1/1/2004 0:35", "5")  # inside the first outage
        + _row(7, 4, 2, "1/2/2004 0:00", "1/2/2004 0:10", "10")  # past the horizon
        + _row(9, 64, 0, "1/1/2004 0:00", "1/1/2004 0:10", "10")
        + _row(9, 64, 3, "1/1/2004 1:00", "1/1/2004 1:10", "10")
    )
    return path


def test_the_lanl_log_is_read_mapped_and_cut_as_stated(tmp_path: Path) -> None:
    records = load_lanl(_log(tmp_path))
    assert len(records) == 6
    assert pick_system(records, 4) == 7 and pick_system(records, 60) == 9
    events = failure_events(records, 7, 4, horizon_s=3600)
    # node 1 at 0 s for 60 min (Prob Fixed - Prob Started), node 5 -> 5 mod 4 = 1 is still down
    # at 10 min (skipped), the 0:30 record too; the next day is past the horizon
    assert events == [FailureEvent(0, 1, 3600)]
    assert failure_events(records, 9, 4, horizon_s=86_400) == [
        FailureEvent(0, 0, 600),
        FailureEvent(3600, 3, 600),
    ]


def _one_gang(mode: str) -> dict[str, object]:
    """A 2-node job (1000 s) on 4 nodes; n1 fails at 100 s for 300 s."""
    workload = Workload(
        "gang",
        [MachineNode(f"n{i}", 1) for i in range(1, 5)],
        [TraceJob(1, 0, 1000, 2, 2000)],
    )
    options = SimOptions(failures=(FailureEvent(100, 0, 300),), requeue=mode, epilog_s=5)
    return simulate(workload, options).as_json()


def test_without_requeue_the_job_a_failure_hits_is_lost() -> None:
    result = _one_gang("none")
    assert (result["jobs"], result["jobs_lost"], result["restarts"]) == (0, 1, 0)
    assert result["goodput"] == 0.0 and result["mttr_s"] is None


def test_a_normal_requeue_restarts_after_the_epilog_and_the_requeue_delay() -> None:
    result = _one_gang("normal")
    assert (result["jobs"], result["restarts"]) == (1, 1)
    assert result["mttr_s"] == pytest.approx(5 + 121)  # epilog, then requeue_delay + 1
    # useful 2 x 1000; allocated: the killed run 2 x 100, n2 completing 5 s, the last run
    assert result["goodput"] == pytest.approx(2000 / (200 + 5 + 2000), abs=1e-6)


@pytest.mark.parametrize("mode", ["expedite", "hotswap"])
def test_an_expedited_requeue_restarts_as_soon_as_the_epilog_is_in(mode: str) -> None:
    result = _one_gang(mode)
    assert (result["jobs"], result["restarts"]) == (1, 1)
    assert result["mttr_s"] == pytest.approx(5)


def test_a_failure_free_run_is_unchanged_by_the_requeue_machinery() -> None:
    workload = Workload(
        "plain", [MachineNode(f"n{i}", 1) for i in range(1, 3)], [TraceJob(1, 0, 100, 2, 100)]
    )
    plain = simulate(workload, SimOptions())
    assert plain.jobs == 1 and "goodput" not in plain.as_json()


@pytest.mark.skipif(not (LANL.exists() and SDSC.exists()), reason="public traces not found")
def test_the_cli_replays_lanl_failures_over_sdsc(capsys: pytest.CaptureFixture[str]) -> None:
    argv = [str(SDSC), "--failures", str(LANL), "--requeue", "expedite", "--max-jobs", "1500"]
    assert run([*argv, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["failure_system"] == 5 and result["requeue"] == "expedite"
    assert result["failures_injected"] > 0 and 0 < result["goodput"] <= 1
