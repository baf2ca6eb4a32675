"""Where Sluice's processes find the broker, their topics and their state, from one place.

When ``KAFKA_BOOTSTRAP`` is not set, the broker recorded by ``sluice up`` in
``$SLUICE_HOME/run/system.json`` is used, so ``sluice submit`` finds the system ``sluice up``
started.

Every process (worker, intake, projections, node daemons, the CLI) builds one :class:`Settings`
from the environment, so a test can give a whole system its own topics with one prefix.

| variable | default | meaning |
|---|---|---|
| ``KAFKA_BOOTSTRAP`` | ``127.0.0.1:9092`` | bootstrap servers |
| ``SLUICE_TOPIC_PREFIX`` | ``sluice`` | topic names are ``<prefix>.<topic>`` |
| ``SLUICE_CLUSTER`` | ``sluice`` | cluster name (consumer groups, jobcomp topics) |
| ``SLUICE_CLUSTER_ID`` | ``2`` | SLUID cluster id, 2..4094 |
| ``SLUICE_PARTITIONS`` | ``6`` | partitions of the SLUID-keyed topics |
| ``SLUICE_SHARDS`` | ``1`` | shard count = shard-inbox partitions |
| ``SLUICE_SHARD_MAP`` | ``""`` | which shard partitions and nodes belong to (``agents/routing``) |
| ``SLUICE_REPLICATION`` | ``0`` | replication factor of new topics; 0: ``min(3, brokers)`` |
| ``SLUICE_HOME`` | ``~/.local/state/sluice`` | state root: worker, daemons, logs, run files |
| ``SLUICE_API`` | ``127.0.0.1:6817`` | host:port of the projections' HTTP API |
| ``SLUICE_MAX_REQUEST_BYTES`` | ``1000000`` | largest request (key + value + headers) accepted |
| ``SLUICE_AUTH`` | ``none`` (``sluice up``: ``munge``, or ``jwt``) | credential kind |
| ``SLUICE_MUNGE_SOCKET`` | munge's default | munged's socket |
| ``SLUICE_JWT_KEY`` | ``""`` | HS256 key file (the worker's; a client that can read it signs) |
| ``SLUICE_JWT`` | ``""`` | a token (``sluice token``) a client sends instead |
| ``SLUICE_CONF`` | ``/etc/sluice/sluice.conf`` | the system-wide client configuration |
| ``SLUICE_SCHEMA_REGISTRY_URL`` | ``""`` | registry (Confluent REST API) of Confluent ids |
| ``SLUICE_SCHEMA_REGISTRY_WAIT_S`` | ``30`` | how long the intake retries a silent registry |
| ``SLUICE_COMMAND_KEY`` | ``keys/command-ed25519.key`` | the worker's node-command signing key |
| ``SLUICE_COMMAND_PUBKEY`` | ``keys/command-ed25519.pub`` | its public key (node daemons) |
| ``SLUICE_COMMAND_TTL`` | ``300`` | seconds a signed node command stays valid |
| ``SLUICE_ENV_KEY`` | ``keys/env-x25519.key`` | the nodes' key opening sealed ``--export`` values |
| ``SLUICE_ENV_PUBKEY`` | ``keys/env-x25519.pub`` | its public key (clients seal to it) |
| ``SLUICE_ALLOW_ROOT_JOBS`` | ``false`` | node daemons run jobs whose owner is uid 0 |
| ``SLUICE_MIN_JOB_AGE`` | ``300`` | seconds an ended job stays in the projections' memory |
| ``SLUICE_RELAY`` | ``1`` | submit through the views' ``POST /v1/requests``; ``0``: not |
| ``SLUICE_SLURMCTLD_PARAMETERS`` | ``""`` | the intake's ``rl_*`` rate limits (agents/rate_limit) |

(``keys/…``: under ``$SLUICE_HOME``; see ``agents/auth/node_keys.py``.)

The system-wide client configuration (like ``/etc/slurm/slurm.conf``; readable by all, no
secret) holds ``Key=Value`` lines: ``KafkaBootstrap``, ``Api``, ``AuthType`` (``auth/munge``,
``auth/jwt`` or ``auth/none``), ``MungeSocket``, ``TopicPrefix``, ``ClusterName``, ``ClusterId``,
``Shards``, ``ShardMap``, ``Partitions``, ``SchemaRegistry``, ``CommandPublicKey``,
``EnvPublicKey``, ``CommandTTL``, ``AllowRootJobs``, ``MinJobAge``, ``SlurmctldParameters``. The
environment wins over
it, and it over ``system.json``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from schemas.frozen_record import FrozenSlotsRecord

__all__ = [
    "ClientConfError",
    "Settings",
    "client_conf_lines",
    "read_client_conf",
    "system_file_path",
]

DEFAULT_CONF = "/etc/sluice/sluice.conf"
_CONF_KEYS = {
    "KafkaBootstrap": "KAFKA_BOOTSTRAP", "Api": "SLUICE_API", "AuthType": "SLUICE_AUTH",
    "MungeSocket": "SLUICE_MUNGE_SOCKET", "TopicPrefix": "SLUICE_TOPIC_PREFIX",
    "ClusterName": "SLUICE_CLUSTER", "ClusterId": "SLUICE_CLUSTER_ID",
    "Shards": "SLUICE_SHARDS", "ShardMap": "SLUICE_SHARD_MAP", "Partitions": "SLUICE_PARTITIONS",
    # Kafka security without secrets (streams/security.py reads them from the same file)
    "KafkaSecurity": "SLUICE_KAFKA_SECURITY", "KafkaMechanism": "SLUICE_KAFKA_MECHANISM",
    "KafkaCA": "SLUICE_KAFKA_CA",
    "SchemaRegistry": "SLUICE_SCHEMA_REGISTRY_URL",
    # node side of issue 13 (docs/security.md): public keys only, never a private one
    "CommandPublicKey": "SLUICE_COMMAND_PUBKEY", "EnvPublicKey": "SLUICE_ENV_PUBKEY",
    "CommandTTL": "SLUICE_COMMAND_TTL", "AllowRootJobs": "SLUICE_ALLOW_ROOT_JOBS",
    "MinJobAge": "SLUICE_MIN_JOB_AGE",
    # the intake's per-user rate limits (agents/rate_limit.py), Slurm's rl_* parameters
    "SlurmctldParameters": "SLUICE_SLURMCTLD_PARAMETERS",
}


class ClientConfError(ValueError):
    """The system-wide client configuration has a line that is not ``Key=Value`` of a known key."""


def read_client_conf(path: Path) -> dict[str, str]:
    """The environment variables a client configuration file stands for ({} when absent)."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ClientConfError(f"{path}: cannot be read: {exc}") from exc
    found: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()  # noqa: PLW2901 -- comments go
        if not line:
            continue
        key, sep, value = line.partition("=")
        if not sep or key.strip() not in _CONF_KEYS:
            raise ClientConfError(f"{path}:{number}: expected Key=Value with a key of "
                                  f"{sorted(_CONF_KEYS)}, not {line!r}")
        value = value.strip()
        if key.strip() == "AuthType":
            value = value.removeprefix("auth/")
            if value not in ("munge", "jwt", "none"):
                raise ClientConfError(f"{path}:{number}: AuthType is auth/munge, auth/jwt or "
                                      f"auth/none, not {value!r}")
        found[_CONF_KEYS[key.strip()]] = value
    return found


