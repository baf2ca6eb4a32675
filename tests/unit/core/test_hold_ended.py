"""``scontrol hold|uhold|release`` of a job that is no longer pending: refused in Slurm's words
(``_update_job``: ``Job has already finished`` for an ended job, ``Job is no longer pending
execution`` for a running one), never a silent success: the command printed nothing and exited
0 as if it had held a completed job (found 2026-12-07). An array's id names its tasks: the
ended ones are passed over, as before."""

from __future__ import annotations

from scheduler import HoldJob, JobEnded, JobHeld, JobQueued, JobRejected, ReleaseJob
from tests.unit.core.gwt import M, given, nodes, queued, sluid
from tests.unit.core.test_foundation import started

J1, J2, ARRAY = sluid(1), sluid(2), sluid(9)


def _ended(job_sluid: str, job_id: int) -> JobEnded:
    return JobEnded(**M, job_sluid=job_sluid, job_id=job_id, run_sluid="", state="COMPLETED")


def test_holding_or_releasing_an_ended_job_is_refused_job_finished() -> None:
    for request in (HoldJob(job_sluid=J1), HoldJob(job_sluid=J1, admin=True),
                    ReleaseJob(job_sluid=J1)):
        [fact] = given(queued(J1), _ended(J1, 1)).when(request).facts
        assert isinstance(fact, JobRejected), request
        assert (fact.reason, fact.job_sluid) == ("JobFinished", J1)


def test_releasing_a_running_job_is_refused_not_pending() -> None:
    [fact] = given(nodes("n", 1), queued(J1), started(J1, 1, ("n1",))).when(
        ReleaseJob(job_sluid=J1)).facts
    assert isinstance(fact, JobRejected) and fact.reason == "JobNotPending"


def test_an_arrays_ended_tasks_are_passed_over_and_its_pending_ones_held() -> None:
    tasks = [JobQueued(**M, job_sluid=s, job_id=i, spec=queued(s).spec,
                       array_job_sluid=ARRAY, array_task_id=i)
             for i, s in ((1, J1), (2, J2))]
    facts = given(*tasks, _ended(J1, 1)).when(HoldJob(job_sluid=ARRAY)).facts
    assert [type(f) for f in facts] == [JobHeld] and facts[0].job_sluid == J2
