"""srun whose step is refused because its job has ended says Slurm's ``Job/step already
completing or completed`` and how the job ended. Seen live (2026-12-08): ``srun hostname`` as
root made its allocation, the node refused the run (``RootJobRefused``: AllowRootJobs is off),
and srun said only ``Unable to create step for job 87: job 87 is not running run s009M…
(steps start inside a running allocation) [NoSuchRun]``, nothing of why."""

from __future__ import annotations

from cli.run_step import refusal_lines

DENIAL = {"reason": "NoSuchRun", "detail": "job 87 is not running run s1 (steps start inside a "
          "running allocation) (step s9)"}


def test_an_ended_job_says_how_it_ended() -> None:
    row = {"state": "FAILED", "reason": "launch refused: RootJobRefused: user 'root' is uid 0"}
    assert refusal_lines(DENIAL, 87, "s9", row) == [
        "srun: error: Unable to create step for job 87: Job/step already completing or completed",
        "srun: error: job 87 ended FAILED: launch refused: RootJobRefused: user 'root' is uid 0",
    ]
    assert refusal_lines(DENIAL, 87, "s9", {"state": "CANCELLED", "reason": ""}) == [
        "srun: error: Unable to create step for job 87: Job/step already completing or completed"]


def test_a_refusal_of_a_job_still_running_keeps_the_shards_words() -> None:
    assert refusal_lines(DENIAL, 87, "s9", {"state": "RUNNING"}) == [
        "srun: error: Unable to create step for job 87: job 87 is not running run s1 (steps "
        "start inside a running allocation) [NoSuchRun]"]
    other = {"reason": "TooManyRequestedCpus", "detail": "More processors requested (step s9)"}
    assert refusal_lines(other, 5, "s9", None) == [
        "srun: error: Unable to create step for job 5: More processors requested "
        "[TooManyRequestedCpus]"]
