"""The gangs the bridge knows: their pods, their Sluice job, the binding of their runs.

A gang whose last pod is deleted while its controller is gone too (a bare pod; a Job that was
deleted, or replaced by another of the same name) or makes no pod again (a Job suspended or
finished, its namespace being deleted) is **gone**: its Sluice job is cancelled
(``CancelJob``, reason ``pods deleted``) and the gang forgotten. A Job's pod deleted while the
Job lives is not: the Job controller makes another, bound to the same slot. The same check runs
for every gang the bridge remembers when a list of the pods completes (at start, and after a
watch that fell too far behind), so pods deleted while the bridge was down, or while its watch
was broken, end their jobs too: a pod the list does not name is taken as deleted; and a gang
without pods is checked again with the waiting ones. A gang whose job Sluice ended (cancel,
time limit, deadline) is not submitted again: its pods that wait say why.
"""

from __future__ import annotations

import hashlib
import logging
import time
from typing import TYPE_CHECKING, Any

from agents.bridge.devices import ClaimError
from agents.bridge.gang import Gang, GangError, gang_of, gang_size, job_spec
from agents.bridge.owner import NO_SLUICE_USER, owner
from agents.bridge.placement import excluded_nodes
from agents.bridge.slots import Run, assignments, live, outcome, terminal
from cli.client import ApiError, Client

if TYPE_CHECKING:
    from agents.bridge.daemon import Bridge

__all__ = ["GangTable"]

log = logging.getLogger(__name__)

_ENDED = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED",
          "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE"}
_REFUSED = {"REJECTED", "DENIED"}
_ENDED_BY_SLUICE = {"CANCELLED", "TIMEOUT", "DEADLINE"}
"""Ends Sluice decided for the whole job: its gang is not submitted again."""
_JOB_ENDING = {"Complete", "Failed", "FailureTarget", "SuccessCriteriaMet"}
"""Job conditions after which its controller makes no pod again."""
_OWNER_REASONS = {NO_SLUICE_USER, "NamespaceUnreadable"}
"""Refusals an administrator ends by annotating the namespace (or by the bridge's RBAC): the
gang is checked again with the waiting ones, and submitted once its namespace names a user."""
CHECK_AFTER_S = 3.0
CHECK_EVERY_S = 10.0
CHECKS_PER_PASS = 25


