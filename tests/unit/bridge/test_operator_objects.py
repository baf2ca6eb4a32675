"""A SluiceCluster's objects and its scaler (pure parts of the operator)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from agents.operator.objects import DEFAULT_IMAGE, NODE_CAPABILITIES, cluster_objects
from agents.operator.scaler import desired_replicas

_REPO = Path(__file__).resolve().parents[3]

CR: dict[str, Any] = {
    "metadata": {"name": "demo", "namespace": "ml", "uid": "cr-uid"},
    "spec": {"image": "sluice:1", "kafkaBootstrap": "kafka:9092", "nodeSets": [
        {"name": "gpu", "replicas": 2, "cpus": 8, "memMB": 4096, "gpus": 8}]},
}


def test_objects_are_owned_and_named() -> None:
    objects = cluster_objects(CR, {"gpu": 5})
    names = [(o["kind"], o["metadata"]["name"]) for o in objects]
    assert names == [("Deployment", "demo-worker"), ("Deployment", "demo-projections"),
                     ("Service", "demo-projections"), ("StatefulSet", "demo-gpu")]
    for obj in objects:
        (owner,) = obj["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["uid"], owner["controller"]) == ("SluiceCluster",
                                                                      "cr-uid", True)
    sts = objects[-1]
    assert sts["spec"]["replicas"] == 5
    container = sts["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"] == {"requests": {"cpu": "8", "memory": "4096Mi"},
                                      "limits": {"nvidia.com/gpu": "8"}}
    assert objects[0]["spec"]["strategy"] == {"type": "Recreate"}


def test_spec_replicas_without_a_scaler_choice() -> None:
    assert cluster_objects(CR, {})[-1]["spec"]["replicas"] == 2


def test_scaler_follows_demand_within_bounds() -> None:
    nodeset = {"name": "gpu", "minReplicas": 1, "maxReplicas": 6, "partition": "gpu"}
    pending = [{"nodes_min": 4, "partition": "gpu"}, {"nodes_min": 9, "partition": "cpu"}]
    assert desired_replicas(nodeset, 1, pending, busy=1) == 5
    assert desired_replicas(nodeset, 1, pending * 3, busy=1) == 6
    assert desired_replicas(nodeset, 4, [], busy=0) == 1


def test_the_default_image_is_the_one_the_build_names() -> None:
    from infra.image import image_name

    assert image_name() == DEFAULT_IMAGE
    crd = yaml.safe_load((_REPO / "infra/kubernetes/manifests/sluicecluster-crd.yaml").read_text())
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert spec["properties"]["image"]["default"] == DEFAULT_IMAGE
    assert "image" not in spec["required"]
    bare = {**CR, "spec": {k: v for k, v in CR["spec"].items() if k != "image"}}
    images = {c["image"] for o in cluster_objects(bare, {}) if o["kind"] != "Service"
              for c in o["spec"]["template"]["spec"]["containers"]}
    assert images == {DEFAULT_IMAGE}


def test_node_daemons_run_as_root_with_setuid_setgid_kill_only_and_the_rest_as_the_user() -> None:
    objects = cluster_objects(CR, {})
    for deployment in objects[:2]:
        pod = deployment["spec"]["template"]["spec"]
        context = pod["containers"][0]["securityContext"]
        assert context == {"runAsNonRoot": True, "runAsUser": 10001, "runAsGroup": 10001,
                           "allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                           "capabilities": {"drop": ["ALL"]}}
        # a read-only root: the state and /tmp are emptyDirs
        assert pod["containers"][0]["volumeMounts"] == [
            {"name": "state", "mountPath": "/var/lib/sluice"}, {"name": "tmp", "mountPath": "/tmp"}]
        assert pod["volumes"] == [{"name": "state", "emptyDir": {}},
                                  {"name": "tmp", "emptyDir": {}}]
    pod = objects[-1]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["securityContext"] == {
        "runAsUser": 0, "runAsNonRoot": False, "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"], "add": ["SETUID", "SETGID", "KILL"]}}
    assert list(NODE_CAPABILITIES) == ["SETUID", "SETGID", "KILL"]
    assert container["volumeMounts"] == [{"name": "state", "mountPath": "/var/lib/sluice"}]
    assert pod["volumes"] == [{"name": "state", "emptyDir": {}}]


def test_no_pod_gets_a_service_account_token_and_every_pod_the_default_seccomp_profile() -> None:
    # None of them calls the Kubernetes API: a token in the pod would only hand the namespace's
    # default service account to whatever runs there (a job on a node pod, say).
    cr = {**CR, "spec": {**CR["spec"], "keysSecret": "demo-keys"}}
    for obj in cluster_objects(cr, {}):
        if obj["kind"] == "Service":
            continue
        pod = obj["spec"]["template"]["spec"]
        assert pod["automountServiceAccountToken"] is False, obj["metadata"]["name"]
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    init = cluster_objects(cr, {})[0]["spec"]["template"]["spec"]["initContainers"][0]
    assert init["securityContext"]["readOnlyRootFilesystem"] is True


def test_a_keys_secret_gives_the_worker_its_signing_key_and_the_nodes_theirs() -> None:
    cr = {**CR, "spec": {**CR["spec"], "keysSecret": "demo-keys"}}
    objects = cluster_objects(cr, {})
    worker = objects[0]["spec"]["template"]["spec"]
    (init,) = worker["initContainers"]
    # the image's user, no capability (Pod Security restricted): the key is its group's
    assert init["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert init["securityContext"]["runAsUser"] == 10001
    assert worker["securityContext"]["fsGroup"] == 10001
    (secret,) = [v["secret"] for v in worker["volumes"] if "secret" in v]
    assert secret == {
        "secretName": "demo-keys", "defaultMode": 0o440,
        "items": [{"key": "command-ed25519.key", "path": "command-ed25519.key"}]}
    env = {e["name"]: e.get("value") for e in worker["containers"][0]["env"]}
    assert env["SLUICE_COMMAND_KEY"] == "/etc/sluice/keys/command-ed25519.key"
    node = objects[-1]["spec"]["template"]["spec"]
    (secret,) = [v["secret"] for v in node["volumes"] if "secret" in v]
    assert [i["key"] for i in secret["items"]] == ["command-ed25519.pub", "env-x25519.key",
                                                   "env-x25519.pub"]  # never the signing key
    env = {e["name"]: e.get("value") for e in node["containers"][0]["env"]}
    assert env["SLUICE_ENV_KEY"] == "/etc/sluice/keys/env-x25519.key"
    assert "SLUICE_COMMAND_KEY" not in env
    assert "initContainers" not in objects[1]["spec"]["template"]["spec"]  # projections
    assert "initContainers" not in cluster_objects(CR, {})[0]["spec"]["template"]["spec"]


def test_every_pod_reads_the_resources_topic_prefix_and_cluster() -> None:
    # The pods were given SLUICE_PREFIX, which Sluice does not read: every SluiceCluster's
    # worker, projections and nodes used the default topics "sluice.*", so two clusters on one
    # Kafka shared their topics (red team).
    from streams.settings import Settings

    cr = {**CR, "spec": {**CR["spec"], "prefix": "ml1"}}
    for obj in cluster_objects(cr, {}):
        if obj["kind"] == "Service":
            continue
        env = {e["name"]: e["value"] for e in
               obj["spec"]["template"]["spec"]["containers"][0]["env"] if "value" in e}
        settings = Settings.from_env({**env, "SLUICE_CONF": "/nonexistent"})
        assert (settings.prefix, settings.cluster) == ("ml1", "ml1"), obj["metadata"]["name"]
    env = cluster_objects(CR, {})[0]["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {"name": "SLUICE_TOPIC_PREFIX", "value": "demo"} in env  # no prefix: the name


def test_the_operator_scales_only_a_resource_of_its_own_sluice() -> None:
    from agents.operator.loop import foreign
    from streams.settings import Settings

    own = Settings(bootstrap="kafka:9092", prefix="demo", api="views:6817")
    assert foreign(CR, own) == ""  # its bootstrap, its prefix (the name), no api
    assert foreign({**CR, "spec": {**CR["spec"], "api": "views:6817"}}, own) == ""
    for change in ({"api": "evil.example:80"}, {"kafkaBootstrap": "other:9092"},
                   {"prefix": "prod"}):
        assert foreign({**CR, "spec": {**CR["spec"], **change}}, own), change


def test_the_auth_secret_is_a_file_of_the_worker_alone() -> None:
    # SLUICE_WORKER_SECRET names a file (agents/auth/seal.py); the operator set it to the
    # secret's value, in every pod: the worker made a secret of its own in a file named by it.
    cr = {**CR, "spec": {**CR["spec"], "authSecret": "demo-auth"}}
    objects = cluster_objects(cr, {})
    worker = objects[0]["spec"]["template"]["spec"]
    env = {e["name"]: e for e in worker["containers"][0]["env"]}
    assert env["SLUICE_WORKER_SECRET"] == {"name": "SLUICE_WORKER_SECRET",
                                           "value": "/etc/sluice/auth/worker-secret"}
    (volume,) = [v for v in worker["volumes"] if v["name"] == "auth"]
    assert volume["secret"] == {"secretName": "demo-auth", "defaultMode": 0o440,
                                "items": [{"key": "worker-secret", "path": "worker-secret"}]}
    assert worker["securityContext"]["fsGroup"] == 10001
    for obj in objects[1:]:
        if obj["kind"] == "Service":
            continue
        pod = obj["spec"]["template"]["spec"]
        assert all(e["name"] != "SLUICE_WORKER_SECRET" for c in pod["containers"]
                   for e in c["env"]), obj["metadata"]["name"]
        assert all(v["name"] != "auth" for v in pod["volumes"]), obj["metadata"]["name"]
