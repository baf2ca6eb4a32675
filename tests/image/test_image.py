"""The built image, run for real: ``sluice`` as the image's non-root user, and a node daemon in
a container that joins a Sluice system on the host (broker, worker, views on loopback) and runs
a job as the job's owner, with only the capabilities the operator's node pods are given."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from agents.auth.node_keys import command_key_paths, env_key_paths
from agents.operator.objects import KEYS_DIR, NODE_CAPABILITIES, cluster_objects
from infra.image import APP_USER, HOME_DIR
from tests.e2e.harness import LocalSystem, free_port
from tests.image.conftest import Podman

pytestmark = [pytest.mark.kafka, pytest.mark.e2e, pytest.mark.slow]


def test_sluice_runs_as_the_images_non_root_user(podman: Podman) -> None:
    inspect = json.loads(podman("image", "inspect", podman.image).stdout)[0]["Config"]
    assert inspect["User"] == f"{APP_USER.uid}:{APP_USER.gid}"
    assert inspect["Entrypoint"] == ["/usr/bin/tini", "--", "/opt/sluice/bin/sluice"]
    assert inspect["Labels"]["org.opencontainers.image.version"] == podman.built.tag

    helped = podman.run(podman.image, "--help")
    assert helped.returncode == 0, helped.stderr
    assert helped.stdout.startswith("usage: sluice")
    assert "operator" in helped.stdout and "node" in helped.stdout

    # What the operator and the bridge import is there (the image prunes kubernetes.aio only).
    imports = podman.run("--entrypoint", "python3", podman.image, "-c",
                         "import agents.operator.loop, agents.bridge.daemon, cel_expr_python, "
                         "kubernetes.client, faust, rocksdict, confluent_kafka; print('ok')")
    assert imports.stdout == "ok\n", imports.stderr

    # Every shared object of the wheels finds its libraries in the image.
    linked = podman.run("--entrypoint", "sh", podman.image, "-c",
                        "find /opt/sluice -name '*.so*' -type f -exec ldd {} + | "
                        "grep 'not found' || echo none missing")
    assert linked.stdout == "none missing\n", linked.stdout + linked.stderr

    who = podman.run("--entrypoint", "sh", podman.image, "-c",
                     "id; echo home=$SLUICE_HOME; pwd; "
                     "echo tools=$(command -v pip pip3 gcc cc apt-get | tr '\\n' ' ')")
    assert who.returncode == 0, who.stderr
    assert who.stdout.startswith(f"uid={APP_USER.uid}(sluice) gid={APP_USER.gid}(sluice)")
    assert f"home={HOME_DIR}\n{HOME_DIR}\n" in who.stdout
    assert "tools=\n" in who.stdout, who.stdout  # no pip, compiler or apt inside


def test_the_archive_pushes_with_skopeo_and_pulls_back(podman: Podman, tmp_path: Path) -> None:
    """What a user does with the archive: ``skopeo copy`` to a registry (Debian's
    docker-registry, the CNCF distribution registry, on loopback), then a pull and a run."""
    if shutil.which("skopeo") is None or shutil.which("docker-registry") is None:
        pytest.skip("skopeo and docker-registry (Debian packages) are needed to push")
    port = free_port()
    (tmp_path / "config.yml").write_text(
        f"version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: {tmp_path / 'data'}\n"
        f"http:\n  addr: 127.0.0.1:{port}\n")
    with (tmp_path / "registry.log").open("wb") as log:
        registry = subprocess.Popen(["docker-registry", "serve", str(tmp_path / "config.yml")],
                                    stdout=log, stderr=subprocess.STDOUT)
    try:
        remote = f"127.0.0.1:{port}/sluice:{podman.built.tag}"
        for _ in range(50):
            pushed = subprocess.run(
                ["skopeo", "copy", "--quiet", "--dest-tls-verify=false",
                 f"oci-archive:{podman.built.archive}", f"docker://{remote}"],
                capture_output=True, text=True, timeout=300, check=False)
            if pushed.returncode == 0 or "connection refused" not in pushed.stderr:
                break
            time.sleep(0.2)
        assert pushed.returncode == 0, pushed.stderr
        podman("pull", "--quiet", "--tls-verify=false", remote)
        ran = podman.run(remote, "operator", "--help")
        assert ran.stdout.startswith("usage: sluice operator"), ran.stderr
        podman("rmi", remote)
    finally:
        registry.terminate()
        registry.wait(10)


def test_a_node_daemon_in_the_container_runs_a_job_of_the_host_system(
    podman: Podman, kafka_bootstrap: str, tmp_path: Path, unique: str
) -> None:
    prefix = "img-" + str(unique).rsplit("-", 1)[-1]  # topics of this run alone
    system = LocalSystem(kafka_bootstrap, tmp_path / "home", prefix)
    name = f"sluice-node-{os.getpid()}"
    try:
        system.start_core()
        # The node pod as the operator writes it (a SluiceCluster with keysSecret): its user,
        # capabilities, key files and key settings, its state directory. The keys are the
        # host system's; a node holds the public command key and the sealed-environment pair,
        # never the signing key.
        settings = system.settings
        cr = {"metadata": {"name": "c", "namespace": "ns", "uid": "u"},
              "spec": {"image": podman.image, "kafkaBootstrap": settings.bootstrap,
                       "keysSecret": "keys", "nodeSets": [{"name": "box", "cpus": 2}]}}
        pod = cluster_objects(cr, {})[-1]["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        context = container["securityContext"]
        keys = {"command-ed25519.pub": command_key_paths(settings)[1],
                "env-x25519.key": env_key_paths(settings)[0],
                "env-x25519.pub": env_key_paths(settings)[1]}
        (secret,) = [v["secret"] for v in pod["volumes"] if "secret" in v]
        assert sorted(item["key"] for item in secret["items"]) == sorted(keys)
        state = tmp_path / "node-state"  # the pod's emptyDir at SLUICE_HOME
        state.mkdir()
        work = tmp_path / "work"  # the job's working directory, its owner's
        work.mkdir()
        os.chown(work, APP_USER.uid, APP_USER.gid)
        pod_env = {e["name"]: e["value"] for e in container["env"]
                   if e["name"].startswith(("SLUICE_COMMAND", "SLUICE_ENV"))}
        env = {**settings.as_env(), "SLUICE_HOME": HOME_DIR, "SLUICE_COMMAND_KEY": "",
               "SLUICE_ALLOW_ROOT_JOBS": "false", **pod_env}
        podman.start(
            name, "--user", str(context["runAsUser"]), "--cap-drop", "ALL",
            *(arg for cap in context["capabilities"]["add"] for arg in ("--cap-add", cap)),
            "--security-opt", "no-new-privileges",
            *(arg for file, path in keys.items()
              for arg in ("-v", f"{path}:{KEYS_DIR}/{file}:ro")),
            "-v", f"{state}:{HOME_DIR}", "-v", f"{work}:{work}",
            *(arg for key, value in env.items() for arg in ("-e", f"{key}={value}")),
            podman.image, "node", "--name", "box01", "--cpus", "2", "--mem", "2048",
            "--heartbeat", "0.5", "--kill-wait", "3")
        assert context["capabilities"]["add"] == list(NODE_CAPABILITIES)
        assert container["volumeMounts"][0]["mountPath"] == HOME_DIR
        try:
            system.wait_nodes_idle(1, timeout_s=120)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n--- container\n{podman.logs(name)}") from None

        decision = system.client.submit({
            "user": APP_USER.name, "name": "in-a-box", "nodes_min": 1, "workdir": str(work),
            "command": ["sh", "-c", 'echo "uid=$(id -u) user=$(id -un) node=$SLURMD_NODENAME"'
                        '; grep ^Cap /proc/self/status']})
        assert decision.accepted, decision
        ended = system.client.wait_ended(decision.job_sluid, timeout_s=120)
        job = system.client.get(f"/v1/jobs/{decision.job_id}")["job"]
        assert ended.state == "COMPLETED", (ended, job, podman.logs(name), system.log_tail())
        assert job["runs"][-1]["exit_code"] == 0
        assert [n["name"] if isinstance(n, dict) else n for n in job["nodes"]] == ["box01"]

        output = _wait_for(work / f"sluice-{decision.job_id}.out")
        assert output.splitlines()[0] == f"uid={APP_USER.uid} user=sluice node=box01"
        # The job runs with no capability at all (the daemon's are not inherited).
        caps = dict(line.split(":\t") for line in output.splitlines()[1:])
        assert {caps[k].strip() for k in ("CapInh", "CapPrm", "CapEff")} == {"0" * 16}, output
        assert (work / f"sluice-{decision.job_id}.out").stat().st_uid == APP_USER.uid

        # A cancel signals the owner's processes (CAP_KILL): both ignore SIGTERM, so they
        # end by SIGKILL after --kill-wait, and the node is idle again once none is left.
        stubborn = system.client.submit({
            "user": APP_USER.name, "name": "stubborn", "nodes_min": 1, "workdir": str(work),
            "command": ["sh", "-c", "trap '' TERM; sleep 3170 & wait; sleep 3170"]})
        assert stubborn.accepted, stubborn
        system.wait(_sleepers, 60, "the stubborn job's sleep")
        system.client.send(stubborn.job_sluid, "CancelJob", {
            "job_sluid": stubborn.job_sluid, "user": APP_USER.name, "reason": ""})
        system.wait(lambda: not _sleepers(), 30, "the cancelled job's processes to die")
        system.wait_nodes_idle(1, timeout_s=30)
        assert system.client.get(f"/v1/jobs/{stubborn.job_id}")["job"]["state"] == "CANCELLED"
    finally:
        podman("stop", "--time", "10", name, check=False)
        system.stop()


def test_the_workers_key_copy_runs_as_the_operator_writes_it(
    podman: Podman, tmp_path: Path
) -> None:
    """The worker pod's init container (its command, user and capabilities as
    ``cluster_objects`` makes them: the image's user, none) copies the key as a Secret volume
    holds it with the pod's ``fsGroup`` (``root:10001``, mode 0440) to a directory of mode 0777,
    as an emptyDir is; the worker, user 10001, then loads it as its signing key."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    cr = {"metadata": {"name": "c", "namespace": "ns", "uid": "u"},
          "spec": {"image": podman.image, "kafkaBootstrap": "k:9092", "keysSecret": "keys"}}
    worker = cluster_objects(cr, {})[0]["spec"]["template"]["spec"]
    (init,) = worker["initContainers"]
    context = init["securityContext"]
    assert context["capabilities"] == {"drop": ["ALL"]} and context["runAsNonRoot"]
    group = worker["securityContext"]["fsGroup"]
    (volume,) = [v["secret"] for v in worker["volumes"] if "secret" in v]
    secret, keys = tmp_path / "secret", tmp_path / "keys"
    secret.mkdir()
    keys.mkdir()
    keys.chmod(0o777)
    key = secret / "command-ed25519.key"
    key.write_bytes(Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    os.chown(key, 0, group)  # what the kubelet makes of a Secret's file with fsGroup
    key.chmod(volume["defaultMode"])
    copied = podman.run(
        "--user", f"{context['runAsUser']}:{context['runAsGroup']}", "--read-only",
        "--cap-drop", "ALL",
        "--security-opt", "no-new-privileges", "-v", f"{secret}:/secret:ro",
        "-v", f"{keys}:{KEYS_DIR}", "--entrypoint", init["command"][0], podman.image,
        *init["command"][1:])
    assert copied.returncode == 0, copied.stderr
    env = {e["name"]: e["value"] for e in worker["containers"][0]["env"] if "value" in e}
    loaded = podman.run(
        "-v", f"{keys}:{KEYS_DIR}", "-e", f"SLUICE_COMMAND_KEY={env['SLUICE_COMMAND_KEY']}",
        "--entrypoint", "python3", podman.image, "-c",
        "from agents.auth.node_keys import load_command_private; "
        "from streams.settings import Settings; load_command_private(Settings.from_env()); "
        "print('signing key loaded')")
    assert loaded.stdout == "signing key loaded\n", loaded.stderr


def test_the_worker_and_projections_in_containers_schedule_a_host_nodes_job(
    podman: Podman, kafka_bootstrap: str, tmp_path: Path, unique: str
) -> None:
    """The worker and the projections as the operator's Deployments run them (their args and
    security contexts from ``cluster_objects``: user 10001, every capability dropped), the
    node daemon on the host: a job is scheduled, run and seen through the containers."""
    prefix = "imgw-" + str(unique).rsplit("-", 1)[-1]
    system = LocalSystem(kafka_bootstrap, tmp_path / "home", prefix)
    settings = system.settings
    cr = {"metadata": {"name": "c", "namespace": "ns", "uid": "u"},
          "spec": {"image": podman.image, "kafkaBootstrap": settings.bootstrap,
                   "keysSecret": "keys", "authSecret": "auth"}}
    objects = cluster_objects(cr, {})
    auth = tmp_path / "auth"  # the authSecret's file as the worker pod gets it (fsGroup)
    auth.mkdir()
    (auth / "worker-secret").write_bytes(os.urandom(32))
    os.chown(auth / "worker-secret", 0, APP_USER.gid)
    (auth / "worker-secret").chmod(0o440)
    keys = tmp_path / "keys"  # what the worker's init container leaves: its key, its own
    keys.mkdir()
    key = keys / "command-ed25519.key"
    shutil.copy(command_key_paths(settings)[0], key)
    os.chown(keys, APP_USER.uid, APP_USER.gid)
    os.chown(key, APP_USER.uid, APP_USER.gid)
    env = {**settings.as_env(), "SLUICE_HOME": HOME_DIR, "SLUICE_COMMAND_KEY": ""}
    names = []
    try:
        for deployment in objects[:2]:
            (container,) = deployment["spec"]["template"]["spec"]["containers"]
            context = container["securityContext"]
            assert context["capabilities"] == {"drop": ["ALL"]}
            assert context["readOnlyRootFilesystem"] is True
            # a read-only root (podman's --read-only mounts a tmpfs at /tmp, as the pod's
            # emptyDir), the state directory an emptyDir: a root-owned 0777 directory
            mounts = {m["mountPath"] for m in container["volumeMounts"]}
            assert {HOME_DIR, "/tmp"} <= mounts, mounts
            state = tmp_path / f"state-{container['args'][0]}"
            state.mkdir()
            state.chmod(0o777)
            role_env = {**env, **{e["name"]: e["value"] for e in container["env"]
                                  if e["name"] in ("SLUICE_COMMAND_KEY",
                                                   "SLUICE_WORKER_SECRET")}}
            auth_mount = [f"{auth}:{m['mountPath']}:ro" for m in container["volumeMounts"]
                          if m["name"] == "auth"]
            name = f"sluice-{container['args'][0]}-{os.getpid()}"
            podman.start(name, "--user", f"{context['runAsUser']}:{context['runAsGroup']}",
                         "--read-only", "-v", f"{state}:{HOME_DIR}",
                         "--cap-drop", "ALL",
                         "--security-opt", "no-new-privileges", "-v", f"{keys}:{KEYS_DIR}",
                         *(arg for mount in auth_mount for arg in ("-v", mount)),
                         *(arg for k, v in role_env.items() for arg in ("-e", f"{k}={v}")),
                         podman.image, *container["args"])
            names.append(name)
        system.start_node("n01")
        try:
            system.wait_nodes_idle(1, timeout_s=120)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n" + "\n".join(podman.logs(n) for n in names)) from None
        decision = system.client.submit({"user": "root", "nodes_min": 1, "command": ["true"],
                                         "workdir": str(tmp_path)})
        assert decision.accepted, decision
        ended = system.client.wait_ended(decision.job_sluid, timeout_s=120)
        assert ended.state == "COMPLETED", (ended, [podman.logs(n) for n in names])
        # the worker sealed with the authSecret's file: it made no secret of its own
        assert not (tmp_path / "state-worker" / "worker" / "inbox.key").exists()
        assert role_env.get("SLUICE_WORKER_SECRET") is None  # projections: none given
        top = podman("top", names[0], "user", "args").stdout
        assert "sluice worker" in top and top.splitlines()[1].split()[0] == "sluice", top
    finally:
        for name in names:
            podman("stop", "--time", "10", name, check=False)
        system.stop()


def _sleepers() -> list[int]:
    """The stubborn job's processes, seen from the host (the container shares its uids)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if (proc.name.isdigit() and proc.stat().st_uid == APP_USER.uid
                    and (proc / "cmdline").read_bytes() == b"sleep\x003170\x00"):
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def _wait_for(path: Path, timeout_s: float = 10) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.is_file() and path.read_text().strip():
            return path.read_text()
        time.sleep(0.2)
    raise AssertionError(f"{path} did not appear")
