"""The objects a SluiceCluster stands for (pure: a resource dict in, manifests out).

Every object carries an owner reference to the SluiceCluster (so the garbage collector
removes them with it) and the label ``sluice.dev/cluster``. Names: ``<cluster>-worker``,
``<cluster>-projections`` (Deployment and Service) and ``<cluster>-<nodeset>`` (a StatefulSet
of node daemons, one pod per Sluice node named after the pod).
"""

from __future__ import annotations

from typing import Any

__all__ = ["API_VERSION", "DEFAULT_IMAGE", "GROUP", "KIND", "NODE_CAPABILITIES", "PLURAL",
           "cluster_objects", "nodeset_name"]

GROUP = "sluice.dev"
API_VERSION = f"{GROUP}/v1alpha1"
KIND = "SluiceCluster"
PLURAL = "sluiceclusters"
_API_PORT = 6817

DEFAULT_IMAGE = "sluice:0.1.0"
"""The name ``python -m infra.image build`` gives the image (``sluice:<version>``); a cluster
pulls it from the registry the user pushed it to, named in ``spec.image``."""
IMAGE_UID = 10001  # the image's user, sluice (infra/image)
STATE_DIR = "/var/lib/sluice"  # SLUICE_HOME in the image

KEYS_DIR = "/etc/sluice/keys"
"""Where the pods find the keys of ``spec.keysSecret`` (docs/security.md, "Nodes"): the
Secret's ``command-ed25519.key`` for the worker, ``command-ed25519.pub``, ``env-x25519.key``
and ``env-x25519.pub`` for the node daemons."""

NODE_CAPABILITIES = ("SETUID", "SETGID", "KILL")
"""All a node daemon's container keeps (it runs as root, every other capability dropped, no
privilege escalation): SETUID and SETGID to become a job's owner (uid, gid, groups), KILL to
signal the processes of its runs, which are the owners'. tests/image runs jobs so; without
KILL even a job that ends by itself ends FAILED."""


def _owner(cr: dict[str, Any]) -> dict[str, Any]:
    meta = cr["metadata"]
    return {"apiVersion": API_VERSION, "kind": KIND, "name": meta["name"], "uid": meta["uid"],
            "controller": True, "blockOwnerDeletion": True}


def _meta(cr: dict[str, Any], name: str, role: str) -> dict[str, Any]:
    return {"name": name, "namespace": cr["metadata"]["namespace"],
            "labels": {"sluice.dev/cluster": cr["metadata"]["name"], "sluice.dev/role": role},
            "ownerReferences": [_owner(cr)]}


def _env(cr: dict[str, Any]) -> list[dict[str, Any]]:
    spec = cr.get("spec", {})
    name = cr["metadata"]["name"]
    return [{"name": "KAFKA_BOOTSTRAP", "value": spec.get("kafkaBootstrap", "")},
            {"name": "SLUICE_TOPIC_PREFIX", "value": spec.get("prefix") or name},
            {"name": "SLUICE_CLUSTER", "value": spec.get("prefix") or name},
            {"name": "SLUICE_API", "value": f"0.0.0.0:{_API_PORT}"}]


def _container(cr: dict[str, Any], args: list[str], resources: dict[str, Any] | None = None,
               extra_env: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": "sluice", "image": cr.get("spec", {}).get("image") or DEFAULT_IMAGE,
        "args": args, "env": _env(cr) + (extra_env or []),
        "securityContext": {"runAsNonRoot": True, "runAsUser": IMAGE_UID,
                            "runAsGroup": IMAGE_UID, "allowPrivilegeEscalation": False,
                            "readOnlyRootFilesystem": True,
                            "capabilities": {"drop": ["ALL"]}},
        "volumeMounts": [{"name": "state", "mountPath": STATE_DIR},
                         {"name": "tmp", "mountPath": "/tmp"}]}
    if resources:
        container["resources"] = resources
    return container


def _pod(containers: list[dict[str, Any]], volumes: list[dict[str, Any]]) -> dict[str, Any]:
    """A pod spec as every pod of the operator's is: no service-account token (none of them
    calls the Kubernetes API: the worker, the projections and the node daemons talk to Kafka
    and to each other only), the runtime's default seccomp profile (Pod Security
    ``restricted`` asks for it)."""
    return {"automountServiceAccountToken": False,
            "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
            "containers": containers, "volumes": volumes}