class GangTable:
    """Pods by gang; Sluice runs bound to them."""

    def __init__(self, bridge: Bridge, default_user: str = "") -> None:
        self.bridge = bridge
        self.default_user = default_user
        """Whose jobs the gangs of a namespace without ``sluice.dev/user`` are ("": refused,
        ``NoSluiceUser``; checked by ``agents.bridge.owner.check_default_user``)."""
        self.pods: dict[str, dict[str, Any]] = {}  # uid → pod
        self.members: dict[str, set[str]] = {}  # gang key → pod uids
        self.gangs: dict[str, Gang] = {}
        self.annotations: dict[str, dict[str, str]] = {}  # gang key → its sluice.dev/ intent
        self._said: dict[str, str] = {}  # gang key → the last reason written on its pods
        self._foreign: dict[str, str] = {}  # pod uid → why it is no member of the Job it names
        self._client: Any = None
        self._next_check: dict[str, float] = {}  # gang key → when check_waiting asks again
        self.listed = False  # a list of the pods completed (reconcile): members are known

    @property
    def state(self) -> Any:
        return self.bridge.state

    def _gang_pods(self, key: str) -> dict[str, dict[str, Any]]:
        return {uid: self.pods[uid] for uid in self.members.get(key, ()) if uid in self.pods}

    # -- pods in --------------------------------------------------------------------------

    def on_pod(self, event: str, pod: dict[str, Any]) -> None:
        """A watch event of a pod named for this scheduler."""
        uid = pod["metadata"]["uid"]
        key, kind, namespace, name = gang_of(pod)
        known = self.gangs[key].namespace if key in self.gangs else \
            (self.state.refs.get(key) or ["", namespace])[1]
        if known != namespace:
            # A pod whose ownerReferences name another namespace's Job (its uid) is no member
            # of that Job's gang: it was bound into the other tenant's run (red team).
            log.warning("pod %s/%s names a Job of %s as its controller: ignored", namespace,
                        pod["metadata"].get("name", ""), known)
            return
        if event == "DELETED":
            self._foreign.pop(uid, None)
            self.pods.pop(uid, None)
            self.members.get(key, set()).discard(uid)
            if not self.members.get(key) and self._gone(key):
                return
        else:
            self.pods[uid] = pod
            self.members.setdefault(key, set()).add(uid)
            if key in self.state.gangs and key not in self.state.refs:
                self.state.refs[key] = [kind, namespace, name]  # a state file from before refs
                self.state.touch()
        if key not in self.gangs and event != "DELETED" and live(pod) and not terminal(pod) \
                and not pod.get("spec", {}).get("nodeName"):
            self._admit(key, kind, namespace, name, pod)
        self._settle(key)

    def _admit(self, key: str, kind: str, namespace: str, name: str,
               pod: dict[str, Any]) -> None:
        """Know a new gang; submit it unless a Sluice job already stands for it."""
        annotations = dict(pod["metadata"].get("annotations") or {})
        try:
            job = self.bridge.kube.job(namespace, name) if kind == "Job" else None
            if kind == "Job" and job is None:
                return  # the Job is gone; its pods will be too
            if job is not None and job["metadata"].get("uid") != key:
                self._say_foreign(pod, f"the pod's controller is a Job {name} of uid {key}, "
                                  f"which is not the Job {namespace}/{name}: a pod joins only "
                                  "its own namespace's Job")
                return  # not known under that key: the real Job's gang is not taken
            if job is not None:
                annotations = {**annotations, **(job["metadata"].get("annotations") or {})}
            gang = Gang(key, kind, namespace, name, gang_size(job))
            self.gangs[key], self.annotations[key] = gang, annotations
            if key not in self.state.gangs:
                self._submit(gang, pod, annotations)
        except (GangError, ClaimError) as exc:
            if exc.reason not in _OWNER_REASONS or key not in self.gangs:
                self.gangs[key] = Gang(key, kind, namespace, name, 0)  # never tried again
            self._say(key, exc.reason, exc.detail)

    def on_claim(self, claim: dict[str, Any]) -> None:
        """A ResourceClaim changed: settle the gang of the pod it was made for."""
        for ref in claim.get("metadata", {}).get("ownerReferences") or []:
            pod = self.pods.get(str(ref.get("uid", ""))) if ref.get("kind") == "Pod" else None
            if pod is not None:
                self._settle(gang_of(pod)[0])

    def _submit(self, gang: Gang, pod: dict[str, Any], annotations: dict[str, str]) -> None:
        nodes = self.bridge.nodes
        exclude = excluded_nodes(pod, nodes)
        if nodes and len(exclude) == len(nodes):
            raise GangError("NoNodeAllowed", f"none of the {len(nodes)} nodes is allowed by "
                            "the pod's nodeSelector, required node affinity and tolerations "
                            "(NoSchedule/NoExecute taints)")
        user = owner(gang.namespace, self.bridge.kube.namespace_user(gang.namespace),
                     self.default_user)
        spec = job_spec(gang, pod, annotations, self.bridge.claims.gpu_demand(pod), user,
                        exclude)
        job_sluid = self.bridge.sluids.new()
        self.bridge.submit(job_sluid, spec, gang_nonce(gang.key))
        self.state.gangs[gang.key] = job_sluid
        self.state.refs[gang.key] = [gang.kind, gang.namespace, gang.name]
        self.state.touch()
        log.info("%s %s/%s (%d pods) submitted as %s for %s", gang.kind, gang.namespace,
                 gang.name, gang.size, job_sluid, spec["user"])

    # -- gangs gone -----------------------------------------------------------------------

    def reconcile(self, listed: set[str]) -> None:
        """A list of the pods completed: a pod it does not name was deleted unseen; then every
        remembered gang without a pod is checked (``_gone``)."""
        self.listed = True
        for uid in [u for u in self.pods if u not in listed]:
            pod = self.pods.pop(uid)
            self.members.get(gang_of(pod)[0], set()).discard(uid)
        for key in [k for k in self.state.gangs if not self.members.get(k)]:
            self._gone(key)

    def _gone(self, key: str) -> bool:
        """True, after cancelling its job and forgetting it, if the gang of ``key`` (none of
        whose pods exists) will have no pod again: a bare pod's gang, or a Job's that is
        deleted, being deleted, or replaced by another Job of the same name."""
        ref = self.state.refs.get(key)
        if ref is None or key not in self.state.gangs:
            return False  # not ours, or from a state file that did not say what it was
        kind, namespace, name = ref
        if kind == "Job" and self._makes_pods_again(key, namespace, name):
            return False
        job_sluid = self._forget(key)
        self.bridge.send(job_sluid, "CancelJob", {
            "job_sluid": job_sluid, "user": "", "reason": "pods deleted"})
        log.info("%s %s/%s is gone with its pods: job %s cancelled", kind, namespace, name,
                 job_sluid)
        return True

    def _forget(self, key: str) -> str:
        """Forget a gang (its job SLUID is kept among the cancelled: a run that starts
        before the end is known binds nothing and is killed)."""
        for table in (self.gangs, self.annotations, self._said, self._next_check, self.members):
            table.pop(key, None)
        return str(self.state.forget_gang(key))

    def _makes_pods_again(self, key: str, namespace: str, name: str) -> bool:
        """Whether the controller of a Job gang (``key``: the Job's uid) makes its pods again:
        the Job lives and is not being deleted, replaced, suspended or finished (a deadline or
        backoff limit it passed, its completions done), and its namespace is not being
        deleted (the namespace controller deletes the pods before the Job, and no pod may be
        created there again). Any of those, and a Sluice job without pods would hold its nodes
        for ever."""
        job = self.bridge.kube.job(namespace, name)
        if job is None:
            return False
        meta, spec = job.get("metadata", {}), job.get("spec") or {}
        conditions = (job.get("status") or {}).get("conditions") or []
        if meta.get("uid") != key or meta.get("deletionTimestamp") or spec.get("suspend") \
                or any(c.get("type") in _JOB_ENDING and c.get("status") == "True"
                       for c in conditions):
            return False
        return not self.bridge.kube.namespace_ending(namespace)

    def _say_foreign(self, pod: dict[str, Any], message: str) -> None:
        """Say ``ForeignOwner`` on one pod, once (the gang it names is not its own)."""
        meta = pod["metadata"]
        if self._foreign.get(meta["uid"]) != message:
            self._foreign[meta["uid"]] = message
            self.bridge.kube.unschedulable(meta["namespace"], meta["name"], "ForeignOwner",
                                           message, meta["uid"])

    def _say(self, key: str, reason: str, message: str) -> None:
        if self._said.get(key) == f"{reason}:{message}":
            return
        self._said[key] = f"{reason}:{message}"
        for pod in self._gang_pods(key).values():
            if live(pod) and not pod.get("spec", {}).get("nodeName"):
                meta = pod["metadata"]
                self.bridge.kube.unschedulable(meta["namespace"], meta["name"], reason, message,
                                               meta.get("uid", ""))

    # -- runs -----------------------------------------------------------------------------

    def launch(self, node: str, record: dict[str, Any]) -> None:
        """A LaunchRun for one of our nodes: the run's slots, then bind what can be bound."""
        job_sluid = record["job_sluid"]
        key = next((k for k, s in self.state.gangs.items() if s == job_sluid), None)
        if key is None:  # a gang that is gone: its run is kept until the cancel's KillRun
            key = self.state.cancelled.get(job_sluid)
        if key is None:
            log.warning("a run of %s, which no gang of ours stands for", job_sluid)
            return
        ref = self.state.refs.get(key)
        if ref is not None and record.get("command") != ["kubernetes", ref[0],
                                                          f"{ref[1]}/{ref[2]}"]:
            log.warning("a run of %s that is not %s %s/%s's (another client's job drew its "
                        "SLUID): ignored", job_sluid, *ref)
            return
        run = self.state.runs.get(record["run_sluid"])
        if run is None:
            run = Run(record["run_sluid"], job_sluid, key, list(record.get("nodes") or [node]))
            self.state.runs[run.run_sluid] = run
        for old in [r for r in self.state.runs.values()
                    if r.gang == key and r.run_sluid != run.run_sluid]:
            self._release(old, "requeued")  # a new run: the old one's pods go (a launch the
            # API server failed is run again: so is this)
        if record.get("batch_host"):
            run.batch_node = node
        self.state.touch()
        self._settle(key)

    def kill(self, node: str, record: dict[str, Any]) -> None:
        """A KillRun: delete the run's pod on that node, then report its epilog."""
        run = self.state.runs.get(record["run_sluid"])
        if run is None:
            return
        self._delete_slot(run, node)
        reason = record.get("reason", "")
        if node == (run.batch_node or run.nodes[0]) and not run.exit_reported \
                and reason != "TERMINATE":  # TERMINATE: the run already ended
            run.exit_reported = True
            self.bridge.report("ReportJobExit", run, node, {
                "exit_code": 0, "signal": 15, "detail": reason})
        self._epilog(run, node)

    def _epilog(self, run: Run, node: str) -> None:
        if node in run.epilogs:
            return
        run.epilogs.append(node)
        self.bridge.report("ReportEpilog", run, node, {"ok": True, "exit_code": 0, "detail": ""})
        if all(n in run.epilogs for n in run.nodes if n in self.state.nodes):
            self.state.runs.pop(run.run_sluid, None)
        self.state.touch()

    def _delete_slot(self, run: Run, node: str) -> None:
        pod = self.pods.get(run.slots.get(node, ""))
        if pod is not None and live(pod) and not terminal(pod):
            meta = pod["metadata"]
            view = self.bridge.nodes.get(node)
            self.bridge.kube.delete_pod(meta["namespace"], meta["name"], meta["uid"],
                                        now=view is None or not view.ready)

    def _release(self, run: Run, why: str) -> None:
        log.info("run %s of %s ended (%s): deleting its pods", run.run_sluid, run.job_sluid, why)
        for node in run.nodes:
            self._delete_slot(run, node)
        self.state.runs.pop(run.run_sluid, None)

    def settle_runs(self) -> None:
        """Settle every gang with a run (a binding the API server failed is made again; no
        API call where no slot is free)."""
        for key in sorted({r.gang for r in self.state.runs.values()}):
            self._settle(key)

    def _settle(self, key: str) -> None:
        """Bind free slots of the gang's runs; report a run whose pods all ended."""
        pods = self._gang_pods(key)
        for run in [r for r in self.state.runs.values() if r.gang == key]:
            for uid, node in assignments(run, pods):
                if node not in self.state.nodes:
                    continue  # a node of the allocation that is no Kubernetes node
                meta = pods[uid]["metadata"]
                try:
                    if not self.bridge.claims.prepare(pods[uid], node):
                        continue  # its claim is not made yet: the pod's next event settles
                except ClaimError as exc:
                    self._say(key, exc.reason, exc.detail)
                    continue
                if self.bridge.kube.bind(meta["namespace"], meta["name"], uid, node):
                    run.slots[node] = uid
                    pods[uid].setdefault("spec", {})["nodeName"] = node
                    log.info("bound %s/%s to %s (run %s)", meta["namespace"], meta["name"],
                             node, run.run_sluid)
                    self.state.touch()
            ended = None if run.exit_reported else outcome(run, pods)
            if ended is not None:
                run.exit_reported = True
                code, detail = ended
                self.bridge.report("ReportJobExit", run, run.batch_node or run.nodes[0],
                                   {"exit_code": code, "signal": 0, "detail": detail})
                self.state.touch()

    # -- gangs waiting --------------------------------------------------------------------

    def check_waiting(self) -> None:
        """For gangs whose pods wait with no run: say why on the pods, or submit again when
        the Job controller re-created pods after the Sluice job ended. A gang with no pod at
        all is checked too: gone (its job cancelled) once its Job's controller will make no
        pod again (``_makes_pods_again``), whatever event was missed.

        Each check asks the views (two HTTP requests), so a gang is checked first
        ``CHECK_AFTER_S`` after it was seen waiting and then every ``CHECK_EVERY_S``, and one
        pass checks at most ``CHECKS_PER_PASS`` gangs (the oldest due first): a thousand
        pending pods must not stall the loop that binds the running ones."""
        now = time.monotonic()
        running = {r.gang for r in self.state.runs.values()}
        podless = {k for k in self.state.gangs if not self.members.get(k)} if self.listed \
            else set()  # before the first list of the pods, every gang looks podless
        due: list[tuple[float, str, dict[str, Any] | None]] = []
        for key, gang in self.gangs.items():
            pods = self._gang_pods(key)
            waiting = [p for p in pods.values() if live(p) and not terminal(p)
                       and not p.get("spec", {}).get("nodeName")]
            if key not in podless and (not waiting or gang.size == 0 or key in running):
                self._next_check.pop(key, None)
                continue
            when = self._next_check.setdefault(key, now + CHECK_AFTER_S)
            if when <= now:
                due.append((when, key, waiting[0] if waiting else None))
        for key in podless - self.gangs.keys():  # (a gang known from the state file only)
            when = self._next_check.setdefault(key, now + CHECK_AFTER_S)
            if when <= now:
                due.append((when, key, None))
        for _, key, first in sorted(due, key=lambda d: (d[0], d[1]))[:CHECKS_PER_PASS]:
            self._next_check[key] = now + CHECK_EVERY_S
            if first is None:  # no pod: gone, unless its Job's controller makes them again
                self._gone(key)
            else:
                self._check(key, self.gangs[key], first)

    def _check(self, key: str, gang: Gang, waiting: dict[str, Any]) -> None:
        """Ask the views about one waiting gang's job and act on its state. A job another
        submission holds the SLUID of (another client minted it in the same millisecond: the
        row's nonce is not the gang's, or the gang's submission was refused ``SluidInUse``)
        is not the gang's: the gang is submitted again under a new SLUID."""
        if key not in self.state.gangs:  # never submitted: its namespace had no user
            self._submit_again(key, gang, waiting)
            return
        job = self._sluice_job(self.state.gangs[key])
        if job is None:
            return
        state = job.get("state", "")
        if state in _ENDED_BY_SLUICE:
            self._ended_by_sluice(key, gang, job)
        elif state in _ENDED or _sluid_taken(job, gang_nonce(key)):
            if state not in _ENDED:
                log.warning("%s: SLUID %s is another submission's: submitting again", key,
                            self.state.gangs.get(key))
            self._submit_again(key, gang, waiting)
        elif state in _REFUSED:
            self._say(key, f"Sluice{state.title()}",
                      f"{job.get('reason', '')}: {job.get('detail', '')}")
        elif state == "PENDING":
            self._say(key, "SluicePending",
                      f"job {job.get('job_id')} pending: {job.get('reason', '')}")

    def _submit_again(self, key: str, gang: Gang, waiting: dict[str, Any]) -> None:
        try:
            self._submit(gang, waiting, self.annotations.get(key, {}))
        except (GangError, ClaimError) as exc:
            self._say(key, exc.reason, exc.detail)

    def _ended_by_sluice(self, key: str, gang: Gang, job: dict[str, Any]) -> None:
        """The gang's job was ended by Sluice (a cancel, its time limit, its deadline), and
        pods of the gang wait again (a Job's controller re-made those the end deleted, or the
        job was cancelled before it ran): they are not submitted again, or no cancel and no
        time limit would end a pods' job. A bare pod is deleted (as a running one is); a
        Job's pods say why they wait, until the Job is deleted (or replaced)."""
        state = str(job.get("state", ""))
        if gang.kind == "Pod":
            pods = self._gang_pods(key)
            self._forget(key)
            for uid, pod in pods.items():
                meta = pod["metadata"]
                log.info("pod %s/%s: its job %s ended %s: deleting it", meta["namespace"],
                         meta["name"], job.get("job_id"), state)
                self.bridge.kube.delete_pod(meta["namespace"], meta["name"], uid, now=True)
            return
        self._say(key, f"Sluice{state.title()}",
                  f"job {job.get('job_id')} ended {state} ({job.get('reason', '')}): Sluice "
                  "runs these pods no more; delete the Job")

    def _sluice_job(self, job_sluid: str) -> dict[str, Any] | None:
        """The views' row of ``job_sluid`` (a refusal by the intake: state ``DENIED``)."""
        if not job_sluid:
            return None
        if self._client is None:
            self._client = Client(self.bridge.settings)
        try:
            denied = [d for d in self._client.denials(job_sluid) if d["request"] == "SubmitJob"]
            if denied:
                return {"state": "DENIED", **denied[-1]}
            return dict(self._client.get(f"/v1/jobs/{job_sluid}")["job"])
        except ApiError:
            return None


def gang_nonce(key: str) -> int:
    """The nonce of a gang's submissions (``SubmitJob.nonce``): 63 bits of a digest of the
    gang's key (its Job's or bare pod's UID, unique in the cluster), so a restarted bridge
    that submits the gang again under the SLUID it kept is a redelivery, never a collision."""
    digest = hashlib.sha256(b"sluice-gang-nonce\0" + key.encode()).digest()
    return (int.from_bytes(digest[:8], "big") >> 1) or 1


def _sluid_taken(job: dict[str, Any], nonce: int) -> bool:
    """Whether the views' row under a gang's SLUID is another submission's: refused as
    ``SluidInUse``, or a job whose nonce is another (0: a views' row from before nonces)."""
    if job.get("state") == "REJECTED":
        return job.get("reason") == "SluidInUse"
    return job.get("nonce", 0) not in (0, nonce)
