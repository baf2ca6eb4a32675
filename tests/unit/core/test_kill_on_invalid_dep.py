"""``sbatch --kill-on-invalid-dep=yes``: a job whose dependency can never be satisfied ends
CANCELLED (reason ``DependencyNeverSatisfied``), as Slurm's ``kill_invalid_depend`` cancels it.
Before, the option was accepted and ignored: the job stayed pending for ever, so a pipeline's
``sbatch -W --kill-on-invalid-dep=yes -d afterok:$A`` after a failed ``$A`` never returned, and
a script waiting for its jobs to leave the queue waited for ever (seen live, 2026-12-08).
Without the option (``=no``, the default) it stays pending, as before."""

from __future__ import annotations

from typing import Any

import pytest

from cli.run_alloc import _submit_parser
from cli.submit import build_spec, with_script
from scheduler import evolve, schedule
from scheduler.records import JobEnded, JobPending
from tests.unit.core.gwt import T0, given, nodes, queued, sluid, spec, started
from tests.unit.core.test_job_control import ended

FAILED_JOB, DEPENDENT = sluid(1), sluid(2)


def _pass(kill: bool, text: str = "afterok:1") -> list[Any]:
    scenario = given(nodes("n", 2), queued(FAILED_JOB), started(FAILED_JOB, ("n1",), 0, 1),
                     queued(DEPENDENT, spec(dependency=text, kill_on_invalid_dep=kill)),
                     ended(FAILED_JOB, 1, "FAILED"))
    return [f for f in schedule(scenario.state, T0) if getattr(f, "job_sluid", "") == DEPENDENT]


def test_the_job_is_cancelled_once_its_dependency_can_never_be_satisfied() -> None:
    [fact] = _pass(kill=True)
    assert isinstance(fact, JobEnded)
    assert (fact.state, fact.job_state, fact.run_sluid) == ("CANCELLED", "CANCELLED", "")
    assert fact.reason == "DependencyNeverSatisfied"
    scenario = given(nodes("n", 2), queued(FAILED_JOB), started(FAILED_JOB, ("n1",), 0, 1),
                     queued(DEPENDENT, spec(dependency="afterok:1", kill_on_invalid_dep=True)),
                     ended(FAILED_JOB, 1, "FAILED"))
    assert evolve(scenario.state, fact).jobs[DEPENDENT].state == "CANCELLED"


def test_without_the_option_it_stays_pending() -> None:
    [fact] = _pass(kill=False)
    assert isinstance(fact, JobPending) and fact.reason == "DependencyNeverSatisfied"


def test_a_dependency_still_waiting_is_not_cancelled() -> None:
    scenario = given(nodes("n", 2), queued(FAILED_JOB), started(FAILED_JOB, ("n1",), 0, 1),
                     queued(DEPENDENT, spec(dependency="afterok:1", kill_on_invalid_dep=True)))
    [fact] = [f for f in schedule(scenario.state, T0) if getattr(f, "job_sluid", "") == DEPENDENT]
    assert isinstance(fact, JobPending) and fact.reason == "Dependency"


@pytest.mark.parametrize(("word", "kill"), [("yes", True), ("YES", True), ("no", False)])
def test_sbatch_takes_yes_or_no(word: str, kill: bool) -> None:
    args = _submit_parser("sbatch").parse_args([f"--kill-on-invalid-dep={word}", "--wrap", "x"])
    assert build_spec(with_script(args))["kill_on_invalid_dep"] is kill
    default = _submit_parser("sbatch").parse_args(["--wrap", "x"])
    assert build_spec(with_script(default))["kill_on_invalid_dep"] is False


def test_another_word_is_a_usage_error() -> None:
    with pytest.raises(SystemExit):
        _submit_parser("sbatch").parse_args(["--kill-on-invalid-dep=maybe", "--wrap", "x"])


def test_scontrol_and_squeue_say_why_it_was_cancelled() -> None:
    from projections.job_states import shown_reason

    assert shown_reason("CANCELLED", "DependencyNeverSatisfied") == "DependencyNeverSatisfied"
    assert shown_reason("CANCELLED", "cancelled by alice") == "None"