def _scratch() -> list[dict[str, Any]]:
    """The emptyDirs a read-only root file system leaves the worker and projections: their
    state (``SLUICE_HOME``) and /tmp."""
    return [{"name": "state", "emptyDir": {}}, {"name": "tmp", "emptyDir": {}}]


def _secret_volume(cr: dict[str, Any], name: str, items: tuple[str, ...],
                   mode: int = 0o400) -> dict[str, Any]:
    return {"name": name, "secret": {"secretName": cr["spec"]["keysSecret"], "defaultMode": mode,
                                     "items": [{"key": k, "path": k} for k in items]}}


def _worker_keys(cr: dict[str, Any], pod: dict[str, Any]) -> None:
    """The worker signs node commands with the Secret's key. It must be the worker user's own
    file of mode 0600, and a Secret's files are root's: with ``fsGroup`` the image's group, the
    kubelet makes the key file ``root:10001`` mode 0440, and an init container of the image's
    user (no capability, no root) copies it to an in-memory emptyDir as its own file, mode
    0600. The copy was made by a root init container with CHOWN, which Pod Security
    ``restricted`` refuses: the worker of a restricted namespace was never admitted."""
    key = "command-ed25519.key"
    pod["securityContext"]["fsGroup"] = IMAGE_UID
    pod["volumes"] += [_secret_volume(cr, "keys-secret", (key,), 0o440),
                       {"name": "keys", "emptyDir": {"medium": "Memory"}}]
    pod["initContainers"] = [{
        "name": "keys", "image": pod["containers"][0]["image"],
        "command": ["sh", "-c", f"cp /secret/{key} {KEYS_DIR}/{key} && chmod 600 {KEYS_DIR}/{key}"],
        "securityContext": {"runAsNonRoot": True, "runAsUser": IMAGE_UID,
                            "runAsGroup": IMAGE_UID, "allowPrivilegeEscalation": False,
                            "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]}},
        "volumeMounts": [{"name": "keys-secret", "mountPath": "/secret", "readOnly": True},
                         {"name": "keys", "mountPath": KEYS_DIR}]}]
    container = pod["containers"][0]
    container["env"].append({"name": "SLUICE_COMMAND_KEY", "value": f"{KEYS_DIR}/{key}"})
    container["volumeMounts"].append({"name": "keys", "mountPath": KEYS_DIR})


AUTH_DIR = "/etc/sluice/auth"


def _worker_secret(cr: dict[str, Any], pod: dict[str, Any]) -> None:
    """The worker's inbox secret from ``spec.authSecret`` (its key ``worker-secret``), a file
    as ``SLUICE_WORKER_SECRET`` names one: root's, mode 0440, group the image's (fsGroup), in
    the worker's pod alone. It was the variable's *value* in every pod (worker, projections,
    node daemons), where the worker reads the variable as a path: it found no such file and
    made a secret of its own in a file named by the secret (docs/security.md)."""
    pod["securityContext"]["fsGroup"] = IMAGE_UID
    pod["volumes"].append({"name": "auth", "secret": {
        "secretName": cr["spec"]["authSecret"], "defaultMode": 0o440,
        "items": [{"key": "worker-secret", "path": "worker-secret"}]}})
    container = pod["containers"][0]
    container["volumeMounts"].append({"name": "auth", "mountPath": AUTH_DIR, "readOnly": True})
    container["env"].append({"name": "SLUICE_WORKER_SECRET",
                             "value": f"{AUTH_DIR}/worker-secret"})


def _deployment(cr: dict[str, Any], role: str, args: list[str]) -> dict[str, Any]:
    name = f"{cr['metadata']['name']}-{role}"
    selector = {"sluice.dev/cluster": cr["metadata"]["name"], "sluice.dev/role": role}
    pod = _pod([_container(cr, args)], _scratch())
    if role == "worker" and cr.get("spec", {}).get("keysSecret"):
        _worker_keys(cr, pod)
    if role == "worker" and cr.get("spec", {}).get("authSecret"):
        _worker_secret(cr, pod)
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": _meta(cr, name, role),
            "spec": {"replicas": 1, "selector": {"matchLabels": selector},
                     "strategy": {"type": "Recreate"},  # one owner per shard, never two
                     "template": {"metadata": {"labels": selector}, "spec": pod}}}


def nodeset_name(cr: dict[str, Any], nodeset: dict[str, Any]) -> str:
    """The StatefulSet of one NodeSet."""
    return f"{cr['metadata']['name']}-{nodeset['name']}"


