"""A fresh launch refused as expired: the node's clock runs ahead (drained, its run requeued).

A node daemon refuses a command whose signed expiry (the worker's clock at signing plus
``CommandTTL``) is past on the node's own clock (``CommandExpired``). A node whose clock runs
ahead of the workers' by more than ``CommandTTL`` refuses every launch so: without this rule its
jobs showed RUNNING until ``MissingRunGrace`` ended them ``NODE_FAIL`` minutes later, were
requeued and could be sent to the same node again.

The daemon reports such a refusal of a ``LaunchRun`` whose run it never started with the
command's expiry, read from its verified signature (``ReportCommandRefused.expiry_ms``).
:func:`decide_refused_launch` decides, at the refusal's decision time (record time, never a
clock):

- **fresh** — the shard decides the refusal before that expiry: by the shard's own record time
  the command had not expired, so the node that refused it (earlier still) judged by a clock
  ahead of the workers' by more than ``expiry - now``. The launch never ran there. In the same
  decision: ``NodeStateChanged(DRAIN, "Clock skew: …")`` (unless the node is DRAIN or DOWN
  already: an operator's reason stays), then the run ends as after a launch failure, ``JobEnded
  (NODE_FAIL)`` with the usual node-failure requeue (a kill in progress — cancel, time limit,
  requeue — ends it with the kill's state instead), and the node's epilog counts as done
  (``NodeEpilogCompleted(ok)``: nothing ran there, and its ``KillRun`` would be refused too),
  so a requeue waits only for the run's other nodes;
- **stale** — decided at or after the expiry (a copy replayed once it expired, a command read
  late): nothing proves the node's clock wrong; nothing but the ``NodeCommandRefused`` fact;
- **not the current run** — the run is not the RUNNING run of a job on that node (it ended,
  was requeued, or was never the shard's): nothing. So a repeated report (the intake may
  forward one twice) finds the run ended and changes nothing.

Only ``CommandExpired`` drains: every other reason may be an attacker's doing (an unsigned,
forged, altered or misaddressed record written to ``sluice.node-commands``), and a replay
refusal says the launch ran. Who may report: ``scheduler.access.authz`` lets only a node
credential for the reporting node's name through (with ``AuthRequired``), and the core ignores
a report whose node SLUID is not that name's (``scheduler.nodes.command_refusals``).
"""

from __future__ import annotations

from scheduler.jobs.epilog import epilog_with_exit
from scheduler.nodes.failures import runs_on
from scheduler.records import Fact, JobEnded, NodeStateChanged, ReportCommandRefused
from scheduler.requeue.rules import end_outcome, ending_facts
from scheduler.shard.model import Job, Node
from scheduler.shard.reasons import JobState, NodeReason, NodeState
from scheduler.shard.stamp import Stamper
from scheduler.shard.state import ShardState

__all__ = ["EXPIRED", "LAUNCH", "clock_ahead_reason", "decide_refused_launch", "drain_skewed",
           "refused_run"]

EXPIRED = "CommandExpired"
"""The node's reason for a command whose expiry is past on its clock
(``agents.auth.command_signature.Refusal.EXPIRED``)."""
LAUNCH = "LaunchRun"


def clock_ahead_reason(ahead_s: int) -> str:
    """The drain reason: the node's clock runs ahead of the workers' by more than ``ahead_s``."""
    return f"{NodeReason.CLOCK_SKEW} (ahead by more than {ahead_s} s)"


def refused_run(state: ShardState, node: Node, run_sluid: str) -> Job | None:
    """The RUNNING job whose current run is ``run_sluid`` on ``node``, if any (one scan of the
    running jobs, only for a fresh refusal as expired)."""
    if not run_sluid:
        return None
    for job in runs_on(state, node.name):
        if job.run_sluid == run_sluid and job.is_running and node.node_sluid in job.node_sluids:
            return job
    return None


def decide_refused_launch(state: ShardState, node: Node, req: ReportCommandRefused,
                          st: Stamper) -> list[Fact]:
    """The facts a refused ``LaunchRun`` decides beyond its ``NodeCommandRefused`` (module)."""
    if req.command != LAUNCH or req.reason != EXPIRED or req.expiry_ms <= st.time_ms:
        return []  # not a refusal as expired, or stale by the shard's own record time
    job = None if node.superseded else refused_run(state, node, req.run_sluid)
    if job is None:
        return []
    ahead_s = (req.expiry_ms - st.time_ms) // 1000
    facts = drain_skewed(node, clock_ahead_reason(ahead_s), st)
    kill = job.kill_reason
    final = JobState.REQUEUED if kill in (JobState.REQUEUED, JobState.REQUEUE_HOLD) else (
        kill or JobState.NODE_FAIL)  # a kill in progress wins, as over a node failure
    end = (final, 0)
    outcome = end_outcome(state, job, kill, end)
    facts.append(JobEnded(
        **st.meta(),
        job_sluid=job.job_sluid,
        job_id=job.job_id,
        run_sluid=job.run_sluid,
        state=final,
        reason=(f"Launch refused by node {node.name}: its clock runs ahead by more than "
                f"{ahead_s} s (the launch had not expired)"),
        **outcome.fact_fields(),
    ))
    facts += ending_facts(state, job, kill, end, st)
    return facts + epilog_with_exit(state, job, end, node.name, st)


def drain_skewed(node: Node, reason: str, st: Stamper) -> list[Fact]:
    """``NodeStateChanged(DRAIN, reason)`` for a node whose clock runs ahead, unless it is DRAIN
    or DOWN already (an operator's reason, or an earlier one, stays)."""
    if node.state in (NodeState.DOWN, NodeState.DRAIN):
        return []
    return [NodeStateChanged(**st.meta(), node_sluid=node.node_sluid, name=node.name,
                             state=NodeState.DRAIN, reason=reason)]