def client_conf_lines(settings: Settings) -> list[str]:
    """The ``Key=Value`` lines of a client configuration for ``settings``: the public ones
    only (broker, API, auth kind, names, sizes, Kafka security without its password), the
    inverse of :func:`read_client_conf`. ``sluice up`` and the node daemons (for their jobs)
    write it; the caller adds ``EnvPublicKey``."""
    lines = [
        f"KafkaBootstrap={settings.bootstrap}",
        f"Api={settings.api}",
        f"AuthType=auth/{settings.auth}",
        f"TopicPrefix={settings.prefix}",
        f"ClusterName={settings.cluster}",
        f"ClusterId={settings.cluster_id}",
        f"Shards={settings.shards}",
        f"Partitions={settings.partitions}",
    ]
    if settings.shard_map:
        lines.append(f"ShardMap={settings.shard_map}")
    if settings.munge_socket:
        lines.append(f"MungeSocket={settings.munge_socket}")
    for key, variable in (("KafkaSecurity", "SLUICE_KAFKA_SECURITY"),
                          ("KafkaMechanism", "SLUICE_KAFKA_MECHANISM"),
                          ("KafkaCA", "SLUICE_KAFKA_CA")):
        if os.environ.get(variable):
            lines.append(f"{key}={os.environ[variable]}")
    return lines


_set = object.__setattr__


def system_file_path(home: Path) -> Path:
    """Where ``sluice up`` records the broker it found or started, for later commands."""
    return home / "run" / "system.json"


def _system_file(home: Path) -> dict[str, str]:
    path = system_file_path(home)
    if not path.exists():
        return {}
    try:
        return dict(json.loads(path.read_text()))
    except (OSError, ValueError):
        return {}