def _nodeset(cr: dict[str, Any], nodeset: dict[str, Any], replicas: int) -> dict[str, Any]:
    name = nodeset_name(cr, nodeset)
    selector = {"sluice.dev/cluster": cr["metadata"]["name"], "sluice.dev/nodeset": name}
    cpus, mem, gpus = (int(nodeset.get(k, d)) for k, d in (("cpus", 1), ("memMB", 1024),
                                                            ("gpus", 0)))
    resources: dict[str, Any] = {"requests": {"cpu": str(cpus), "memory": f"{mem}Mi"}}
    if gpus:  # an extended resource: its limit is its request
        resources["limits"] = {"nvidia.com/gpu": str(gpus)}
    pod_name = {"name": "SLUICE_NODE_NAME", "valueFrom": {"fieldRef": {
        "fieldPath": "metadata.name"}}}
    container = _container(cr, ["node", "--name", "$(SLUICE_NODE_NAME)", "--cpus", str(cpus),
                                "--mem", str(mem), "--gpus", str(gpus)],
                           resources, [pod_name])
    # Root, to run each job as its owner, with only what switching to it and signalling its
    # processes needs (docs/kubernetes.md, "The image"); its state on an emptyDir, which root
    # may write without DAC_OVERRIDE (the image's own STATE_DIR is the sluice user's). Its
    # root file system stays writable: jobs of several owners share the node's /tmp and
    # /var/tmp, which must be sticky (1777) as on any node, and an emptyDir is 0777 without
    # the sticky bit (one owner's job could delete another's files); the image's own files are
    # root's or sluice's, which a job (its owner) cannot write.
    container["securityContext"] = {"runAsUser": 0, "runAsNonRoot": False,
                                     "allowPrivilegeEscalation": False,
                                     "capabilities": {"drop": ["ALL"],
                                                      "add": list(NODE_CAPABILITIES)}}
    container["volumeMounts"] = [{"name": "state", "mountPath": STATE_DIR}]
    volumes: list[dict[str, Any]] = [{"name": "state", "emptyDir": {}}]
    if cr.get("spec", {}).get("keysSecret"):  # root's files, mode 0400: the daemon is root
        items = ("command-ed25519.pub", "env-x25519.key", "env-x25519.pub")
        volumes.append(_secret_volume(cr, "keys", items))
        container["volumeMounts"].append({"name": "keys", "mountPath": KEYS_DIR,
                                          "readOnly": True})
        container["env"] += [
            {"name": "SLUICE_COMMAND_PUBKEY", "value": f"{KEYS_DIR}/command-ed25519.pub"},
            {"name": "SLUICE_ENV_KEY", "value": f"{KEYS_DIR}/env-x25519.key"},
            {"name": "SLUICE_ENV_PUBKEY", "value": f"{KEYS_DIR}/env-x25519.pub"}]
    meta = _meta(cr, name, "nodeset")
    meta["labels"]["sluice.dev/nodeset"] = name
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": meta,
            "spec": {"replicas": replicas, "serviceName": name,
                     "podManagementPolicy": "Parallel",
                     "selector": {"matchLabels": selector},
                     "template": {"metadata": {"labels": selector},
                                  "spec": {**_pod([container], volumes),
                                           "terminationGracePeriodSeconds": 60}}}}


def _service(cr: dict[str, Any]) -> dict[str, Any]:
    name = f"{cr['metadata']['name']}-projections"
    return {"apiVersion": "v1", "kind": "Service", "metadata": _meta(cr, name, "projections"),
            "spec": {"selector": {"sluice.dev/cluster": cr["metadata"]["name"],
                                  "sluice.dev/role": "projections"},
                     "ports": [{"name": "api", "port": _API_PORT, "targetPort": _API_PORT}]}}


def cluster_objects(cr: dict[str, Any], replicas: dict[str, int]) -> list[dict[str, Any]]:
    """Worker, projections (Deployment + Service) and one StatefulSet per NodeSet, with the
    replicas the scaler chose (``replicas`` by NodeSet name; the spec's own count otherwise)."""
    objects = [_deployment(cr, "worker", ["worker"]),
               _deployment(cr, "projections", ["projections"]), _service(cr)]
    for nodeset in cr.get("spec", {}).get("nodeSets") or []:
        count = replicas.get(nodeset["name"], int(nodeset.get("replicas", 0)))
        objects.append(_nodeset(cr, nodeset, count))
    return objects