class Settings(FrozenSlotsRecord):
    """Connection, naming and sizing for one Sluice system (a frozen record:
    schemas/frozen_record.py).

    ``command_key`` "" is ``$SLUICE_HOME/keys/command-ed25519.key`` (agents/auth/node_keys.py);
    ``home`` None (the default) is ``~/.local/state/sluice``; ``min_job_age_s`` is Slurm's
    ``MinJobAge``: how long after its end a job stays in the projections' memory
    (``projections.retention``; it stays in their store and in every answer)."""

    __slots__ = (
        "allow_root_jobs", "api", "auth", "bootstrap", "cluster", "cluster_id", "command_key",
        "command_pubkey", "command_ttl_s", "env_key", "env_pubkey", "home", "jwt", "jwt_key",
        "max_request_bytes", "min_job_age_s", "munge_socket", "partitions", "prefix", "relay",
        "replication", "schema_registry_url", "schema_registry_wait_s", "shard_map", "shards",
        "slurmctld_params",
    )
    __match_args__ = (
        "bootstrap", "prefix", "cluster", "cluster_id", "partitions", "shards", "shard_map",
        "replication", "home", "api", "max_request_bytes", "auth", "munge_socket", "jwt_key",
        "jwt", "schema_registry_url", "schema_registry_wait_s", "command_key", "command_pubkey",
        "command_ttl_s", "env_key", "env_pubkey", "allow_root_jobs", "min_job_age_s", "relay",
        "slurmctld_params",
    )
    bootstrap: str
    prefix: str
    cluster: str
    cluster_id: int
    partitions: int
    shards: int
    shard_map: str
    replication: int
    home: Path
    api: str
    max_request_bytes: int
    auth: str
    munge_socket: str
    jwt_key: str
    jwt: str
    schema_registry_url: str
    schema_registry_wait_s: float
    command_key: str
    command_pubkey: str
    command_ttl_s: int
    env_key: str
    env_pubkey: str
    allow_root_jobs: bool
    min_job_age_s: int
    relay: bool
    slurmctld_params: str

    def __init__(
        self,
        bootstrap: str = "127.0.0.1:9092",
        prefix: str = "sluice",
        cluster: str = "sluice",
        cluster_id: int = 2,
        partitions: int = 6,
        shards: int = 1,
        shard_map: str = "",
        replication: int = 0,
        home: Path | None = None,
        api: str = "127.0.0.1:6817",
        max_request_bytes: int = 1_000_000,
        auth: str = "none",
        munge_socket: str = "",
        jwt_key: str = "",
        jwt: str = "",
        schema_registry_url: str = "",
        schema_registry_wait_s: float = 30.0,
        command_key: str = "",
        command_pubkey: str = "",
        command_ttl_s: int = 300,
        env_key: str = "",
        env_pubkey: str = "",
        allow_root_jobs: bool = False,
        min_job_age_s: int = 300,
        relay: bool = True,
        slurmctld_params: str = "",
    ) -> None:
        _set(self, "bootstrap", bootstrap)
        _set(self, "prefix", prefix)
        _set(self, "cluster", cluster)
        _set(self, "cluster_id", cluster_id)
        _set(self, "partitions", partitions)
        _set(self, "shards", shards)
        _set(self, "shard_map", shard_map)
        _set(self, "replication", replication)
        _set(self, "home", Path.home() / ".local" / "state" / "sluice" if home is None else home)
        _set(self, "api", api)
        _set(self, "max_request_bytes", max_request_bytes)
        _set(self, "auth", auth)
        _set(self, "munge_socket", munge_socket)
        _set(self, "jwt_key", jwt_key)
        _set(self, "jwt", jwt)
        _set(self, "schema_registry_url", schema_registry_url)
        _set(self, "schema_registry_wait_s", schema_registry_wait_s)
        _set(self, "command_key", command_key)
        _set(self, "command_pubkey", command_pubkey)
        _set(self, "command_ttl_s", command_ttl_s)
        _set(self, "env_key", env_key)
        _set(self, "env_pubkey", env_pubkey)
        _set(self, "allow_root_jobs", allow_root_jobs)
        _set(self, "min_job_age_s", min_job_age_s)
        _set(self, "relay", relay)
        _set(self, "slurmctld_params", slurmctld_params)

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Settings:
        """Read the settings from ``env`` (default: the process environment)."""
        given = os.environ if env is None else env
        conf = read_client_conf(Path(given.get("SLUICE_CONF", DEFAULT_CONF)))
        source = {**conf, **given}
        base = cls()
        home = Path(source.get("SLUICE_HOME", str(base.home))).absolute()
        system = _system_file(home)
        return cls(
            bootstrap=source.get("KAFKA_BOOTSTRAP", system.get("bootstrap", base.bootstrap)),
            prefix=source.get("SLUICE_TOPIC_PREFIX", base.prefix),
            cluster=source.get("SLUICE_CLUSTER", base.cluster),
            cluster_id=int(source.get("SLUICE_CLUSTER_ID", base.cluster_id)),
            partitions=int(source.get("SLUICE_PARTITIONS", base.partitions)),
            shards=int(source.get("SLUICE_SHARDS", base.shards)),
            shard_map=source.get("SLUICE_SHARD_MAP", base.shard_map),
            replication=int(source.get("SLUICE_REPLICATION", base.replication)),
            home=home,
            api=source.get("SLUICE_API", base.api),
            max_request_bytes=int(
                source.get("SLUICE_MAX_REQUEST_BYTES", base.max_request_bytes)
            ),
            auth=source.get("SLUICE_AUTH", system.get("auth", base.auth)),
            munge_socket=source.get("SLUICE_MUNGE_SOCKET",
                                    system.get("munge_socket", base.munge_socket)),
            jwt_key=source.get("SLUICE_JWT_KEY", system.get("jwt_key", base.jwt_key)),
            jwt=source.get("SLUICE_JWT", base.jwt),
            schema_registry_url=source.get(
                "SLUICE_SCHEMA_REGISTRY_URL",
                system.get("schema_registry_url", base.schema_registry_url)),
            schema_registry_wait_s=float(
                source.get("SLUICE_SCHEMA_REGISTRY_WAIT_S", base.schema_registry_wait_s)),
            command_key=source.get("SLUICE_COMMAND_KEY", ""),
            command_pubkey=source.get("SLUICE_COMMAND_PUBKEY", ""),
            command_ttl_s=int(source.get("SLUICE_COMMAND_TTL", base.command_ttl_s)),
            env_key=source.get("SLUICE_ENV_KEY", ""),
            env_pubkey=source.get("SLUICE_ENV_PUBKEY", ""),
            allow_root_jobs=source.get("SLUICE_ALLOW_ROOT_JOBS", "").strip().lower()
            in ("1", "true", "yes", "on"),
            min_job_age_s=int(source.get("SLUICE_MIN_JOB_AGE", base.min_job_age_s)),
            relay=source.get("SLUICE_RELAY", "1").strip().lower() not in ("0", "false", "no",
                                                                         "off"),
            slurmctld_params=source.get("SLUICE_SLURMCTLD_PARAMETERS", ""),
        )

    def as_env(self) -> dict[str, str]:
        """The environment that reproduces these settings in a child process."""
        return {
            "KAFKA_BOOTSTRAP": self.bootstrap,
            "SLUICE_TOPIC_PREFIX": self.prefix,
            "SLUICE_CLUSTER": self.cluster,
            "SLUICE_CLUSTER_ID": str(self.cluster_id),
            "SLUICE_PARTITIONS": str(self.partitions),
            "SLUICE_SHARDS": str(self.shards),
            "SLUICE_SHARD_MAP": self.shard_map,
            "SLUICE_REPLICATION": str(self.replication),
            "SLUICE_HOME": str(self.home),
            "SLUICE_API": self.api,
            "SLUICE_MAX_REQUEST_BYTES": str(self.max_request_bytes),
            "SLUICE_AUTH": self.auth,
            "SLUICE_MUNGE_SOCKET": self.munge_socket,
            "SLUICE_JWT_KEY": self.jwt_key,
            "SLUICE_SCHEMA_REGISTRY_URL": self.schema_registry_url,
            "SLUICE_SCHEMA_REGISTRY_WAIT_S": str(self.schema_registry_wait_s),
            "SLUICE_COMMAND_KEY": self.command_key,
            "SLUICE_COMMAND_PUBKEY": self.command_pubkey,
            "SLUICE_COMMAND_TTL": str(self.command_ttl_s),
            "SLUICE_ENV_KEY": self.env_key,
            "SLUICE_ENV_PUBKEY": self.env_pubkey,
            "SLUICE_ALLOW_ROOT_JOBS": "true" if self.allow_root_jobs else "false",
            "SLUICE_MIN_JOB_AGE": str(self.min_job_age_s),
            "SLUICE_RELAY": "1" if self.relay else "0",
            "SLUICE_SLURMCTLD_PARAMETERS": self.slurmctld_params,
        }

    def with_(self, **changes: object) -> Settings:
        """A copy with some fields changed (``dataclasses.replace``'s work: an unknown name is
        a TypeError)."""
        return self.__class__(**{**dict(zip(self.__match_args__, self._values(), strict=True)),
                           **changes})

    def shard_name(self, index: int) -> str:
        """The name of shard ``index`` (its shard-inbox partition)."""
        return self.cluster if self.shards == 1 else f"{self.cluster}-{index}"

    def shard_names(self) -> list[str]:
        """Every shard's name, in partition order."""
        return [self.shard_name(i) for i in range(self.shards)]
